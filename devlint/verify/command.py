"""``devlint verify``: run every rule's fixture programs on the devices present.

The main CLI registers this command with ``group.add_command(verify)``. Importing this
module never imports torch; running the command does (lazily, in ``devices.py``).
Exit codes: 0 every declared outcome happened, 1 a mismatch (timeouts and fixture problems
included), 2 a usage error (torch missing, no such fixture folder or rule).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from devlint.verify.devices import TORCH_MISSING, TorchMissing, parse_device_option
from devlint.verify.fixture_set import FixtureError
from devlint.verify.observed import (
    Record,
    default_record_path,
    load_record,
    merge,
    observe,
    write_record,
)
from devlint.verify.plan import Plan
from devlint.verify.report import render_rich, render_text, to_json
from devlint.verify.runner import RunResult, VerifyOptions, VerifyReport, run_verify


def _fail(message: str) -> NoReturn:
    click.echo(message, err=True)
    sys.exit(2)


@click.command("verify")
@click.option(
    "--device",
    "devices",
    multiple=True,
    metavar="cpu|cuda|mps|all",
    help="Devices to run on (repeatable or comma-separated; default: all). Absent ones are "
    "reported as not present; a missing cuda or mps adds its `(virtual)` column.",
)
@click.option(
    "--rule",
    "rules",
    multiple=True,
    metavar="CODE",
    help="Only these rules (repeatable or comma-separated, e.g. DEV001).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option(
    "--record",
    "record_to",
    is_flag=False,
    flag_value="-",
    default=None,
    metavar="[FILE]",
    help="Write what this run observed (device, torch, date, outcome per program) into the "
    "record FILE (default: the observed.json shipped with devlint), merged per column.",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Processes running at once (default: one per core).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="Time limit for each program run.",
)
@click.option(
    "--fixtures",
    "fixture_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Another fixture tree (default: the one installed with devlint).",
)
def verify(
    devices: tuple[str, ...],
    rules: tuple[str, ...],
    as_json: bool,
    record_to: str | None,
    jobs: int | None,
    timeout: float,
    fixture_dir: Path | None,
) -> None:
    """Run the rule fixtures on the devices present and check their declared outcomes."""
    try:
        chosen = parse_device_option(devices or ("all",))
    except ValueError as error:
        _fail(f"error: {error}")
    codes = [code for value in rules for code in value.split(",") if code.strip()]
    options = VerifyOptions(chosen, codes, jobs, timeout, fixture_dir)
    progress = _Progress(enabled=not as_json and sys.stderr.isatty())
    try:
        with progress:
            report = run_verify(options, on_result=progress.advance, on_plan=progress.start)
    except TorchMissing:
        _fail(TORCH_MISSING)
    except FixtureError as error:
        _fail(f"error: {error}")
    base = None
    if record_to is not None:
        target = default_record_path() if record_to == "-" else Path(record_to)
        base = merge(load_record(target), observe(report))
        write_record(base, target)
        click.echo(f"recorded {len(report.results)} outcomes in {target}", err=True)
    _print(report, as_json, base)
    sys.exit(report.exit_code)


def _print(report: VerifyReport, as_json: bool, record: Record | None) -> None:
    out = sys.stdout
    if as_json:
        out.write(json.dumps(to_json(report, record), indent=2) + "\n")
    elif out.isatty():
        render_rich(report, out, record)
    else:
        render_text(report, out, record)
    out.flush()


class _Progress:
    """A transient progress bar on stderr, only on a terminal."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import Progress

            self.bar = Progress(console=Console(file=sys.stderr), transient=True)
            self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)

    def start(self, plan: Plan) -> None:
        if self.bar is not None:
            self.task = self.bar.add_task("running fixtures", total=len(plan.runs))

    def advance(self, result: RunResult) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.advance(self.task)
