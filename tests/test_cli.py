"""The command line, run as a user runs it (in this process: ``conftest.run_devlint``)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
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


def test_full_output_says_why_there_is_no_fix(project: Path) -> None:
    (project / "src" / "more.py").write_text(
        "import torch\nmodel = torch.nn.DataParallel(torch.nn.Linear(2, 2))\n"
        "x = torch.zeros(3).cuda(1)\n"
    )
    result = devlint("src/more.py", "--extend-select", "DEV010", cwd=project)
    helps = [line for line in result.stdout.splitlines() if line.startswith("help: ")]
    assert helps == [
        "help: No fix: moving to DDP changes how the program is launched.",  # never fixed
        "help: No automatic fix in this case (see Fix safety in `devlint rule DEV003`)",
    ]
    turned_off = devlint("src/bug.py", "--unfixable", "DEV003", cwd=project).stdout
    assert "help: No automatic fix: fixes of DEV003 are turned off (`fixable` / `unfixable`)" in (
        turned_off.splitlines()
    )


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


def test_missing_path_is_a_diagnostic_and_the_rest_is_checked(project: Path) -> None:
    """As ruff reports E902 for each missing path: DEV900 there, the others checked, exit 1."""
    result = devlint("nowhere/", "src", "gone.py", "--output-format", "concise", cwd=project)
    assert (result.returncode, result.stderr) == (1, "")
    assert result.stdout.splitlines() == [
        "gone.py:1:1: DEV900 cannot read file: No such file or directory",
        "nowhere:1:1: DEV900 cannot read file: No such file or directory",
        "src/bug.py:2:9: DEV003 [*] `.cuda()` without a CUDA availability check",
        "Found 3 errors (1 fixable with --fix).",
    ]
    alone = devlint("nowhere/", "--output-format", "concise", cwd=project)
    assert alone.returncode == 1
    assert alone.stdout.splitlines()[0].startswith("nowhere:1:1: DEV900 ")
    ignored = devlint("nowhere/", "--ignore", "DEV900", cwd=project)
    assert (ignored.returncode, ignored.stdout) == (0, "All checks passed!\n")
    assert ignored.stderr == "warning: Failed to read nowhere: No such file or directory\n"


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
    missing = devlint("nothing_like_it", "--output-format", "concise", cwd=project)
    assert (missing.returncode, missing.stderr) == (1, "")
    assert missing.stdout.startswith("nothing_like_it:1:1: DEV900 cannot read file: ")


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


# --- ruff's options --------------------------------------------------------------------


def concise(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return devlint("--no-cache", "--output-format", "concise", *args, cwd=cwd, stdin=stdin)


def reported(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The files named by concise diagnostic lines."""
    return sorted({line.split(":")[0] for line in result.stdout.splitlines() if ": DEV" in line})


def test_exclude_and_extend_exclude(project: Path) -> None:
    (project / "src" / "gen").mkdir()
    (project / "src" / "gen" / "g.py").write_text(BUG)
    (project / ".venv").mkdir()
    (project / ".venv" / "v.py").write_text(BUG)
    assert reported(concise(".", cwd=project)) == ["src/bug.py", "src/gen/g.py"]
    assert reported(concise(".", "--extend-exclude", "gen", cwd=project)) == ["src/bug.py"]
    # --exclude replaces the defaults: .venv is checked again
    replaced = concise(".", "--exclude", "gen,build", cwd=project)
    assert reported(replaced) == [".venv/v.py", "src/bug.py"]


def test_per_file_ignores_from_the_command_line(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.devlint]\nper-file-ignores = { "src/other.py" = ["DEV001"] }\n'
    )
    assert concise("src", "--per-file-ignores", "src/bug.py:DEV003", cwd=project).returncode == 0
    assert concise("src", "--extend-per-file-ignores", "bug.py:DEV0", cwd=project).returncode == 0
    bad = concise("src", "--per-file-ignores", "src/bug.py", cwd=project)
    assert bad.returncode == 2 and "expected GLOB:CODES" in bad.stderr
    unknown = concise("src", "--per-file-ignores", "src/bug.py:DEV999", cwd=project)
    assert unknown.returncode == 2 and "DEV999" in unknown.stderr


