"""The pre-commit hooks, run by the real pre-commit from a user's configuration, and the
README's snippet pasted verbatim, pointing at a repository that has the release tag."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devlint import __version__

ROOT = Path(__file__).resolve().parent.parent
# What pre-commit installs the hooks from: the package, its data and the hook manifest.
HOOK_REPOSITORY = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "devlint", "rules")
BUG = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(cwd.parent / "pre-commit-home")}
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env, timeout=900)


def hook_repository(target: Path) -> str:
    """This working tree's hooks as a git repository of one commit; returns its hash."""
    ignored = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in (*HOOK_REPOSITORY, "fixtures"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=ignored)
        else:
            shutil.copy2(source, target / name)
    for command in (("init", "-q"), ("add", "."), ("commit", "-q", "-m", "hooks")):
        identity = ("-c", "user.name=t", "-c", "user.email=t@example.invalid")
        subprocess.run(("git", *identity, *command), cwd=target, check=True)
    head = subprocess.run(("git", "rev-parse", "HEAD"), cwd=target, capture_output=True, text=True)
    return head.stdout.strip()


def test_hook_fails_on_device_bug_and_passes_on_clean_code(tmp_path: Path) -> None:
    pytest.importorskip("pre_commit")
    hooks = tmp_path / "devlint-hooks"
    hooks.mkdir()
    rev = hook_repository(hooks)
    repo = tmp_path / "user-project"
    repo.mkdir()
    run("git", "init", "-q", cwd=repo)
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hooks}\n    rev: {rev}\n    hooks:\n"
        "      - id: devlint\n      - id: devlint-fix\n        stages: [manual]\n"
    )
    (repo / "bug.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    (repo / "clean.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2)\n")
    (repo / "build").mkdir()
    (repo / "build" / "generated.py").write_text(BUG)  # excluded by default
    run("git", "add", ".", cwd=repo)

    def hook(name: str, hook: str = "devlint") -> subprocess.CompletedProcess[str]:
        # One environment serves every run: both hooks come from one repository and rev.
        stage = ("--hook-stage", "manual") if hook == "devlint-fix" else ()
        command = (sys.executable, "-m", "pre_commit", "run", hook, *stage, "--files", name)
        return run(*command, cwd=repo)

    failing = hook("bug.py")
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "DEV003" in failing.stdout

    passing = hook("clean.py")
    assert passing.returncode == 0, passing.stdout + passing.stderr
    # pre-commit names the file, and the excludes still apply (--force-exclude)
    excluded = hook("build/generated.py")
    assert excluded.returncode == 0, excluded.stdout + excluded.stderr

    # The fixing variant rewrites the file, fails the commit once so the user sees the
    # change, and passes on the fixed file.
    fixing = hook("bug.py", "devlint-fix")
    assert fixing.returncode == 1, fixing.stdout + fixing.stderr
    assert ".to(device)" in (repo / "bug.py").read_text()
    run("git", "add", ".", cwd=repo)
    assert hook("bug.py", "devlint-fix").returncode == 0


def readme_snippet() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"## pre-commit\n\n```yaml\n(.*?)```", readme, re.S)
    assert found, "README lost its pre-commit snippet"
    return found[1]


def readme_rev() -> str:
    rev = re.search(r"^\s*rev: (\S+)$", readme_snippet(), re.M)
    assert rev, "the README's snippet has no rev"
    return rev[1]


def test_readme_rev_is_the_version_tag() -> None:
    assert readme_rev() == f"v{__version__}"
    tags = subprocess.run(
        ["git", "tag", "--list", "v*"], cwd=ROOT, capture_output=True, text=True
    ).stdout.split()
    if readme_rev() not in tags:  # a checkout without tags (a shallow CI clone)
        pytest.skip(f"this checkout has no tag {readme_rev()} to compare")
    tagged = subprocess.run(
        ["git", "show", f"{readme_rev()}:devlint/__init__.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert f'__version__ = "{__version__}"' in tagged.stdout


def test_readme_snippet_runs_verbatim_with_pre_commit(tmp_path: Path) -> None:
    """The snippet as printed, `repo:` pointing at a repository of this tree that has the
    release tag (what `pip install`'s users get from GitHub), run by pre-commit."""
    pytest.importorskip("pre_commit")
    hooks = tmp_path / "devlint"
    hooks.mkdir()
    hook_repository(hooks)
    identity = ("-c", "user.name=t", "-c", "user.email=t@example.invalid")
    tag = ("git", *identity, "tag", "-a", readme_rev(), "-m", "release")
    subprocess.run(tag, cwd=hooks, check=True)
    snippet = readme_snippet()
    config = re.sub(r"(- repo: )\S+", lambda m: m[1] + str(hooks), snippet, count=1)
    assert config.count(str(hooks)) == 1 and config.replace(str(hooks), "X") == re.sub(
        r"(- repo: )\S+", r"\1X", snippet, count=1
    )  # nothing else changed
    repo = tmp_path / "user-project"
    repo.mkdir()
    run("git", "init", "-q", cwd=repo)
    (repo / ".pre-commit-config.yaml").write_text(config)
    (repo / "bug.py").write_text(BUG)
    (repo / "build").mkdir()
    (repo / "build" / "generated.py").write_text(BUG)
    run("git", "add", ".", cwd=repo)
    result = run(sys.executable, "-m", "pre_commit", "run", "--all-files", cwd=repo)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "bug.py:2:9" in result.stdout and "DEV003" in result.stdout
    assert "generated.py" not in result.stdout  # excluded, although pre-commit names it
