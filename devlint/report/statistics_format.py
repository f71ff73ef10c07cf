"""``--statistics``: diagnostics counted per rule; as JSON, ruff's statistics objects.

    [{"code": "DEV003", "name": "unguarded-cuda", "count": 2, "fixable": true,
      "fixable_count": 2}, ...]

Rows come most frequent first (ties by code). ``fixable`` is true when every diagnostic
of the rule is fixable (with ``--unsafe-fixes``, unsafe fixes count); ``fixable_count``
says how many are, as in ruff.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from devlint.diagnostics import Diagnostic
from devlint.report import ReportOptions


@dataclass(frozen=True, slots=True)
class Statistic:
    """How often one rule was reported, and how many of those ``--fix`` repairs."""

    code: str
    name: str
    count: int
    fixable_count: int

    @property
    def fixable(self) -> bool:
        return self.fixable_count == self.count

    def as_json(self) -> dict[str, object]:
        return {
            "code": self.code,
            "name": self.name,
            "count": self.count,
            "fixable": self.fixable,
            "fixable_count": self.fixable_count,
        }


def statistics(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> list[Statistic]:
    """One row per code, most frequent first."""
    counts: dict[str, list[int]] = {}
    names: dict[str, str] = {}
    for d in diagnostics:
        row = counts.setdefault(d.code, [0, 0])
        row[0] += 1
        fix = d.fix
        row[1] += fix is not None and (fix.applicability == "safe" or options.unsafe_fixes)
        info = options.rules.get(d.code)
        names.setdefault(d.code, info.name if info is not None else d.name)
    rows = [Statistic(code, names[code], n, fixable) for code, (n, fixable) in counts.items()]
    return sorted(rows, key=lambda row: (-row.count, row.code))


def render(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    rows = [row.as_json() for row in statistics(diagnostics, options)]
    json.dump(rows, out, indent=2)
    out.write("\n")
