"""Shared test helpers: the command line run in this process, as a user runs the script."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from click.testing import CliRunner


@contextmanager
def _working_directory(path: Path) -> Iterator[None]:
    previous = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)


def run_devlint(
    *args: str, cwd: Path, stdin: str | bytes | None = None
) -> subprocess.CompletedProcess[str]:
    """``devlint ARGS`` in ``cwd``: exit code, stdout and stderr, as from the script.

    It runs in the test's own process (click's runner): starting a Python process per
    command cost most of the suite's time. An exception that escapes the command fails
    the test with its traceback, as it would print one from the script.
    ``test_cli.test_the_installed_script_runs`` runs the real script.
    """
    from devlint.cli import main  # after the test's monkeypatching, if any

    runner = CliRunner(env={"NO_COLOR": "1"})
    with _working_directory(cwd):
        result = runner.invoke(
            main, list(args), input=stdin, prog_name="devlint", catch_exceptions=False
        )
    return subprocess.CompletedProcess(
        ["devlint", *args], result.exit_code, result.stdout, result.stderr
    )
