"""The console script's entry point: ``devlint --version`` and ``devlint --help`` answered
before click is imported, everything else handed to the click command (``devlint.cli``).

Importing click alone takes longer than the 100 ms ``--version`` and ``--help`` may take
(bench/startup.py). These two answers are fixed: the version is devlint's, and the
top-level help is click's own rendering, stored once in ``devlint/help_text.py`` (the
program's name filled in when it is shown) by ``scripts/write_help_text.py`` and kept
equal to click's by tests/test_startup.py.

Only the exact command lines ``devlint --version``, ``devlint --help`` and ``devlint -h``
take this path, and ``--help`` only when click would render at the stored width: click
wraps its help to the terminal (``min(columns, 80) - 2``, at least 50), so a terminal
narrower than 80 columns gets click's own rendering. Nothing else (configuration,
environment) changes the top-level help or the version line.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from devlint import __version__

_OPTIONS = ("--help", "-h", "--version")  # the top-level command's own


def main() -> None:
    args = sys.argv[1:]
    if args == ["--version"]:
        sys.stdout.write(f"devlint, version {__version__}\n")  # click.version_option's
        return
    if args in (["--help"], ["-h"]):
        from devlint.help_text import PROGRAMS, WIDTH, fill

        program = _program_name()
        if program in PROGRAMS and _help_width() == WIDTH:
            sys.stdout.write(fill(program) + "\n")
            return
    import gc

    enabled = gc.isenabled()
    gc.disable()  # importing makes many objects and no garbage: nothing to collect
    try:
        from devlint.cli import DefaultGroup
        from devlint.cli import main as click_main

        # `run`, `verify`, `server`, the rule commands, --help and --version are no check
        first = args[0] if args else ""
        checks = first not in DefaultGroup.lazy_commands and first not in _OPTIONS
        if checks:
            _import_for_a_check(args)
    finally:
        if enabled:
            gc.enable()
    try:
        click_main()
    except SystemExit as done:
        if not checks:
            raise  # the interpreter's own exit, atexit handlers and all (`run` runs a script)
        _exit_now(done)


def _import_for_a_check(args: list[str]) -> None:
    """Import what any check runs (the API, the analysis, the rules) with the cycle
    collector paused, and keep it out of every later collection (``gc.freeze``: it all
    lives until the exit). Paused, the collector does not rescan the growing heap of
    modules and classes over and over while they are imported. Not for ``check --help``,
    which imports none of it; a failure here is left to the check itself to report."""
    import gc

    if "--help" in args or "-h" in args:
        return
    try:
        import devlint.api  # noqa: F401
        from devlint.rule import all_rules

        all_rules()
    except Exception:  # reported by the check, as always  # pragma: no cover
        return
    gc.freeze()


def _exit_now(done: SystemExit) -> NoReturn:
    """End a check (``devlint PATH``, ``devlint check ...``) without the interpreter's
    teardown: freeing every module and object one by one takes longer than a one-file
    check itself (mypy's ``hard_exit`` does the same). The output is flushed first; a
    check registers no atexit handler and leaves no thread or worker running. Where the
    flush fails (a closed pipe) or the exit carries a message, the interpreter exits as
    usual and reports it as it always has."""
    if done.code is not None and not isinstance(done.code, int):
        raise done
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        raise done from None
    os._exit(done.code or 0)


def _program_name() -> str:
    """The name click shows in the usage line (``click.utils._detect_program_name``):
    the script's name, or ``python -m PACKAGE`` when run with ``-m``."""
    path = sys.argv[0]
    package = getattr(sys.modules["__main__"], "__package__", None)
    if package in (None, ""):  # a script (the console script), not `python -m`
        return os.path.basename(path)
    name = os.path.splitext(os.path.basename(path))[0]
    module = package if name == "__main__" else f"{package}.{name}"
    return f"python -m {module.lstrip('.')}"


def _help_width() -> int:
    """The width click's help formatter takes: ``shutil.get_terminal_size`` (``COLUMNS``,
    else stdout's terminal, else 80), at most 80, less 2, at least 50."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        stdout = sys.__stdout__
        try:
            columns = os.get_terminal_size(stdout.fileno()).columns if stdout else 80
        except (AttributeError, ValueError, OSError):  # closed, detached, not a terminal
            columns = 80
        columns = columns or 80
    return max(min(columns, 80) - 2, 50)
