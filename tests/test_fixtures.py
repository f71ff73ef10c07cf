"""Every fixture's diagnostics equal its ``# expect:`` comments, code and line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from devlint.engine import CheckOptions, check_text
from devlint.rule import all_rules

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>DEV\d{3}(?:\s*,\s*DEV\d{3})*)")
DEFAULT_CODES = frozenset(code for code, rule in all_rules().items() if rule.default)


def fixture_files() -> list[Path]:
    return sorted(
        path
        for path in FIXTURES.glob("DEV*/*.py")
        if path.name.startswith(("bad_", "good_")) and not path.name.endswith(".fixed.py")
    )


def expected(text: str) -> list[tuple[int, str]]:
    found = []
    for row, line in enumerate(text.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            found.extend((row, code.strip()) for code in match["codes"].split(","))
    return sorted(found)


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_diagnostics_match_expect_comments(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    codes = DEFAULT_CODES | {path.parent.name}
    diagnostics = check_text(text, str(path), CheckOptions(codes))
    actual = sorted((d.start.row, d.code) for d in diagnostics)
    assert actual == expected(text), "\n".join(
        f"{d.start.row}:{d.start.column} {d.code} {d.message}" for d in diagnostics
    )


def test_every_rule_has_enough_fixtures() -> None:
    for code, rule in all_rules().items():
        if rule.engine_only:
            continue
        folder = FIXTURES / code
        bad = [p for p in folder.glob("bad_*.py") if not p.name.endswith(".fixed.py")]
        good = list(folder.glob("good_*.py"))
        assert len(bad) >= 4 and len(good) >= 4, f"{code}: {len(bad)} bad, {len(good)} good"
        assert (folder / "expect.toml").is_file(), f"{code}: no expect.toml"


def test_bad_fixtures_report_their_own_rule() -> None:
    for path in fixture_files():
        if path.name.startswith("bad_"):
            codes = {code for _, code in expected(path.read_text(encoding="utf-8"))}
            assert path.parent.name in codes, f"{path.name} never expects {path.parent.name}"
