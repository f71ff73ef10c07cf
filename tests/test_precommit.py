"""The pre-commit hooks, run by the real pre-commit from a user's configuration."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# What pre-commit installs the hooks from: the package, its data and the hook manifest.
HOOK_REPOSITORY = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "devlint", "rules")


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

    # The fixing variant rewrites the file, fails the commit once so the user sees the
    # change, and passes on the fixed file.
    fixing = hook("bug.py", "devlint-fix")
    assert fixing.returncode == 1, fixing.stdout + fixing.stderr
    assert ".to(device)" in (repo / "bug.py").read_text()
    run("git", "add", ".", cwd=repo)
    assert hook("bug.py", "devlint-fix").returncode == 0
