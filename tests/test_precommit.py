"""The pre-commit hook, run by the real pre-commit against this repository."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(cwd.parent / "pre-commit-home")}
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env, timeout=900)


def test_hook_fails_on_device_bug_and_passes_on_clean_code(tmp_path: Path) -> None:
    repo = tmp_path / "user-project"
    repo.mkdir()
    run("git", "init", "-q", cwd=repo)
    (repo / "bug.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    (repo / "clean.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2)\n")
    run("git", "add", ".", cwd=repo)

    pytest.importorskip("pre_commit")

    def try_hook(name: str, hook: str = "devlint") -> subprocess.CompletedProcess[str]:
        command = (sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), hook)
        return run(*command, "--files", name, cwd=repo)

    failing = try_hook("bug.py")
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "DEV003" in failing.stdout

    passing = try_hook("clean.py")
    assert passing.returncode == 0, passing.stdout + passing.stderr

    # The fixing variant rewrites the file, fails the commit once so the user sees the
    # change, and passes on the fixed file.
    fixing = try_hook("bug.py", "devlint-fix")
    assert fixing.returncode == 1, fixing.stdout + fixing.stderr
    assert ".to(device)" in (repo / "bug.py").read_text()
    run("git", "add", ".", cwd=repo)
    assert try_hook("bug.py", "devlint-fix").returncode == 0
