"""``devlint explain PATH:LINE[:COL]``: the diagnostics at one place, each with its chain.

Loaded only when it runs (see ``cli.DefaultGroup.lazy_commands``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import click

from devlint.api import Overrides, lint_path, load_settings
from devlint.config import ConfigError, find_config
from devlint.diagnostics import Diagnostic, Location


@click.command("explain")
@click.argument("where", metavar="PATH:LINE[:COL]")
@click.option(
    "--select",
    metavar="CODES",
    multiple=True,
    help="Rule codes or prefixes to enable (replaces the configured set), as for `check`.",
)
def explain(where: str, select: tuple[str, ...]) -> None:
    """Show each diagnostic at PATH:LINE[:COL] with its chain of facts.

    The file is checked with its configuration (as `devlint check` would); every
    diagnostic whose span covers the line (and column, when given) is printed with the
    steps behind it, in order: where the device was chosen, where the value was moved to
    it, ... Exit 0 when something was explained, 1 when nothing is reported there.
    """
    path, at = _parse(where)
    if not path.is_file():
        _fail(f"no such file: {path}")
    try:
        settings = load_settings(find_config(path.resolve().parent), Overrides(select=select))
    except ConfigError as error:
        _fail(str(error))
    found = lint_path(path, str(path), settings.options_for(path)).diagnostics
    here = [d for d in found if _covers(d, at)]
    if not here:
        _fail(f"nothing is reported at {where}")
    click.echo("\n\n".join(describe(d) for d in here))


def describe(d: Diagnostic) -> str:
    """A diagnostic and its chain, in words: the message, then each step with its place."""
    lines = [f"{_place(d.path, d.start, d.cell)}: {d.code} {d.message}"]
    if not d.related:
        lines.append("  no chain of facts is known for this diagnostic")
    for number, step in enumerate(d.related, start=1):
        lines.append(f"  {number}. {_place(step.path, step.start, step.cell)}: {step.message}")
    return "\n".join(lines)


def _place(path: str, start: Location, cell: int | None) -> str:
    cell_part = "" if cell is None else f"cell {cell}:"
    return f"{path}:{cell_part}{start.row}:{start.column}"


def _parse(where: str) -> tuple[Path, Sequence[int]]:
    """``train.py:12:5`` -> the path and (12, 5); ``train.py:12`` -> (12,)."""
    parts = where.rsplit(":", 2)
    numbers: list[int] = []
    while len(parts) > 1 and parts[-1].isdigit() and len(numbers) < 2:
        numbers.insert(0, int(parts.pop()))
    if not numbers or not parts[0]:
        raise click.BadParameter(f"expected PATH:LINE[:COL], got {where!r}")
    return Path(":".join(parts)), numbers


def _covers(d: Diagnostic, at: Sequence[int]) -> bool:
    """Whether the diagnostic's span covers the line (and column, when given)."""
    if len(at) == 1:
        return d.start.row <= at[0] <= d.end.row
    return (d.start.row, d.start.column) <= (at[0], at[1]) <= (d.end.row, d.end.column)


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)
