"""JSON output in ruff's schema: a list of diagnostic objects (``[]`` when none).

Each object also has ``related``: the chain of facts behind the diagnostic, in order
(``[]`` when none is known), each step a location and its message."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from devlint.diagnostics import Diagnostic, Fix, Location, Related
from devlint.report import ReportOptions, absolute_path


def render(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    json.dump([to_dict(d, options.cwd) for d in diagnostics], out, indent=2)
    out.write("\n")


def _location(location: Location) -> dict[str, int]:
    return {"row": location.row, "column": location.column}


def _fix(fix: Fix | None) -> dict[str, Any] | None:
    if fix is None:
        return None
    return {
        "applicability": fix.applicability,
        "edits": [
            {
                "content": edit.content,
                "end_location": _location(edit.end),
                "location": _location(edit.start),
            }
            for edit in fix.edits
        ],
        "message": fix.message,
    }


def _related(related: Related, cwd: Path | None) -> dict[str, Any]:
    return {
        "cell": related.cell,
        "end_location": _location(related.end),
        "filename": absolute_path(related.path, cwd),
        "location": _location(related.start),
        "message": related.message,
    }


def to_dict(diagnostic: Diagnostic, cwd: Path | None = None) -> dict[str, Any]:
    """One diagnostic as ruff writes it (keys in ruff's alphabetical order)."""
    return {
        "cell": diagnostic.cell,
        "code": diagnostic.code,
        "end_location": _location(diagnostic.end),
        "filename": absolute_path(diagnostic.path, cwd),
        "fix": _fix(diagnostic.fix),
        "location": _location(diagnostic.start),
        "message": diagnostic.message,
        "noqa_row": diagnostic.noqa_row,
        "related": [_related(related, cwd) for related in diagnostic.related],
        "url": diagnostic.url,
    }
