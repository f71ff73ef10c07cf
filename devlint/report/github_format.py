"""GitHub Actions workflow commands: one ``::error`` annotation per diagnostic."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from devlint.diagnostics import Diagnostic
from devlint.report import ReportOptions, display_path


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    for d in diagnostics:
        properties = {
            "title": f"devlint ({d.code})",
            "file": display_path(d.path, options.cwd),
            "line": str(d.start.row),
            "col": str(d.start.column),
            "endLine": str(d.end.row),
            "endColumn": str(d.end.column),
        }
        joined = ",".join(f"{key}={_escape_property(value)}" for key, value in properties.items())
        out.write(f"::error {joined}::{_escape_data(f'{d.code} {d.message}')}\n")
