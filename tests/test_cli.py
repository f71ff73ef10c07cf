"""The command line, run as a user runs it (in this process: ``conftest.run_devlint``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_devlint

BUG = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"
CLEAN = "import torch\nmodel = torch.nn.Linear(2, 2)\n"


def devlint(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_devlint(*args, cwd=cwd, stdin=stdin)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "bug.py").write_text(BUG)
    (tmp_path / "src" / "clean.py").write_text(CLEAN)
    return tmp_path


def test_path_without_subcommand_reports_and_exits_1(project: Path) -> None:
    result = devlint("src/", cwd=project)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [  # the full format is the default, as in ruff
        "DEV003 [*] `.cuda()` without a CUDA availability check",
        " --> src/bug.py:2:9",
        "  |",
        "1 | import torch",
        "2 | model = torch.nn.Linear(2, 2).cuda()",
        "  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        "  |",
        "help: Use `.to(device)`",
        "",
        "Found 1 error (1 fixable with --fix).",
    ]
    concise = devlint("src/", "--output-format", "concise", cwd=project).stdout.splitlines()
    assert concise == [
        "src/bug.py:2:9: DEV003 [*] `.cuda()` without a CUDA availability check",
        "Found 1 error (1 fixable with --fix).",
    ]
    assert devlint("src/", "--output-format", "text", cwd=project).stdout.splitlines() == concise


def test_the_installed_script_runs(project: Path) -> None:
    """The real script, in its own process, says what the in-process runs say, stdin too."""
    script_path = str(Path(sys.executable).with_name("devlint"))  # the console script
    for command in ([script_path], [sys.executable, "-m", "devlint"]):
        script = subprocess.run(
            [*command, "check", "--no-cache", "src", "-"],
            cwd=project,
            input=BUG,
            capture_output=True,
            text=True,
            env={**os.environ, "NO_COLOR": "1"},
            timeout=120,
        )
        assert (script.returncode, script.stdout) == (2, ""), script.stderr
        assert script.stderr == "error: `-` (stdin) cannot be combined with other paths\n"
        fixed = subprocess.run(
            [*command, "--fix", "--no-cache", "-", "--stdin-filename", "bug.py"],
            cwd=project,
            input=BUG.encode(),
            capture_output=True,
            timeout=120,
        )
        assert fixed.returncode == 0, fixed.stderr
        assert (
            fixed.stdout
            == run_devlint(
                "--fix", "--no-cache", "-", "--stdin-filename", "bug.py", cwd=project, stdin=BUG
            ).stdout.encode()
        )
        assert b".to(device)" in fixed.stdout


def test_clean_file_exits_0(project: Path) -> None:
    result = devlint("check", "src/clean.py", cwd=project)
    assert (result.returncode, result.stdout.strip()) == (0, "All checks passed!")


def test_exit_zero_and_quiet(project: Path) -> None:
    result = devlint("src", "--exit-zero", "-q", "--output-format", "concise", cwd=project)
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        "src/bug.py:2:9: DEV003 [*] `.cuda()` without a CUDA availability check"
    ]


def test_unknown_select_code_is_one_line_exit_2(project: Path) -> None:
    result = devlint("src", "--select", "DEV999,FOO", cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: unknown rule code(s) in select: DEV999, FOO"
    ]
    assert "Traceback" not in result.stderr


def test_missing_path_is_exit_2(project: Path) -> None:
    result = devlint("nowhere/", cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip() == "error: path does not exist: nowhere"


def test_ignore_and_per_file_ignores_from_config(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.devlint]\nper-file-ignores = { "src/bug.py" = ["DEV003"] }\n'
    )
    assert devlint("src", cwd=project).returncode == 0
    (project / "pyproject.toml").write_text("[tool.devlint]\nignore = ['DEV00']\n")
    assert devlint("src", cwd=project).returncode == 0
    assert devlint("src", "--select", "DEV003", cwd=project).returncode == 1


def test_unknown_config_key_names_it(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.devlint]\nselct = ['DEV001']\n")
    result = devlint("src", cwd=project)
    assert result.returncode == 2
    assert "unknown key 'selct'" in result.stderr and "did you mean 'select'" in result.stderr


def test_stdin_with_filename(project: Path) -> None:
    (project / "pipe.py").write_text("# not what stdin holds\n")
    result = devlint("-", "--stdin-filename", "pipe.py", cwd=project, stdin=BUG)
    assert result.returncode == 1
    assert result.stdout.splitlines()[1:6] == [
        " --> pipe.py:2:9",
        "  |",
        "1 | import torch",  # the lines quoted are stdin's, not the file's of that name
        "2 | model = torch.nn.Linear(2, 2).cuda()",
        "  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    ]


def test_json_output_has_ruff_keys(project: Path) -> None:
    result = devlint("src", "--output-format", "json", cwd=project)
    [item] = json.loads(result.stdout)
    assert set(item) >= {
        "code",
        "message",
        "filename",
        "location",
        "end_location",
        "fix",
        "noqa_row",
        "url",
    }
    assert item["filename"] == str((project / "src" / "bug.py").resolve())
    assert item["location"] == {"row": 2, "column": 9}


def test_gitignored_files_are_skipped_but_explicit_files_checked(project: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / ".gitignore").write_text("bug.py\n")
    assert devlint("src", cwd=project).returncode == 0
    assert devlint("src/bug.py", cwd=project).returncode == 1


def test_default_excludes(project: Path) -> None:
    venv = project / "src" / ".venv" / "lib"
    venv.mkdir(parents=True)
    (venv / "vendored.py").write_text(BUG)
    result = devlint("src", "--output-format", "json", cwd=project)
    assert [Path(d["filename"]).name for d in json.loads(result.stdout)] == ["bug.py"]


def test_rules_and_rule_docs(project: Path) -> None:
    listing = devlint("rules", cwd=project).stdout
    for code in ("DEV001", "DEV002", "DEV003", "DEV004", "DEV005"):
        assert code in listing
    doc = devlint("rule", "DEV003", cwd=project)
    assert doc.returncode == 0
    for section in (
        "## What it does",
        "## Why is this bad?",
        "## Example",
        "## Use instead",
        "## Fix safety",
    ):
        assert section in doc.stdout
    assert devlint("rule", "DEV999", cwd=project).returncode == 2


def test_many_files_in_parallel_match_serial(project: Path) -> None:
    for i in range(40):
        (project / "src" / f"m{i}.py").write_text(BUG if i % 3 == 0 else CLEAN)
    serial = devlint("src", "-j", "1", "--output-format", "json", cwd=project)
    parallel = devlint("src", "-j", "2", "--output-format", "json", cwd=project)
    assert json.loads(serial.stdout) == json.loads(parallel.stdout)
    assert len(json.loads(serial.stdout)) == 15


def test_statistics(project: Path) -> None:
    result = devlint("src", "--statistics", cwd=project)
    assert result.stdout.splitlines()[0].split() == ["1", "DEV003", "[*]", "unguarded-cuda"]


@pytest.mark.parametrize(
    ("word", "command"), [("checkk", "check"), ("verfy", "verify"), ("ruls", "rules")]
)
def test_a_misspelled_command_gets_a_suggestion(project: Path, word: str, command: str) -> None:
    result = devlint(word, cwd=project)
    assert result.returncode == 2
    assert result.stderr == (
        f"error: `{word}` is neither a command nor a path; did you mean `{command}`?\n"
    )


def test_an_existing_path_named_like_a_command_is_checked(project: Path) -> None:
    (project / "checkk").mkdir()
    (project / "checkk" / "bug.py").write_text(BUG)
    assert devlint("checkk", "--output-format", "concise", cwd=project).returncode == 1
    missing = devlint("nothing_like_it", cwd=project)
    assert (missing.returncode, missing.stderr) == (
        2,
        "error: path does not exist: nothing_like_it\n",
    )


def test_statistics_as_json(project: Path) -> None:
    (project / "src" / "more.py").write_text(BUG + "x = torch.zeros(1).cuda()\n")
    result = devlint("src", "--statistics", "--output-format", "json", cwd=project)
    assert result.returncode == 1
    assert json.loads(result.stdout) == [
        {"code": "DEV003", "name": "unguarded-cuda", "count": 3, "fixable": True,
         "fixable_count": 3},
    ]  # fmt: skip
    refused = devlint("src", "--statistics", "--output-format", "sarif", cwd=project)
    assert refused.returncode == 2
    assert refused.stderr.startswith("error: --statistics cannot be written as sarif")


def test_json_urls_point_at_the_rule_pages(project: Path) -> None:
    [row] = json.loads(devlint("src", "--output-format", "json", cwd=project).stdout)
    assert row["url"] == "https://github.com/devlint/devlint/blob/main/docs/rules/unguarded-cuda.md"
