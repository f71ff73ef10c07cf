"""What verify will run: every fixture program x matrix column, or the reason it will not."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from devlint.verify.devices import Column
from devlint.verify.emulation import virtual_expectation, virtual_for
from devlint.verify.expectations import OK, Expectation, Skip
from devlint.verify.fixture_set import RuleFixtures, live_fixer, write_live_fix

EXPECT_COMMENT = re.compile(r"#\s*expect:\s*(?P<codes>[A-Z]+\d+(?:\s*,\s*[A-Z]+\d+)*)")

PROGRAM, FIXED, LIVE_FIX = "program", "fixed", "live-fix"


@dataclass(frozen=True, slots=True)
class Run:
    """One program on one column, and what it must do there."""

    id: str  # unique in a plan, safe in file names
    rule: str
    name: str  # the fixture's file name (a live fix: the bad program's name + " [live fix]")
    kind: str  # PROGRAM, FIXED or LIVE_FIX
    column: Column
    program: Path  # the file executed
    directory: Path  # sys.path[0] while it runs: the fixture's folder
    expectation: Expectation
    forbidden_warnings: tuple[str, ...] = ()  # the rule's own `warns`, where it must run clean
    flagged_lines: frozenset[int] | None = None  # virtual failures must pass through these
    isolated: bool = False  # `isolated = true`: its own fresh interpreter, torch not preloaded
    fresh: bool = False  # warnings-sensitive: first program of its process (warn-once state)
    mechanism: str | None = None  # the virtual device ("virtual-cuda"), virtual columns only

    @property
    def label(self) -> str:
        return f"{self.rule}/{self.name} on {self.column.name}"


@dataclass(frozen=True, slots=True)
class Skipped:
    rule: str
    name: str
    kind: str
    column: Column
    reason: str


@dataclass(slots=True)
class Plan:
    rules: list[RuleFixtures]
    columns: list[Column]
    runs: list[Run] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (rule, one line)
    live_fix: str = "not available"  # or "available"


def flagged_lines(path: Path) -> frozenset[int]:
    """Lines with an ``# expect:`` comment: where devlint reports a bug (of any rule)."""
    lines = (line for line in path.read_text(encoding="utf-8").splitlines())
    return frozenset(
        number for number, line in enumerate(lines, start=1) if EXPECT_COMMENT.search(line)
    )


def plan_runs(rules: Sequence[RuleFixtures], columns: Sequence[Column], workdir: Path) -> Plan:
    plan = Plan(list(rules), list(columns))
    real = [column for column in columns if column.present]
    emulated = [column for column in columns if column.emulated]
    fixer = live_fixer()
    plan.live_fix = "available" if fixer is not None else "not available"
    counter = iter(range(1, 1_000_000_000))

    def next_id() -> str:
        return f"r{next(counter)}"

    for rule in rules:
        plan.problems.extend((rule.code, problem) for problem in rule.problems)
        own_warnings = {
            device: tuple(
                sorted(
                    {
                        declared.warns
                        for entry in rule.expect.entries.values()
                        if isinstance(declared := entry.devices.get(device), Expectation)
                        and declared.warns is not None
                    }
                )
            )
            for device in ("cpu", "cuda", "mps")
        }

        for path in rule.programs:
            entry = rule.expect.entries.get(path.name)
            if entry is None:
                continue  # reported as a problem
            for column in real:
                declared = entry.devices.get(column.device)
                if declared is None or isinstance(declared, Skip):
                    why = declared.reason if declared else f"no expectation for {column.device}"
                    plan.skipped.append(Skipped(rule.code, path.name, PROGRAM, column, why))
                    continue
                clean = not declared.raises and declared.warns is None
                forbidden = own_warnings[column.device] if clean else ()
                plan.runs.append(
                    Run(
                        next_id(),
                        rule.code,
                        path.name,
                        PROGRAM,
                        column,
                        path,
                        rule.folder,
                        declared,
                        forbidden_warnings=forbidden,
                        isolated=entry.isolated,
                        fresh=declared.warns is not None or bool(forbidden),
                    )
                )
            check_line = virtual_for(rule.code).at_flagged_line
            for column in emulated:
                derived, mechanism = virtual_expectation(rule.code, entry, column.device)
                if isinstance(derived, Skip):
                    plan.skipped.append(
                        Skipped(rule.code, path.name, PROGRAM, column, derived.reason)
                    )
                    continue
                plan.runs.append(
                    Run(
                        next_id(),
                        rule.code,
                        path.name,
                        PROGRAM,
                        column,
                        path,
                        rule.folder,
                        derived,
                        flagged_lines=flagged_lines(path)
                        if check_line and derived.raises
                        else None,
                        isolated=entry.isolated,
                        mechanism=mechanism,
                    )
                )
        for path in rule.fixed:
            if _unchanged(path):
                reason = "the golden fix changes nothing (no fix for this case): nothing to check"
                plan.skipped.extend(Skipped(rule.code, path.name, FIXED, c, reason) for c in real)
                continue
            plan.runs.extend(_clean_runs(rule, path.name, FIXED, path, real, own_warnings, next_id))
        if fixer is None:
            continue
        for path in rule.bad:
            name = f"{path.name} [live fix]"
            source = path.read_text(encoding="utf-8")
            try:
                text = fixer(source, path)
            except Exception as error:
                plan.problems.append(
                    (
                        rule.code,
                        f"{rule.code}/{path.name}: devlint --fix failed: {type(error).__name__}: {error}",
                    )
                )
                continue
            if text == source:
                for column in real:
                    plan.skipped.append(
                        Skipped(rule.code, name, LIVE_FIX, column, "devlint --fix changes nothing")
                    )
                continue
            fixed = write_live_fix(text, path, workdir)
            plan.runs.extend(_clean_runs(rule, name, LIVE_FIX, fixed, real, own_warnings, next_id))
    return plan


def _unchanged(fixed: Path) -> bool:
    """A ``bad_x.fixed.py`` identical to its ``bad_x.py``: the rule offers no fix there."""
    original = fixed.with_name(fixed.name[: -len(".fixed.py")] + ".py")
    try:
        return fixed.read_bytes() == original.read_bytes()
    except OSError:
        return False


def _clean_runs(
    rule: RuleFixtures,
    name: str,
    kind: str,
    program: Path,
    columns: Sequence[Column],
    own_warnings: dict[str, tuple[str, ...]],
    next_id: Callable[[], str],
) -> list[Run]:
    """A fixed program on every real column: it must run clean, without the warnings its
    rule's bad programs declare."""
    return [
        Run(
            next_id(),
            rule.code,
            name,
            kind,
            column,
            program,
            rule.folder,
            OK,
            forbidden_warnings=own_warnings[column.device],
            fresh=bool(own_warnings[column.device]),
        )
        for column in columns
    ]
