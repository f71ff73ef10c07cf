"""Text output for people: one line per diagnostic and a summary, or ``--statistics``.

    path/to/file.py:12:5: DEV001 [*] message
    nb.ipynb:cell 3:4:1: DEV003 message
    Found 2 errors (1 fixable with --fix).

``[*]`` marks a diagnostic that ``--fix`` repairs: one with a safe fix, or with any fix
under ``--unsafe-fixes``. Unsafe fixes that are not enabled are counted as hidden, as
ruff does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TextIO

import click

from devlint.diagnostics import Diagnostic
from devlint.report import ReportOptions, display_path, position

FIX_MARK = "[*]"


def render(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    if options.statistics:
        lines = statistics_lines(diagnostics, options)
    else:
        lines = [diagnostic_line(d, options) for d in diagnostics]
    lines.extend(trailer_lines(diagnostics, options))
    for line in lines:
        out.write(line + "\n")


def trailer_lines(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> list[str]:
    """What follows the diagnostics (none with ``--quiet``): the summary, ``--show-fixes``."""
    if options.quiet:
        return []
    lines = summary_lines(diagnostics, options)
    if options.show_fixes:
        if options.fixed is not None:
            lines.extend(applied_lines(options))
        else:
            lines.extend(fix_lines(diagnostics, options))
    return lines


def style_for(options: ReportOptions) -> Any:
    """``click.style`` when colour is on, else a function that returns the text as is."""

    def style(text: str, **styles: Any) -> str:
        return click.style(text, **styles) if options.color else text

    return style


def applies(diagnostic: Diagnostic, options: ReportOptions) -> bool:
    """Whether ``--fix`` (with ``--unsafe-fixes`` when enabled) repairs ``diagnostic``."""
    fix = diagnostic.fix
    return fix is not None and (fix.applicability == "safe" or options.unsafe_fixes)


def hidden(diagnostic: Diagnostic, options: ReportOptions) -> bool:
    """Whether ``diagnostic`` has a fix that only ``--unsafe-fixes`` would apply."""
    return diagnostic.fix is not None and not applies(diagnostic, options)


def diagnostic_line(diagnostic: Diagnostic, options: ReportOptions) -> str:
    style = style_for(options)
    colon = style(":", fg="cyan")
    path = style(display_path(diagnostic.path, options.cwd), bold=True)
    where = colon.join(position(diagnostic).split(":"))
    code = style(diagnostic.code, fg="red", bold=True)
    mark = " " + style(FIX_MARK, fg="cyan") if applies(diagnostic, options) else ""
    return f"{path}{colon}{where}{colon} {code}{mark} {diagnostic.message}"


def _plural(count: int, noun: str) -> str:
    return (
        f"{count} {noun}"
        if count == 1
        else f"{count} {noun}es"
        if noun.endswith("x")
        else f"{count} {noun}s"
    )


def summary_lines(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> list[str]:
    style = style_for(options)
    fixed = sum(sum(codes.values()) for codes in (options.fixed or {}).values())
    if not diagnostics and not fixed:
        return [style("All checks passed!", fg="green", bold=True)]
    fixable = sum(1 for d in diagnostics if applies(d, options))
    hidden_count = sum(1 for d in diagnostics if hidden(d, options))
    found = f"Found {_plural(len(diagnostics) + fixed, 'error')}"
    if fixed:
        found += f" ({fixed} fixed, {len(diagnostics)} remaining)"
    elif fixable:
        found += f" ({fixable} fixable with --fix)"
    lines = [found + "."]
    if hidden_count:
        note = (
            f"{_plural(hidden_count, 'hidden fix')} can be enabled with the `--unsafe-fixes` option"
        )
        lines.append(f"({note})." if fixable else f"No fixes available ({note}).")
    return lines


def fix_only_lines(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> list[str]:
    """``--fix-only``: how many fixes were applied (and are left to ``--unsafe-fixes``)."""
    fixed = sum(sum(codes.values()) for codes in (options.fixed or {}).values())
    hidden_count = sum(1 for d in diagnostics if hidden(d, options))
    lines = []
    if fixed:
        lines.append(f"Fixed {_plural(fixed, 'error')}.")
    if hidden_count:
        more = _plural(hidden_count, "fix")
        lines.append(f"({more} available with `--unsafe-fixes`).")
    if options.show_fixes:
        lines.extend(applied_lines(options))
    return lines


def fix_lines(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> list[str]:
    """The ``--show-fixes`` listing: which diagnostics the fixes would repair, and how."""
    style = style_for(options)
    lines: list[str] = []
    groups = (
        ("Fixable with --fix:", [d for d in diagnostics if applies(d, options)]),
        ("Fixable with --fix --unsafe-fixes:", [d for d in diagnostics if hidden(d, options)]),
    )
    for title, group in groups:
        if not group:
            continue
        lines.append("")
        lines.append(style(title, bold=True))
        for d in group:
            assert d.fix is not None
            where = f"{display_path(d.path, options.cwd)}:{position(d)}"
            lines.append(f"  - {where}: {style(d.code, fg='red', bold=True)} {d.fix.message}")
    return lines


def applied_lines(options: ReportOptions) -> list[str]:
    """``--fix --show-fixes``: the fixes applied, per file and rule."""
    fixed = {path: codes for path, codes in (options.fixed or {}).items() if codes}
    if not fixed:
        return ["", "No errors fixed."]
    total = sum(sum(codes.values()) for codes in fixed.values())
    lines = ["", f"Fixed {_plural(total, 'error')}:"]
    for path in sorted(fixed):
        lines.append(f"- {display_path(path, options.cwd)}:")
        for code, count in sorted(fixed[path].items()):
            info = options.rules.get(code)
            name = f" ({info.name})" if info is not None else ""
            lines.append(f"    {count} x {code}{name}")
    return lines


def statistics_lines(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> list[str]:
    """One row per code, most frequent first: count, code, fix mark, name.

    As in ruff, the mark is ``[*]`` when every diagnostic of the rule is fixable, ``[-]``
    when some are and ``[ ]`` when none is; the column is left out when nothing is fixable.
    """
    from devlint.report.statistics_format import statistics

    rows = statistics(diagnostics, options)
    if not rows:
        return []
    count_width = max(len(str(row.count)) for row in rows)
    code_width = max(len(row.code) for row in rows)
    any_fixable = any(row.fixable_count for row in rows)
    lines = []
    for row in rows:
        mark = ""
        if any_fixable:
            mark = f"{FIX_MARK} " if row.fixable else "[-] " if row.fixable_count else "[ ] "
        lines.append(f"{row.count:>{count_width}}\t{row.code:<{code_width}}\t{mark}{row.name}")
    return lines
