"""The ``gitlab`` output: GitLab Code Quality (Code Climate) JSON, as ruff writes it.

    [{"check_name": "DEV003", "description": "DEV003: message", "severity": "major",
      "fingerprint": "9d1e...", "location": {"path": "src/a.py", "positions":
      {"begin": {"line": 16, "column": 9}, "end": {"line": 16, "column": 21}}}}]

Paths are relative to ``$CI_PROJECT_DIR`` when it is set (GitLab sets it), else to the
current directory. The fingerprint hashes the code, path and message, not the position,
so an issue keeps its identity when lines above it move; equal ones get distinct
fingerprints. Lines of a notebook diagnostic count from its cell, not from the ``.ipynb``
file: such a diagnostic points at the file's first line and its description names the cell.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from devlint.diagnostics import Diagnostic, Location
from devlint.report import ReportOptions, display_path, position


def fingerprint(code: str, path: str, message: str, salt: int = 0) -> str:
    data = "\0".join((code, path, message, str(salt))).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:16]


def to_dicts(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> list[dict[str, Any]]:
    project = os.environ.get("CI_PROJECT_DIR")
    base = Path(project) if project else options.cwd
    seen: set[str] = set()
    issues = []
    for d in diagnostics:
        path = display_path(d.path, base)
        salt = 0
        while (found := fingerprint(d.code, path, d.message, salt)) in seen:
            salt += 1
        seen.add(found)
        if d.cell is None:
            begin, end = d.start, d.end
            description = f"{d.code}: {d.message}"
        else:
            begin = end = Location(1, 1)
            description = f"{d.code}: {position(d)}: {d.message}"
        issues.append(
            {
                "check_name": d.code,
                "description": description,
                "severity": "major",
                "fingerprint": found,
                "location": {
                    "path": path,
                    "positions": {
                        "begin": {"line": begin.row, "column": begin.column},
                        "end": {"line": end.row, "column": end.column},
                    },
                },
            }
        )
    return issues


def render(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    json.dump(to_dicts(diagnostics, options), out, indent=2)
    out.write("\n")
