"""Every fixture's diagnostics equal its ``# expect:`` comments; every fix equals its golden file."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from devlint.engine import check_text
from devlint.rule import all_rules
from devlint.testing import fix_fixture, fixture_options

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>DEV\d{3}(?:\s*,\s*DEV\d{3})*)")


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
    diagnostics = check_text(text, str(path), fixture_options(path))
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


def golden_pairs() -> list[Path]:
    """Bad fixtures of rules that offer a fix: each has a golden ``bad_*.fixed.py``."""
    rules = all_rules()
    return [
        path
        for path in fixture_files()
        if path.name.startswith("bad_") and rules[path.parent.name].fix is not None
    ]


def golden_of(path: Path) -> Path:
    return path.with_name(path.name.removesuffix(".py") + ".fixed.py")


@pytest.mark.parametrize("path", golden_pairs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fix_output_equals_golden_file(path: Path) -> None:
    golden = golden_of(path)
    assert golden.is_file(), f"missing golden file {golden.name}"
    fixed = fix_fixture(path.read_text(encoding="utf-8"), path)
    assert fixed == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", golden_pairs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_golden_file_is_fixed_for_good(path: Path) -> None:
    """A second --fix changes nothing, and what is left of the rule has no fix to offer."""
    golden = golden_of(path)
    text = golden.read_text(encoding="utf-8")
    ast.parse(text)
    assert fix_fixture(text, golden) == text
    left = [d for d in check_text(text, str(golden), fixture_options(golden)) if d.fix is not None]
    assert not left, [f"{d.start.row}: {d.code} {d.message}" for d in left]


def test_every_golden_file_has_its_bad_fixture() -> None:
    for golden in FIXTURES.glob("DEV*/*.fixed.py"):
        original = golden.with_name(golden.name.removesuffix(".fixed.py") + ".py")
        assert original.is_file(), f"{golden.name} has no {original.name}"
