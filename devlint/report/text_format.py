"""Text output: one line per diagnostic, then a summary (or ``--statistics``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TextIO

import click

from devlint.diagnostics import Diagnostic
from devlint.report import ReportOptions, display_path


def render(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    if options.statistics:
        _statistics(diagnostics, out, options)
        return
    for diagnostic in diagnostics:
        out.write(_line(diagnostic, options) + "\n")
    if not options.quiet:
        out.write(_summary(diagnostics) + "\n")


def _line(diagnostic: Diagnostic, options: ReportOptions) -> str:
    def style(text: str, **kwargs: object) -> str:
        return click.style(text, **kwargs) if options.color else text  # type: ignore[arg-type]

    path = style(display_path(diagnostic.path, options.cwd), bold=True)
    where = f"{diagnostic.start.row}:{diagnostic.start.column}"
    if diagnostic.cell is not None:
        where = f"cell {diagnostic.cell}:{where}"
    code = style(diagnostic.code, fg="red", bold=True)
    fixable = style(" [*]", fg="cyan") if diagnostic.fix is not None and diagnostic.fix.applicability == "safe" else ""
    return f"{path}:{where}: {code}{fixable} {diagnostic.message}"


def _summary(diagnostics: Sequence[Diagnostic]) -> str:
    if not diagnostics:
        return "All checks passed!"
    count = len(diagnostics)
    noun = "error" if count == 1 else "errors"
    safe = sum(1 for d in diagnostics if d.fix is not None and d.fix.applicability == "safe")
    unsafe = sum(1 for d in diagnostics if d.fix is not None and d.fix.applicability == "unsafe")
    text = f"Found {count} {noun}"
    if safe:
        text += f" ({safe} fixable with the `--fix` option)"
    text += "."
    if unsafe:
        hidden = "fix" if unsafe == 1 else "fixes"
        text += f"\nNo fixes available ({unsafe} hidden {hidden} can be enabled with the `--unsafe-fixes` option)." if not safe else f"\n({unsafe} hidden {hidden} can be enabled with the `--unsafe-fixes` option)."
    return text


def _statistics(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    counts = Counter(d.code for d in diagnostics)
    fixable = {d.code for d in diagnostics if d.fix is not None}
    width = max((len(str(n)) for n in counts.values()), default=1)
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        rule = options.rules.get(code)
        name = rule.name if rule else ""
        mark = "[*]" if code in fixable else "   "
        out.write(f"{count:>{width}}\t{code}\t{mark} {name}\n")
    if not options.quiet:
        out.write(_summary(diagnostics) + "\n")
