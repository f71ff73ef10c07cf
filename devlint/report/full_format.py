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

A diagnostic's chain of facts (``Diagnostic.related``) follows its code, one labelled line
per step, as rustc and ruff show secondary spans::

      ::: train.py:3:9
       |
     3 | model = Net().to(device)
       |         ---------------- moved to the device here
       |

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

from devlint.diagnostics import Diagnostic, Related
from devlint.report import ReportOptions, absolute_path, display_path, position
from devlint.report.text_format import FIX_MARK, applies, style_for, trailer_lines
from devlint.source import UnreadableSource, read_source, split_lines

CONTEXT = 2
TAB = "    "


def render(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    sources = _Sources(options)
    for d in diagnostics:
        for line in diagnostic_block(d, sources, options):
            out.write(line + "\n")
        out.write("\n")
    for line in trailer_lines(diagnostics, options):
        out.write(line + "\n")


def diagnostic_block(d: Diagnostic, sources: _Sources, options: ReportOptions) -> list[str]:
    """The header, the code around the diagnostic with carets, each step of its chain
    (``d.related``) on its own labelled line, and the fix title."""
    style = style_for(options)
    mark = " " + style(FIX_MARK, fg="cyan") if applies(d, options) else ""
    header = f"{style(d.code, fg='red', bold=True)}{mark} {style(d.message, bold=True)}"
    where = f"{display_path(d.path, options.cwd)}:{position(d)}"
    row = d.start.row
    source = sources.lines(d.path, d.cell)
    if source is None or not 1 <= row <= len(source):
        steps = [line for r in d.related for line in _step(r, sources, style, options, 0)]
        return [header, f" --> {where}", *steps, *_help(d, style, options)]
    first = max(1, row - CONTEXT)
    last = min(len(source), row + CONTEXT)
    while last > row and not source[last - 1].strip():  # no blank lines at the end
        last -= 1
    width = max(len(str(number)) for number in (last, *(r.start.row for r in d.related)))
    steps = [line for r in d.related for line in _step(r, sources, style, options, width)]
    gutter = " " * (width + 1) + style("|", fg="blue", bold=True)
    lines = [header, " " * width + style("--> ", fg="blue", bold=True) + where, gutter]
    for number in range(first, last + 1):
        text = source[number - 1].replace("\t", TAB).rstrip()
        numbered = style(f"{number:>{width}} |", fg="blue", bold=True)
        lines.append(f"{numbered} {text}".rstrip())
        if number == row:
            lines.append(f"{gutter} {_carets(d, source[row - 1], style)}")
    lines.append(gutter)
    return lines + steps + _help(d, style, options)


def _step(
    r: Related, sources: _Sources, style: Any, options: ReportOptions, width: int
) -> list[str]:
    """One step of a diagnostic's chain, as rustc shows a secondary span: its place, then
    its line with the span marked ``-`` and labelled with what happened there (the line
    numbers ``width`` wide; without the source, the place and the label only)."""
    where = f"{display_path(r.path, options.cwd)}:{position(r)}"
    source = sources.lines(r.path, r.cell)
    label = style(r.message, fg="blue", bold=True)
    if width == 0 or source is None or not 1 <= r.start.row <= len(source):
        return [f" ::: {where}: {label}"]
    line = source[r.start.row - 1]
    text = line.replace("\t", TAB).rstrip()
    gutter = " " * (width + 1) + style("|", fg="blue", bold=True)
    numbered = style(f"{r.start.row:>{width}} |", fg="blue", bold=True)
    marks = _carets(r, line, style, "-", "blue")
    return [
        " " * width + style("::: ", fg="blue", bold=True) + where,
        f"{numbered} {text}".rstrip(),
        f"{gutter} {marks} {label}",
        gutter,
    ]


def _carets(
    d: Diagnostic | Related, line: str, style: Any, mark: str = "^", color: str = "red"
) -> str:
    """Spaces up to the start column, then ``mark`` under the span (to its line's end)."""
    start = max(d.start.column - 1, 0)
    end = d.end.column - 1 if d.end.row == d.start.row else len(line.rstrip())
    before = line[:start].replace("\t", TAB)
    underlined = line[start : max(end, start + 1)].replace("\t", TAB)
    return " " * len(before) + style(mark * max(len(underlined), 1), fg=color, bold=True)


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

    def lines(self, path: str, cell: int | None) -> list[str] | None:
        key = (path, cell)
        if key not in self.cache:
            self.cache[key] = self._read(path, cell)
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
