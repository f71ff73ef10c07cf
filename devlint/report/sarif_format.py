"""SARIF 2.1.0, ready for GitHub code-scanning upload."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from devlint import __version__
from devlint.diagnostics import Diagnostic, Edit
from devlint.report import ReportOptions

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _artifact(path: str, cwd: Path | None) -> dict[str, str]:
    resolved = Path(path).resolve()
    if cwd is not None:
        try:
            return {"uri": resolved.relative_to(cwd.resolve()).as_posix(), "uriBaseId": "%SRCROOT%"}
        except ValueError:
            pass
    return {"uri": resolved.as_uri()}


def _region(start_row: int, start_column: int, end_row: int, end_column: int) -> dict[str, int]:
    return {"startLine": start_row, "startColumn": start_column, "endLine": end_row, "endColumn": end_column}


def _replacement(edit: Edit) -> dict[str, Any]:
    return {
        "deletedRegion": _region(edit.start.row, edit.start.column, edit.end.row, edit.end.column),
        "insertedContent": {"text": edit.content},
    }


def render(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    codes = sorted({d.code for d in diagnostics})
    index = {code: i for i, code in enumerate(codes)}
    rules = []
    for code in codes:
        info = options.rules.get(code)
        rules.append(
            {
                "id": code,
                "name": info.name if info else code,
                "shortDescription": {"text": info.summary if info else code},
                "help": {"text": f"Run `devlint rule {code}` for the documentation."},
                "defaultConfiguration": {"level": "error"},
            }
        )
    results = []
    for d in diagnostics:
        result: dict[str, Any] = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": "error",
            "message": {"text": d.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": _artifact(d.path, options.cwd),
                        "region": _region(d.start.row, d.start.column, d.end.row, d.end.column),
                    }
                }
            ],
        }
        if d.fix is not None:
            result["fixes"] = [
                {
                    "description": {"text": d.fix.message},
                    "artifactChanges": [
                        {
                            "artifactLocation": _artifact(d.path, options.cwd),
                            "replacements": [_replacement(edit) for edit in d.fix.edits],
                        }
                    ],
                }
            ]
        results.append(result)
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "devlint",
                "informationUri": "https://pypi.org/project/devlint/",
                "version": __version__,
                "rules": rules,
            }
        },
        "results": results,
    }
    if options.cwd is not None:
        run["originalUriBaseIds"] = {"%SRCROOT%": {"uri": options.cwd.resolve().as_uri() + "/"}}
    json.dump({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, out, indent=2)
    out.write("\n")
