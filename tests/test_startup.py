"""Start-up stays lazy: what each command imports, checked in a fresh interpreter.

No timings here (bench/startup.py measures them); the imports are what makes them, and a
module-level import that creeps back in fails these tests instead of slowing every run.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from devlint.cli import DefaultGroup

# Run devlint's main in a fresh interpreter and print the top-level packages and the
# devlint modules it imported.
PROBE = """
import json, sys
from devlint.cli import main
try:
    main({args!r})
except SystemExit as done:
    code = done.code
print(json.dumps([code, sorted({{m.split(".")[0] for m in sys.modules}}),
                  sorted(m for m in sys.modules if m.startswith("devlint"))]))
"""
# The same through the console script's entry point (devlint.launch), run as the script
# runs it: sys.argv[0] is the script, __main__ a plain script.
# A check ends with os._exit (test_a_check_through_the_script_exits_at_once...): here it
# raises SystemExit instead, so that the probe can speak.
LAUNCH_PROBE = """
import gc, json, os, sys
def exit_now(status):
    raise SystemExit(status)
os._exit = exit_now
sys.argv = ["devlint", *{args!r}]
from devlint.launch import main
try:
    main()
    code = 0
except SystemExit as done:
    code = done.code
print(json.dumps([code, sorted({{m.split(".")[0] for m in sys.modules}}),
                  sorted(m for m in sys.modules if m.startswith("devlint")),
                  gc.isenabled(), gc.get_freeze_count()]), file=sys.stderr)
"""
HEAVY = {"libcst", "rich", "pygls", "lsprotocol", "torch", "pathspec", "packaging", "pygments"}
RECORDS = {"devlint.records", "devlint._record_methods"}  # devlint.cli's CheckFlags is a @record
BUG = "import torch\nx = torch.zeros(3).cuda()\n"


def imported(
    args: list[str], cwd: Path, probe: str = PROBE, env: dict[str, str] | None = None
) -> tuple[int, set[str], set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", probe.format(args=args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    output = done.stderr if probe == LAUNCH_PROBE else done.stdout
    code, packages, modules, *_ = json.loads(output.splitlines()[-1])
    return code, set(packages), set(modules)


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["check", "--help"]])
def test_version_and_help_import_click_and_no_more(args: list[str], tmp_path: Path) -> None:
    code, packages, modules = imported(args, tmp_path)
    assert code == 0
    unwanted = packages & (HEAVY | {"logging", "tempfile", "difflib"})
    assert not unwanted
    assert modules == {"devlint", "devlint.cli", "devlint.formats", *RECORDS}


def test_a_one_file_check_imports_what_checking_needs_only(tmp_path: Path) -> None:
    """libcst and the rules, not the language server, rich, notebooks, fixing, the
    pattern matcher (no excludes apply to a named file) or packaging (the project's torch
    requirement is read without it)."""
    (tmp_path / "pyproject.toml").write_text('[project]\ndependencies = ["torch>=2.4"]\n')
    (tmp_path / "train.py").write_text(BUG)
    code, packages, modules = imported(["check", "--no-cache", "train.py"], tmp_path)
    assert code == 1  # the bug is found
    assert "libcst" in packages
    unwanted = packages & (HEAVY - {"libcst"} | {"tempfile", "difflib", "hashlib", "logging"})
    assert not unwanted
    assert not {"devlint.notebooks", "devlint.server", "devlint.verify"} & modules
    assert "devlint.fixing" not in modules  # a check without --fix fixes nothing
    must = {"devlint.api", "devlint.engine", "devlint.analysis", "devlint.report.full_format"}
    assert must <= modules
    assert "devlint.rules.dev003_unguarded_cuda" in modules


def test_the_lazy_commands_help_is_their_own() -> None:
    """`devlint --help` lists the lazy commands from DefaultGroup's table, unimported."""
    for name, (module, help_text) in DefaultGroup.lazy_commands.items():
        command = getattr(importlib.import_module(module), name)
        assert inspect.cleandoc(command.help or "").split("\n\n")[0] == help_text, name