def test_force_exclude_applies_to_named_files_and_stdin(project: Path) -> None:
    (project / "build").mkdir()
    (project / "build" / "gen.py").write_text(BUG)
    assert reported(concise("build/gen.py", cwd=project)) == ["build/gen.py"]
    forced = concise("build/gen.py", "src/bug.py", "--force-exclude", cwd=project)
    assert reported(forced) == ["src/bug.py"]
    stdin = concise(
        "-", "--force-exclude", "--stdin-filename", "build/x.py", cwd=project, stdin=BUG
    )
    assert (stdin.returncode, stdin.stdout) == (0, "All checks passed!\n")
    fixed = concise(
        "-", "--fix", "--force-exclude", "--stdin-filename", "build/x.py", cwd=project, stdin=BUG
    )
    assert (fixed.returncode, fixed.stdout) == (0, BUG)  # passed through unchanged


def test_respect_gitignore(project: Path) -> None:
    (project / ".gitignore").write_text("bug.py\n")
    assert concise("src", cwd=project).returncode == 0
    assert reported(concise("src", "--no-respect-gitignore", cwd=project)) == ["src/bug.py"]
    (project / "pyproject.toml").write_text("[tool.devlint]\nrespect-gitignore = false\n")
    assert reported(concise("src", cwd=project)) == ["src/bug.py"]
    assert concise("src", "--respect-gitignore", cwd=project).returncode == 0


def test_output_file(project: Path) -> None:
    result = concise("src", "-o", "report.txt", cwd=project)
    assert (result.returncode, result.stdout) == (1, "")
    assert (project / "report.txt").read_text().startswith("src/bug.py:2:9: DEV003")
    as_json = devlint("src", "--output-format", "json", "--output-file", "r.json", cwd=project)
    assert as_json.returncode == 1
    assert json.loads((project / "r.json").read_text())[0]["code"] == "DEV003"


def test_fix_only_reports_nothing_left(project: Path) -> None:
    (project / "src" / "left.py").write_text("import torch\nm = torch.nn.DataParallel(x)\n")
    result = devlint("src", "--fix-only", "--extend-select", "DEV010", cwd=project)
    assert (result.returncode, result.stdout) == (0, "Fixed 1 error.\n")  # DEV010 is left
    assert ".to(device)" in (project / "src" / "bug.py").read_text()
    again = devlint("src", "--fix-only", "--exit-non-zero-on-fix", cwd=project)
    assert (again.returncode, again.stdout) == (0, "")


def test_show_files_and_show_settings(project: Path) -> None:
    listing = devlint("--show-files", "src", cwd=project)
    assert (listing.returncode, listing.stdout.splitlines()) == (0, ["src/bug.py", "src/clean.py"])
    (project / "pyproject.toml").write_text('[tool.devlint]\nignore = ["DEV001"]\n')
    shown = devlint("--show-settings", "--unfixable", "DEV003", "src", cwd=project)
    assert shown.returncode == 0
    lines = shown.stdout.splitlines()
    assert f'config-file = "{project / "pyproject.toml"}"' in lines
    assert 'unfixable = ["DEV003"]' in lines
    enabled = json.loads(next(line for line in lines if line.startswith("enabled = "))[10:])
    assert "DEV003" in enabled and "DEV001" not in enabled
    assert 'output-format = "full"' in lines


def test_ignore_noqa(project: Path) -> None:
    (project / "src" / "bug.py").write_text(BUG.rstrip("\n") + "  # noqa: DEV003\n")
    assert concise("src", cwd=project).returncode == 0
    assert reported(concise("src", "--ignore-noqa", cwd=project)) == ["src/bug.py"]


