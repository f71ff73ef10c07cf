"""The ``grouped`` output (ruff's): the diagnostics under the name of their file.

    src/train.py:
      12:5  DEV001 [*] `.numpy()` on a tensor that may be on cuda; call `.cpu()` first
      16:9  DEV003 [*] `.cuda()` without a CUDA availability check

    Found 2 errors (2 fixable with --fix).

Rows and columns are aligned within a file; in a notebook each row names its cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from typing import TextIO

from devlint.diagnostics import Diagnostic
from devlint.report import ReportOptions, display_path
from devlint.report.text_format import FIX_MARK, applies, style_for, trailer_lines


def render(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    style = style_for(options)
    for path, group in groupby(diagnostics, key=lambda d: display_path(d.path, options.cwd)):
        found = list(group)
        out.write(style(path, bold=True, underline=True) + ":\n")
        places = [_place(d) for d in found]
        width = max(len(place) for place in places)
        for d, place in zip(found, places, strict=True):
            mark = " " + style(FIX_MARK, fg="cyan") if applies(d, options) else ""
            code = style(d.code, fg="red", bold=True)
            out.write(f"  {place:<{width}} {code}{mark} {d.message}\n")
        out.write("\n")
    for line in trailer_lines(diagnostics, options):
        out.write(line + "\n")


def _place(d: Diagnostic) -> str:
    where = f"{d.start.row}:{d.start.column}"
    return where if d.cell is None else f"cell {d.cell}:{where}"
