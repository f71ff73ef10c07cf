"""The ``full`` output (the default, as in ruff): each diagnostic with its code in context.

    DEV003 [*] `.cuda()` without a CUDA availability check
      --> train.py:16:9
       |
    14 | loader = DataLoader(data, batch_size=64)
    15 | model = Net()
    16 | model = model.cuda()
       |         ^^^^^^^^^^^^
    17 | opt = SGD(model.parameters(), lr=0.1)
       |
    help: Replace `.cuda()` with `.to(device)`

(without a fix, the help line says why: ``RuleInfo.no_fix``), then the summary of the
``concise`` output. Two lines of context on each side; a span over several lines is
underlined to the end of its first line. The source is read from disk when it is printed
(after ``--fix``, the fixed file), from a notebook's own cell, or from
``ReportOptions.sources`` (stdin). A file that cannot be read is shown without code.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from devlint.diagnostics import Diagnostic
from devlint.report import ReportOptions, absolute_path, display_path, position
from devlint.report.text_format import FIX_MARK, applies, style_for, trailer_lines
from devlint.source import UnreadableSource, read_source, split_lines

CONTEXT = 2
TAB = "    "


def render(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    sources = _Sources(options)
    for d in diagnostics:
        for line in diagnostic_block(d, sources.lines(d), options):
            out.write(line + "\n")
        out.write("\n")
    for line in trailer_lines(diagnostics, options):
        out.write(line + "\n")


def diagnostic_block(
    d: Diagnostic, source: Sequence[str] | None, options: ReportOptions
) -> list[str]:
    """The header, the code around the diagnostic with carets, and the fix title."""
    style = style_for(options)
    mark = " " + style(FIX_MARK, fg="cyan") if applies(d, options) else ""
    header = f"{style(d.code, fg='red', bold=True)}{mark} {style(d.message, bold=True)}"
    where = f"{display_path(d.path, options.cwd)}:{position(d)}"
    row = d.start.row
    if source is None or not 1 <= row <= len(source):
        return [header, f" --> {where}", *_help(d, style, options)]
    first = max(1, row - CONTEXT)
    last = min(len(source), row + CONTEXT)
    while last > row and not source[last - 1].strip():  # no blank lines at the end
        last -= 1
    width = len(str(last))
    gutter = " " * (width + 1) + style("|", fg="blue", bold=True)
    lines = [header, " " * width + style("--> ", fg="blue", bold=True) + where, gutter]
    for number in range(first, last + 1):
        text = source[number - 1].replace("\t", TAB).rstrip()
        numbered = style(f"{number:>{width}} |", fg="blue", bold=True)
        lines.append(f"{numbered} {text}".rstrip())
        if number == row:
            lines.append(f"{gutter} {_carets(d, source[row - 1], style)}")
    lines.append(gutter)
    return lines + _help(d, style, options)


def _carets(d: Diagnostic, line: str, style: Any) -> str:
    """Spaces up to the start column, then ``^`` under the span (to its line's end)."""
    start = max(d.start.column - 1, 0)
    end = d.end.column - 1 if d.end.row == d.start.row else len(line.rstrip())
    before = line[:start].replace("\t", TAB)
    underlined = line[start : max(end, start + 1)].replace("\t", TAB)
    return " " * len(before) + style("^" * max(len(underlined), 1), fg="red", bold=True)


def _help(d: Diagnostic, style: Any, options: ReportOptions) -> list[str]:
    """The fix's title, or why there is none (when the rule is known)."""
    info = options.rules.get(d.code)
    text = d.fix.message if d.fix is not None else info.no_fix if info is not None else ""
    return [f"{style('help', fg='cyan', bold=True)}: {text}"] if text else []


class _Sources:
    """The lines of each file (or notebook cell) shown, read once."""

    def __init__(self, options: ReportOptions) -> None:
        self.options = options
        self.cache: dict[tuple[str, int | None], list[str] | None] = {}

    def lines(self, d: Diagnostic) -> list[str] | None:
        key = (d.path, d.cell)
        if key not in self.cache:
            self.cache[key] = self._read(d.path, d.cell)
        return self.cache[key]

    def _read(self, path: str, cell: int | None) -> list[str] | None:
        given = self.options.sources.get(path)
        if given is not None:
            return split_lines(given)
        file = Path(absolute_path(path, self.options.cwd))
        if cell is not None:
            return _cell_lines(file, cell)
        try:
            return split_lines(read_source(file).text)
        except (UnreadableSource, OSError):
            return None


def _cell_lines(path: Path, cell: int) -> list[str] | None:
    """The source lines of the ``cell``-th cell (1-based) of the notebook at ``path``."""
    try:
        cells = json.loads(path.read_bytes())["cells"]
        source = cells[cell - 1]["source"]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None
    return split_lines("".join(source) if isinstance(source, list) else str(source))