def test_fixable_and_unfixable(project: Path) -> None:
    marked = concise("src", "--unfixable", "DEV003", cwd=project)
    assert "DEV003 [*]" not in marked.stdout and "DEV003 `.cuda()`" in marked.stdout
    assert concise("src", "--fix", "--fixable", "DEV001", cwd=project).returncode == 1
    assert (project / "src" / "bug.py").read_text() == BUG  # DEV003 was not fixable
    (project / "pyproject.toml").write_text('[tool.devlint]\nunfixable = ["DEV003"]\n')
    assert concise("src", "--fix", cwd=project).returncode == 1
    assert (project / "src" / "bug.py").read_text() == BUG
    assert concise("src", "--fix", "--fixable", "DEV003", cwd=project).returncode == 1  # still
    (project / "pyproject.toml").write_text('[tool.devlint]\nfixable = ["DEV003"]\n')
    assert concise("src", "--fix", cwd=project).returncode == 0


def test_isolated_ignores_the_configuration(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.devlint]\nignore = ["DEV003"]\n')
    assert concise("src", cwd=project).returncode == 0
    assert reported(concise("src", "--isolated", cwd=project)) == ["src/bug.py"]
    both = concise("src", "--isolated", "--config", "pyproject.toml", cwd=project)
    assert (both.returncode, both.stderr) == (
        2, "error: --isolated cannot be combined with --config\n"
    )  # fmt: skip


def test_verbose_says_what_it_did(project: Path) -> None:
    result = concise("src", "-v", cwd=project)
    assert "info: settings: no configuration file (defaults)" in result.stderr.splitlines()
    assert "info: checked 2 files in " in result.stderr
    assert "(0 from the cache" in result.stderr
    warm = devlint("src", "-v", cwd=project)
    devlint("src", cwd=project)
    assert "(0 from the cache" in warm.stderr
    assert "(2 from the cache" in devlint("src", "-v", cwd=project).stderr


def test_output_format_from_the_configuration_and_the_environment(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.devlint]\noutput-format = "pylint"\n')
    assert devlint("src", cwd=project).stdout == (
        "src/bug.py:2: [DEV003] `.cuda()` without a CUDA availability check\n"
    )
    env = {**os.environ, "NO_COLOR": "1", "DEVLINT_OUTPUT_FORMAT": "grouped"}
    grouped = subprocess.run(
        [sys.executable, "-m", "devlint", "src"], cwd=project, env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert grouped.stdout.startswith("src/bug.py:\n  2:9 DEV003")


def test_watch_checks_again_when_a_file_changes(project: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "devlint", "--watch", "--output-format", "concise", "src"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert process.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(
        target=lambda: [lines.put(line) for line in iter(process.stdout.readline, "")], daemon=True
    ).start()

    def next_line() -> str:
        try:
            return lines.get(timeout=120)  # a deadline against a hang, not a speed test
        except queue.Empty:
            process.kill()
            raise AssertionError(process.communicate()[1]) from None

    try:
        assert [next_line(), next_line()] == [
            "src/bug.py:2:9: DEV003 [*] `.cuda()` without a CUDA availability check\n",
            "Found 1 error (1 fixable with --fix).\n",
        ]
        (project / "src" / "bug.py").write_text(CLEAN)
        assert next_line() == "All checks passed!\n"
        (project / "src" / "new.py").write_text(BUG)  # a new file in a watched directory
        assert next_line().startswith("src/new.py:2:9: DEV003")
    finally:
        process.terminate()
        process.wait(timeout=60)


def test_silent_short_aliases_and_extend_fixable(project: Path) -> None:
    silent = devlint("src", "-s", "-v", cwd=project)
    assert (silent.returncode, silent.stdout, silent.stderr) == (1, "", "")
    assert devlint("src", "-e", "-n", "-q", cwd=project).returncode == 0  # --exit-zero --no-cache
    fixed = concise(
        "src", "--fix", "--fixable", "DEV001", "--extend-fixable", "DEV003", cwd=project
    )
    assert fixed.returncode == 0 and ".to(device)" in (project / "src" / "bug.py").read_text()
