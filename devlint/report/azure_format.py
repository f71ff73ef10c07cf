"""The ``azure`` output (ruff's): Azure Pipelines logging commands, one per diagnostic.

    ##vso[task.logissue type=error;sourcepath=/abs/a.py;linenumber=12;columnnumber=5;code=DEV001;]message

A notebook diagnostic is attached to the file, and its message names the cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from devlint.diagnostics import Diagnostic
from devlint.report import ReportOptions, absolute_path, position


def _escape_data(text: str) -> str:
    """Azure's escaping of a logging command's message."""
    return text.replace("%", "%AZP25").replace("\r", "%0D").replace("\n", "%0A")


def _escape(text: str) -> str:
    """Azure's escaping of a logging command's property value."""
    return _escape_data(text).replace(";", "%3B").replace("]", "%5D")


def render(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    for d in diagnostics:
        fields = [f"sourcepath={_escape(absolute_path(d.path, options.cwd))}"]
        message = d.message
        if d.cell is None:
            fields += [f"linenumber={d.start.row}", f"columnnumber={d.start.column}"]
        else:
            message = f"{position(d)}: {message}"
        fields.append(f"code={d.code}")
        joined = ";".join(fields)
        out.write(f"##vso[task.logissue type=error;{joined};]{_escape_data(message)}\n")
