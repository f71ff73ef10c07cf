"""GitHub Actions workflow commands: one ``::error`` annotation per diagnostic.

    ::error file=src/a.py,line=12,col=5,endLine=12,endColumn=10,title=DEV001::message

(the form docs/design.md §2 gives, with the end of the span as GitHub reads it).

Lines and columns of a notebook diagnostic count from its cell, not from the ``.ipynb``
file, so such an annotation is attached to the file as a whole and its message names the
cell (``cell 3:4:1: message``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from devlint.diagnostics import Diagnostic
from devlint.report import ReportOptions, display_path, position


def escape_data(text: str) -> str:
    """Escape a workflow-command message (the part after ``::``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow-command property value (``key=value`` before ``::``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(diagnostic: Diagnostic, options: ReportOptions) -> str:
    properties = {"file": display_path(diagnostic.path, options.cwd)}
    message = diagnostic.message
    if diagnostic.cell is None:
        properties.update(
            line=str(diagnostic.start.row),
            col=str(diagnostic.start.column),
            endLine=str(diagnostic.end.row),
            endColumn=str(diagnostic.end.column),
        )
    else:
        message = f"{position(diagnostic)}: {message}"
    properties["title"] = diagnostic.code
    joined = ",".join(f"{key}={escape_property(value)}" for key, value in properties.items())
    return f"::error {joined}::{escape_data(message)}"


def render(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    for diagnostic in diagnostics:
        out.write(annotation(diagnostic, options) + "\n")
