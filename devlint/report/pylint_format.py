"""The ``pylint`` output (ruff's): ``path:row: [CODE] message``, one line each, no summary.

A notebook diagnostic names its cell: ``nb.ipynb:cell 3:4: [DEV003] message``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from devlint.diagnostics import Diagnostic
from devlint.report import ReportOptions, display_path


def render(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    for d in diagnostics:
        row = str(d.start.row) if d.cell is None else f"cell {d.cell}:{d.start.row}"
        out.write(f"{display_path(d.path, options.cwd)}:{row}: [{d.code}] {d.message}\n")
