"""What verify will run: every fixture program x matrix column, or the reason it will not."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from devlint.verify.devices import Column
from devlint.verify.expectations import OK, Expectation, FileExpectations, Skip
from devlint.verify.fixture_set import Fixer, RuleFixtures, live_fixer, write_live_fix
from devlint.verify.virtual_columns import virtual_expectation, virtual_for

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
    """Every fixture program of ``rules`` on every column, or why it will not run."""
    planner = _Planner(Plan(list(rules), list(columns)), workdir)
    for rule in rules:
        planner.add_rule(rule)
    return planner.plan


class _Planner:
    """Fills a plan rule by rule, numbering the runs in the order they are planned."""

    def __init__(self, plan: Plan, workdir: Path) -> None:
        self.plan = plan
        self.workdir = workdir
        self.real = [column for column in plan.columns if column.present]
        self.virtual_columns = [column for column in plan.columns if column.virtual]
        self.fixer = live_fixer()
        plan.live_fix = "available" if self.fixer is not None else "not available"
        self._counter = iter(range(1, 1_000_000_000))

    def next_id(self) -> str:
        return f"r{next(self._counter)}"

    def add_rule(self, rule: RuleFixtures) -> None:
        self.plan.problems.extend((rule.code, problem) for problem in rule.problems)
        own_warnings = _own_warnings(rule)
        for path in rule.programs:
            entry = rule.expect.entries.get(path.name)
            if entry is None:
                continue  # reported as a problem
            self._add_real_program_runs(rule, path, entry, own_warnings)
            self._add_virtual_program_runs(rule, path, entry)
        for path in rule.fixed:
            self._add_fixed_runs(rule, path, own_warnings)
        if self.fixer is None:
            return
        for path in rule.bad:
            self._add_live_fix_runs(rule, path, own_warnings, self.fixer)

    def _add_real_program_runs(
        self,
        rule: RuleFixtures,
        path: Path,
        entry: FileExpectations,
        own_warnings: dict[str, tuple[str, ...]],
    ) -> None:
        """The program on each present column, as its expectation for that device declares."""
        for column in self.real:
            declared = entry.devices.get(column.device)
            if declared is None or isinstance(declared, Skip):
                why = declared.reason if declared else f"no expectation for {column.device}"
                self.plan.skipped.append(Skipped(rule.code, path.name, PROGRAM, column, why))
                continue
            clean = not declared.raises and declared.warns is None
            forbidden = own_warnings[column.device] if clean else ()
            self.plan.runs.append(
                Run(
                    self.next_id(),
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

    def _add_virtual_program_runs(
        self, rule: RuleFixtures, path: Path, entry: FileExpectations
    ) -> None:
        """The program on each virtual column, with the expectation derived for it."""
        check_line = virtual_for(rule.code).at_flagged_line
        for column in self.virtual_columns:
            derived, mechanism = virtual_expectation(rule.code, entry, column.device)
            if isinstance(derived, Skip):
                self.plan.skipped.append(
                    Skipped(rule.code, path.name, PROGRAM, column, derived.reason)
                )
                continue
            self.plan.runs.append(
                Run(
                    self.next_id(),
                    rule.code,
                    path.name,
                    PROGRAM,
                    column,
                    path,
                    rule.folder,
                    derived,
                    flagged_lines=flagged_lines(path) if check_line and derived.raises else None,
                    isolated=entry.isolated,
                    mechanism=mechanism,
                )
            )

    def _add_fixed_runs(
        self, rule: RuleFixtures, path: Path, own_warnings: dict[str, tuple[str, ...]]
    ) -> None:
        """A golden fix on every real column, unless it is the bad program unchanged."""
        if _unchanged(path):
            reason = "the golden fix changes nothing (no fix for this case): nothing to check"
            self.plan.skipped.extend(
                Skipped(rule.code, path.name, FIXED, c, reason) for c in self.real
            )
            return
        self.plan.runs.extend(
            _clean_runs(rule, path.name, FIXED, path, self.real, own_warnings, self.next_id)
        )

    def _add_live_fix_runs(
        self,
        rule: RuleFixtures,
        path: Path,
        own_warnings: dict[str, tuple[str, ...]],
        fixer: Fixer,
    ) -> None:
        """What ``devlint --fix`` makes of a bad program, on every real column."""
        name = f"{path.name} [live fix]"
        source = path.read_text(encoding="utf-8")
        try:
            text = fixer(source, path)
        except Exception as error:
            self.plan.problems.append(
                (
                    rule.code,
                    f"{rule.code}/{path.name}: devlint --fix failed: {type(error).__name__}: {error}",
                )
            )
            return
        if text == source:
            for column in self.real:
                self.plan.skipped.append(
                    Skipped(rule.code, name, LIVE_FIX, column, "devlint --fix changes nothing")
                )
            return
        fixed = write_live_fix(text, path, self.workdir)
        self.plan.runs.extend(
            _clean_runs(rule, name, LIVE_FIX, fixed, self.real, own_warnings, self.next_id)
        )


def _own_warnings(rule: RuleFixtures) -> dict[str, tuple[str, ...]]:
    """By device, the warnings the rule's programs declare (``warns``), sorted."""
    return {
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
