"""The pre-commit hooks, run by the real pre-commit: the README's snippet pasted verbatim
(only `repo:` points at a repository made of this working tree, on a branch `main`, as a
clone without tags has it), then both hooks from a user's configuration.

Never skipped: pre-commit is in the `test` extra. One hook environment (pre-commit
installing devlint and its dependencies) serves every run of the test."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # whole programs, builds or tools: CI runs them (pytest -m slow)


ROOT = Path(__file__).resolve().parent.parent
# What pre-commit installs the hooks from: the package, its data and the hook manifest.
HOOK_REPOSITORY = (
    "pyproject.toml",
    "README.md",
    "LICENSE",
    ".pre-commit-hooks.yaml",
    "devlint",
    "rules",
    "fixtures",
)
BUG = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"
IDENTITY = ("-c", "user.name=t", "-c", "user.email=t@example.invalid")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(cwd.parent / "pre-commit-home")}
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env, timeout=900)


def hook_repository(target: Path) -> None:
    """This working tree's hooks as a git repository of one commit on the branch `main`
    and no tags: what a clone of devlint gives its user."""
    ignored = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in HOOK_REPOSITORY:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=ignored)
        else:
            shutil.copy2(source, target / name)
    for command in (("init", "-q"), ("add", "."), ("commit", "-q", "-m", "hooks")):
        subprocess.run(("git", *IDENTITY, *command), cwd=target, check=True)
    subprocess.run(("git", "branch", "-q", "-M", "main"), cwd=target, check=True)


def readme_snippets() -> list[str]:
    """The README's pre-commit configurations (```yaml blocks with `repos:`), in order."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.findall(r"```yaml\n((?:# .*\n)?repos:\n.*?)```", readme, re.S)
    assert found, "README lost its pre-commit snippet"
    return found


def test_readme_snippets_use_a_rev_every_clone_has() -> None:
    """No release tag reaches a clone: every snippet names the branch `main`."""
    revs = [re.findall(r"^\s*rev: (\S+)$", snippet, re.M) for snippet in readme_snippets()]
    assert revs == [["main"]] * len(revs)


def test_readme_snippet_runs_verbatim_then_both_hooks(tmp_path: Path) -> None:
    hooks = tmp_path / "devlint"
    hooks.mkdir()
    hook_repository(hooks)
    snippet = readme_snippets()[0]
    config = re.sub(r"(- repo: )\S+", lambda m: m[1] + str(hooks), snippet, count=1)
    assert config.count(str(hooks)) == 1 and config.replace(str(hooks), "X") == re.sub(
        r"(- repo: )\S+", r"\1X", snippet, count=1
    )  # nothing else changed
    repo = tmp_path / "user-project"
    repo.mkdir()
    run("git", "init", "-q", cwd=repo)
    (repo / ".pre-commit-config.yaml").write_text(config)
    (repo / "bug.py").write_text(BUG)
    (repo / "clean.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2)\n")
    (repo / "build").mkdir()
    (repo / "build" / "generated.py").write_text(BUG)  # excluded by default
    run("git", "add", ".", cwd=repo)
    pre_commit = (sys.executable, "-m", "pre_commit", "run")

    result = run(*pre_commit, "--all-files", cwd=repo)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "bug.py:2:9" in result.stdout and "DEV003" in result.stdout
    assert "generated.py" not in result.stdout  # excluded, although pre-commit names it
    assert "clean.py" not in result.stdout

    # Both hooks of the same repository and rev: the environment installed above serves.
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hooks}\n    rev: main\n    hooks:\n"
        "      - id: devlint\n      - id: devlint-fix\n        stages: [manual]\n"
    )
    run("git", "add", ".", cwd=repo)

    def hook(name: str, hook: str = "devlint") -> subprocess.CompletedProcess[str]:
        stage = ("--hook-stage", "manual") if hook == "devlint-fix" else ()
        return run(*pre_commit, hook, *stage, "--files", name, cwd=repo)

    assert hook("clean.py").returncode == 0
    excluded = hook("build/generated.py")  # pre-commit names it; --force-exclude skips it
    assert excluded.returncode == 0, excluded.stdout + excluded.stderr

    # The fixing variant rewrites the file, fails the commit once so the user sees the
    # change, and passes on the fixed file.
    fixing = hook("bug.py", "devlint-fix")
    assert fixing.returncode == 1, fixing.stdout + fixing.stderr
    assert ".to(device)" in (repo / "bug.py").read_text()
    run("git", "add", ".", cwd=repo)
    assert hook("bug.py", "devlint-fix").returncode == 0
    assert len(list((tmp_path / "pre-commit-home").glob("repo*"))) == 1  # one environment
