"""The README's promise: its first command prints exactly the output it shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

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
