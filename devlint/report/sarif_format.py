"""SARIF 2.1.0, ready for GitHub code-scanning upload.

One run whose driver lists a rule for every code that appears; one result per
diagnostic, with its fix as SARIF ``fixes`` (artifact changes with replacements).
Files inside ``cwd`` are named by a relative URI against ``%SRCROOT%``, others by a
``file://`` URI. Columns count Unicode code points, as devlint (and ruff) do.

A notebook diagnostic's region counts lines from the start of its code cell, not of the
``.ipynb`` JSON: its location names the cell as a logical location (``nb.ipynb:cell 3``,
kind ``module``: the cell is checked as a module of its own) and the result carries the
cell number in its ``cell`` property.

A diagnostic's chain of facts (``Diagnostic.related``: where the value was moved to the
device, ...) is written twice: as ``relatedLocations``, and as one ``codeFlows`` thread
that walks the chain in order and ends at the diagnostic.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from devlint.diagnostics import Diagnostic, Edit, Location
from devlint.report import ReportOptions, RuleInfo, absolute_path, display_path, relative_path

SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
SARIF_VERSION = "2.1.0"
INFORMATION_URI = "https://github.com/devlint/devlint"
SRCROOT = "%SRCROOT%"


def tool_version() -> str:
    try:
        return version("devlint")
    except PackageNotFoundError:
        return "0.0.0"


def artifact_location(path: str, cwd: Path | None) -> dict[str, str]:
    relative = relative_path(path, cwd)
    if relative is not None:
        return {"uri": quote(relative, safe="/"), "uriBaseId": SRCROOT}
    if path == "-":
        return {"uri": "stdin"}
    return {"uri": Path(absolute_path(path, cwd)).as_uri()}


def region(start: Location, end: Location) -> dict[str, int]:
    return {
        "startLine": start.row,
        "startColumn": start.column,
        "endLine": end.row,
        "endColumn": end.column,
    }


def _replacement(edit: Edit) -> dict[str, Any]:
    return {
        "deletedRegion": region(edit.start, edit.end),
        "insertedContent": {"text": edit.content},
    }


def _rule(code: str, info: RuleInfo | None, example: Diagnostic, url: str | None) -> dict[str, Any]:
    name = info.name if info is not None else example.name
    summary = info.summary if info is not None else name
    rule: dict[str, Any] = {
        "id": code,
        "name": name,
        "shortDescription": {"text": summary},
        "fullDescription": {"text": summary},
        "help": {"text": f"{summary} Run `devlint rule {code}` for the full documentation."},
        "defaultConfiguration": {"level": "error"},
        "properties": {
            "fixable": info.fixable if info is not None else example.fix is not None,
            "defaultEnabled": info.default if info is not None else True,
        },
    }
    if url:
        rule["helpUri"] = url
    return rule


def _cell(path: str, cell: int, cwd: Path | None) -> list[dict[str, str]]:
    """The logical location of a notebook's code cell."""
    name = f"cell {cell}"
    shown = display_path(path, cwd)
    return [{"name": name, "fullyQualifiedName": f"{shown}:{name}", "kind": "module"}]


def _location(
    path: str, start: Location, end: Location, cell: int | None, cwd: Path | None, message: str
) -> dict[str, Any]:
    """A location with a message: a step of a diagnostic's chain."""
    location: dict[str, Any] = {
        "physicalLocation": {
            "artifactLocation": artifact_location(path, cwd),
            "region": region(start, end),
        },
        "message": {"text": message},
    }
    if cell is not None:
        location["logicalLocations"] = _cell(path, cell, cwd)
    return location


def _result(diagnostic: Diagnostic, rule_index: int, cwd: Path | None) -> dict[str, Any]:
    artifact = artifact_location(diagnostic.path, cwd)
    location: dict[str, Any] = {
        "physicalLocation": {
            "artifactLocation": artifact,
            "region": region(diagnostic.start, diagnostic.end),
        }
    }
    result: dict[str, Any] = {
        "ruleId": diagnostic.code,
        "ruleIndex": rule_index,
        "level": "error",
        "message": {"text": diagnostic.message},
        "locations": [location],
    }
    if diagnostic.cell is not None:
        # Lines count from the start of the notebook cell, not of the .ipynb file.
        location["logicalLocations"] = _cell(diagnostic.path, diagnostic.cell, cwd)
        result["properties"] = {"cell": diagnostic.cell}
    if diagnostic.related:
        steps = [
            _location(r.path, r.start, r.end, r.cell, cwd, r.message) for r in diagnostic.related
        ]
        result["relatedLocations"] = [{"id": i, **step} for i, step in enumerate(steps)]
        flow = [*steps, {**location, "message": {"text": diagnostic.message}}]
        result["codeFlows"] = [
            {"threadFlows": [{"locations": [{"location": step} for step in flow]}]}
        ]
    if diagnostic.fix is not None:
        result["fixes"] = [
            {
                "description": {"text": diagnostic.fix.message},
                "artifactChanges": [
                    {
                        "artifactLocation": dict(artifact),
                        "replacements": [_replacement(edit) for edit in diagnostic.fix.edits],
                    }
                ],
                "properties": {"applicability": diagnostic.fix.applicability},
            }
        ]
    return result


def to_sarif(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> dict[str, Any]:
    examples: dict[str, Diagnostic] = {}
    urls: dict[str, str] = {}
    for d in diagnostics:
        examples.setdefault(d.code, d)
        if d.url:
            urls.setdefault(d.code, d.url)
    codes = sorted(examples)
    index = {code: i for i, code in enumerate(codes)}
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "devlint",
                "informationUri": INFORMATION_URI,
                "version": tool_version(),
                "rules": [
                    _rule(code, options.rules.get(code), examples[code], urls.get(code))
                    for code in codes
                ],
            }
        },
        "columnKind": "unicodeCodePoints",
        "results": [_result(d, index[d.code], options.cwd) for d in diagnostics],
    }
    if options.cwd is not None:
        root = Path(absolute_path(".", options.cwd)).as_uri().rstrip("/") + "/"
        run["originalUriBaseIds"] = {SRCROOT: {"uri": root}}
    return {"$schema": SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}


def render(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    json.dump(to_sarif(diagnostics, options), out, indent=2)
    out.write("\n")
