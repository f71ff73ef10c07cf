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
    shown = re.search(
        r"concise` prints one line per diagnostic\):\n\n```\n(.*?)\n```", readme, re.S
    )
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


def test_readme_states_no_count_of_evaluation_scripts_that_can_go_stale() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert not re.search(r"\d+\s+(hand-labelled|labelled|realistic)\b", readme)
    assert "eval/README.md" in readme  # where the sets and their sizes are


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


def _cli_table() -> list[list[str]]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### devlint and ruff", 1)[1].split("\n\n", 3)[2]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]  # no header
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows]


def _flags(cell: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", " ".join(re.findall(r"`([^`]*)`", cell))))


def test_the_ruff_table_covers_every_ruff_check_option() -> None:
    ruff = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--help"], capture_output=True, text=True
    )
    assert ruff.returncode == 0, ruff.stderr
    offered = set(re.findall(r"^\s+(?:-\w, )?(--[\w-]+)", ruff.stdout, re.M))
    listed = set().union(*(_flags(row[0]) for row in _cli_table()))
    assert offered - listed == set(), "ruff check options missing from the README's table"


def test_every_option_the_ruff_table_ticks_exists_in_devlint() -> None:
    devlint_help = subprocess.run(
        [sys.executable, "-m", "devlint", "check", "--help"], capture_output=True, text=True
    ).stdout
    ours = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", devlint_help))
    for ruff_cell, devlint_cell, _ in _cli_table():
        if devlint_cell.startswith("✅") or ruff_cell == "(none)":
            assert _flags(devlint_cell) <= ours, devlint_cell
        else:
            assert devlint_cell in ("not applicable", "not yet"), devlint_cell
