"""What users see, pinned for every fixture: each diagnostic's span, message, fix title,
safety and edits, and the chain of facts behind it.

One snapshot a rule, ``fixtures/DEVnnn/snapshot.snap``, covering every fixture of the folder;
a changed message, column or fix is a visible diff in review, as ruff's snapshots are.
After a deliberate change, rewrite them and read the diff before committing:

    DEVLINT_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_snapshots.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from devlint.diagnostics import Diagnostic, Location
from devlint.engine import check_text
from devlint.rule import all_rules
from devlint.testing import fixture_options

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CODES = sorted(code for code in all_rules() if (FIXTURES / code).is_dir())


def _span(start: Location, end: Location) -> str:
    return f"{start.row}:{start.column}-{end.row}:{end.column}"


def _diagnostic(diagnostic: Diagnostic) -> list[str]:
    lines = [f"{_span(diagnostic.start, diagnostic.end)} {diagnostic.code} {diagnostic.message}"]
    if diagnostic.fix is not None:
        lines.append(f"  fix ({diagnostic.fix.applicability}): {diagnostic.fix.message}")
        lines += [f"    {_span(e.start, e.end)} {e.content!r}" for e in diagnostic.fix.edits]
    lines += [f"  related {_span(r.start, r.end)}: {r.message}" for r in diagnostic.related]
    return lines


def fixture_snapshot(path: Path) -> str:
    """One fixture's diagnostics as the snapshot shows them (display path: the file name)."""
    found = check_text(path.read_text(encoding="utf-8"), path.name, fixture_options(path))
    lines = [f"## {path.name}"]
    for diagnostic in sorted(found, key=lambda d: (d.start, d.end, d.code)):
        lines += _diagnostic(diagnostic)
    return "\n".join(lines)


def rule_snapshot(code: str) -> str:
    paths = sorted(
        path
        for path in (FIXTURES / code).glob("*.py")
        if path.name.startswith(("bad_", "good_")) and not path.name.endswith(".fixed.py")
    )
    return "\n\n".join(fixture_snapshot(path) for path in paths) + "\n"


@pytest.mark.parametrize("code", CODES)
def test_every_fixture_shows_what_its_snapshot_pins(code: str) -> None:
    snapshot = FIXTURES / code / "snapshot.snap"
    actual = rule_snapshot(code)
    if os.environ.get("DEVLINT_UPDATE_SNAPSHOTS"):
        snapshot.write_text(actual, encoding="utf-8")
    assert snapshot.is_file(), f"no snapshot: DEVLINT_UPDATE_SNAPSHOTS=1 pytest {__file__}"
    assert snapshot.read_text(encoding="utf-8") == actual


def test_every_snapshot_belongs_to_a_rule() -> None:
    """A snapshot in a folder of no rule (a removed or renamed rule) is stale."""
    assert sorted(path.parent.name for path in FIXTURES.glob("*/snapshot.snap")) == CODES
