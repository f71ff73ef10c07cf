"""The README's promise: its first command prints exactly the output it shows."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_readme_example_output_is_what_devlint_prints() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"```\n(examples/train_cifar\.py:.*?Found \d+ errors?.*?)\n```", readme, re.S)
    assert shown, "README lost its example output"
    result = subprocess.run(
        [sys.executable, "-m", "devlint", "examples/"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stdout.strip() == shown[1]


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("```")[1].strip().splitlines()
    assert len(first_block) == 2, "the README must open with exactly two commands"
    assert first_block[0].startswith("pip install") and "devlint" in first_block[0]
    assert "pytest" in first_block[1]
    assert "README.md" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_github_actions_snippet_runs(tmp_path: Path) -> None:
    """Every devlint command of the README's workflow works on a project with a bug."""
    yaml = pytest.importorskip("yaml")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(name: devlint\n.*?)```", readme, re.S)
    assert block, "README lost its GitHub Actions workflow"
    steps = yaml.safe_load(block[1])["jobs"]["devlint"]["steps"]
    commands = [step["run"] for step in steps if step.get("run", "").startswith("devlint ")]
    assert len(commands) == 2
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    for command in commands:
        args = command.split(" > ")[0].split()[1:]
        result = subprocess.run(
            [sys.executable, "-m", "devlint", *args], cwd=tmp_path, capture_output=True, text=True
        )
        assert "Traceback" not in result.stderr
        if "github" in args:
            assert result.returncode == 1
            assert result.stdout.startswith(
                "::error file=src/train.py,line=2,col=5,endLine=2,endColumn=25,title=DEV003::"
            )
        else:
            assert result.returncode == 0 and json.loads(result.stdout)["version"] == "2.1.0"