def _env(columns: str | None) -> dict[str, str]:
    """The environment with COLUMNS set (or unset: stdout, a pipe, then gives 80)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return env if columns is None else {**env, "COLUMNS": columns}


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["-h"]])
def test_the_scripts_version_and_help_import_no_click(args: list[str], tmp_path: Path) -> None:
    """The console script answers `--version` and `--help` before click is imported."""
    code, packages, modules = imported(args, tmp_path, LAUNCH_PROBE, _env(None))
    assert code == 0
    assert not packages & (HEAVY | {"click", "logging", "tempfile", "difflib", "shutil"})
    help_text = {"devlint.help_text"} if args != ["--version"] else set()
    assert modules == {"devlint", "devlint.launch", *help_text}


def test_the_scripts_check_help_imports_the_cli_only(tmp_path: Path) -> None:
    code, packages, modules = imported(["check", "--help"], tmp_path, LAUNCH_PROBE, _env(None))
    assert code == 0
    assert not packages & (HEAVY | {"logging", "tempfile", "difflib"})
    assert modules == {"devlint", "devlint.launch", "devlint.cli", "devlint.formats", *RECORDS}


def test_the_scripts_check_imports_with_the_collector_paused_then_frozen(
    tmp_path: Path,
) -> None:
    """A check through the script imports what it needs, as a check through click does,
    with the cycle collector paused; the collector runs again afterwards, and what was
    imported is frozen out of its reach."""
    (tmp_path / "pyproject.toml").write_text('[project]\ndependencies = ["torch>=2.4"]\n')
    (tmp_path / "train.py").write_text(BUG)
    args = ["check", "--no-cache", "train.py"]
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH_PROBE.format(args=args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    code, packages, modules, enabled, frozen = json.loads(done.stderr.splitlines()[-1])
    assert code == 1  # the bug is found
    _, click_packages, click_modules = imported(args, tmp_path)
    assert set(packages) - {"gc"} == click_packages - {"gc"}
    assert set(modules) == click_modules | {"devlint.launch"}
    assert enabled
    assert frozen > 10_000


def test_a_narrow_terminals_help_is_clicks(tmp_path: Path) -> None:
    """Under 80 columns click wraps the help narrower than the stored text: click answers."""
    code, packages, modules = imported(["--help"], tmp_path, LAUNCH_PROBE, _env("60"))
    assert code == 0
    assert "click" in packages
    assert "devlint.cli" in modules


def _script(args: list[str], entry: str, env: dict[str, str], prog: str = "") -> bytes:
    """``devlint ARGS`` in a fresh process through ``entry`` (``devlint.launch`` or
    ``devlint.cli``), as the console script runs it, or with ``python -m devlint``'s
    program name when ``prog`` says so."""
    call = f"main(prog_name={prog!r})" if prog else "main()"
    code = f"import sys; sys.argv = ['devlint', *{args!r}]; from {entry} import main; {call}"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=120, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow  # two whole processes per case
@pytest.mark.parametrize("columns", [None, "80", "200", "79", "60"])
@pytest.mark.parametrize("args", [["--version"], ["--help"], ["-h"]])
def test_the_scripts_answers_are_clicks_byte_for_byte(args: list[str], columns: str | None) -> None:
    env = _env(columns)
    assert _script(args, "devlint.launch", env) == _script(args, "devlint.cli", env)
    as_module = subprocess.run(
        [sys.executable, "-m", "devlint", *args], capture_output=True, timeout=120, env=env
    )
    assert as_module.returncode == 0, as_module.stderr
    assert as_module.stdout == _script(args, "devlint.cli", env, prog="python -m devlint")


def test_the_stored_help_is_clicks(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """devlint/help_text.py, its program name filled in, is click's `devlint --help` for
    each program name it answers for, at its width (run `python scripts/write_help_text.py`
    after changing the CLI)."""
    from devlint.cli import main, top_level_help
    from devlint.help_text import PROGRAMS, WIDTH, fill

    monkeypatch.setenv("COLUMNS", str(WIDTH + 2))  # the terminal click renders WIDTH for
    assert PROGRAMS == ("devlint", "python -m devlint")
    for program in PROGRAMS:
        text = fill(program)
        assert top_level_help(program, WIDTH) == text, "run python scripts/write_help_text.py"
        with pytest.raises(SystemExit) as done:
            main(["--help"], prog_name=program)
        assert done.value.code == 0
        assert capsys.readouterr().out == text + "\n", "run python scripts/write_help_text.py"


@pytest.mark.slow  # ten whole devlint processes over a 400-line file
def test_a_check_through_the_script_exits_at_once_with_all_its_output(tmp_path: Path) -> None:
    """devlint.launch ends a check with os._exit (no interpreter teardown): the exit code
    and every line written before it, stdout and stderr, are as from click's own exit."""
    many = "import torch\n" + "".join(f"x{i} = torch.zeros(3).cuda()\n" for i in range(400))
    (tmp_path / "many.py").write_text(many)
    (tmp_path / "clean.py").write_text("x = 1\n")
    for args in (
        ["check", "--no-cache", "many.py", "missing.py"],  # 1: stdout and an error line
        ["--no-cache", "--output-format", "concise", "many.py"],  # the default command
        ["check", "--no-cache", "--exit-zero", "many.py"],  # 0
        ["check", "--no-cache", "clean.py"],  # 0, a summary only
        ["check", "--no-cache", "--select", "NOPE", "clean.py"],  # 2: a usage error
    ):
        script = _run(["-m", "devlint", *args], tmp_path)
        in_process = _run(["-c", IN_PROCESS.format(args=args)], tmp_path)
        assert script.returncode == in_process.returncode, args
        assert (script.stdout, script.stderr) == (in_process.stdout, in_process.stderr), args
    assert script.returncode == 2


# devlint's click command, in a plain interpreter that exits as usual.
IN_PROCESS = """
import sys
sys.argv = ["devlint", *{args!r}]
from devlint.cli import main
main(prog_name="python -m devlint")
"""


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**_env(None), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, timeout=120, cwd=cwd, env=env
    )


@pytest.mark.parametrize(
    ("args", "hard"),
    [(["rules"], False), (["rule", "DEV001"], False), (["check", "--help"], True)],
)
def test_only_a_check_skips_the_interpreters_exit(
    args: list[str], hard: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`run`, `verify`, `server`, `rules`...: they may run other code (a user's script
    under `run`) whose atexit handlers must run: those exit as usual, through SystemExit."""
    from devlint import launch

    def exit_now(status: int) -> None:
        raise AssertionError(f"os._exit({status})")

    monkeypatch.setattr(launch.os, "_exit", exit_now)
    monkeypatch.setattr(sys, "argv", ["devlint", *args])
    monkeypatch.chdir(tmp_path)
    if hard:
        with pytest.raises(AssertionError, match=r"os\._exit\(0\)"):
            launch.main()
    else:
        with pytest.raises(SystemExit) as done:
            launch.main()
        assert done.value.code == 0
