"""JSON output in ruff's schema."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TextIO

from devlint.diagnostics import Diagnostic, Location
from devlint.report import ReportOptions, absolute_path


def render(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    json.dump([to_dict(d) for d in diagnostics], out, indent=2)
    out.write("\n")


def _location(location: Location) -> dict[str, int]:
    return {"row": location.row, "column": location.column}


def to_dict(diagnostic: Diagnostic) -> dict[str, Any]:
    fix = None
    if diagnostic.fix is not None:
        fix = {
            "applicability": diagnostic.fix.applicability,
            "message": diagnostic.fix.message,
            "edits": [
                {
                    "content": edit.content,
                    "location": _location(edit.start),
                    "end_location": _location(edit.end),
                }
                for edit in diagnostic.fix.edits
            ],
        }
    return {
        "cell": diagnostic.cell,
        "code": diagnostic.code,
        "end_location": _location(diagnostic.end),
        "filename": absolute_path(diagnostic.path),
        "fix": fix,
        "location": _location(diagnostic.start),
        "message": diagnostic.message,
        "noqa_row": diagnostic.noqa_row,
        "url": diagnostic.url,
    }
