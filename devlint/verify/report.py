"""The rule x device matrix, mismatch explanations, and the text / rich / JSON renderings."""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TextIO

from devlint.verify.agreement import agreement
from devlint.verify.devices import Column
from devlint.verify.expectations import DEVICES, tail
from devlint.verify.observed import (
    CONTRADICTED,
    Record,
    Status,
    cell_text,
    classify,
    counts,
    load_record,
    merge,
    observe,
    sources,
)
from devlint.verify.runner import RunResult, VerifyReport
from devlint.verify.virtual_columns import virtual_for

STDERR_LINES = 6
Matrix = dict[str, dict[str, "Cell"]]


@dataclass(slots=True)
class Cell:
    """One rule on one column."""

    column: Column
    passed: int = 0
    failed: int = 0
    reasons: list[str] = field(default_factory=list)  # one per program not run: why
    has_problems: bool = False  # the rule's fixtures have problems (listed separately)

    @property
    def skipped(self) -> int:
        return len(self.reasons)

    @property
    def status(self) -> str:
        if not self.column.runs:
            return "not present"
        if self.failed:
            return "fail"
        if self.passed:
            return "virtual" if self.column.virtual else "pass"
        return "not run"

    @property
    def text(self) -> str:
        status = self.status
        if status == "not present":
            return "not present"
        if status == "not run":
            return "nothing run"
        if status == "fail":
            text = f"FAIL {self.failed}/{self.passed + self.failed}"
            text = f"virtual {text}" if self.column.virtual else text
        else:
            text = f"{status} {self.passed}"
        if self.skipped:
            text += f" ({self.skipped} not run)"
        return text

    @property
    def note(self) -> str:
        """Why nothing ran, when nothing did."""
        if self.status != "not run":
            return ""
        distinct = sorted(set(self.reasons))
        if distinct:
            return "; ".join(distinct)
        if self.has_problems:
            return "no runnable programs (see the problems with the fixtures)"
        return "no programs"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "text": self.text,
            "passed": self.passed,
            "failed": self.failed,
            "not_run": self.skipped,
            "note": self.note,
        }


def build_matrix(report: VerifyReport) -> Matrix:
    """Every rule folder (rows) x every column, in plan order."""
    matrix: Matrix = {
        rule.code: {
            column.name: Cell(column, has_problems=bool(rule.problems)) for column in report.columns
        }
        for rule in report.plan.rules
    }
    for result in report.results:
        cell = matrix[result.run.rule][result.run.column.name]
        if result.passed:
            cell.passed += 1
        else:
            cell.failed += 1
    for skip in report.plan.skipped:
        matrix[skip.rule][skip.column.name].reasons.append(skip.reason)
    return matrix


def explain(result: RunResult) -> list[str]:
    """``DEV001/bad_x.py on cpu: expected …, got …`` plus the reason and stderr's last lines."""
    run = result.run
    what = " (fixed program)" if run.kind == "fixed" else ""
    lines = [f"{run.label}{what}: expected {run.expectation.describe()}, got {result.mismatch}"]
    if run.expectation.reason:
        lines.append(f"  reason: {run.expectation.reason}")
    if run.column.virtual:
        lines.append(f"  virtual device: {virtual_for(run.rule).note}")
    stderr = tail(result.outcome.stderr, STDERR_LINES)
    if stderr:
        lines.append("  stderr:")
        lines.extend(f"  | {line}" for line in stderr.splitlines())
    if result.process == "fallback":
        lines.append("  (run again in its own process after its batch crashed or hung)")
    return lines


def not_run_lines(matrix: Matrix) -> list[str]:
    """Why programs were not run: one line per cell where nothing ran, else one per reason."""
    lines = []
    for rule, row in matrix.items():
        for cell in row.values():
            where = f"{rule} on {cell.column.name}"
            if cell.note:
                lines.append(f"{where}: {cell.note}")
            elif cell.column.runs:
                for reason, count in sorted(Counter(cell.reasons).items()):
                    noun = "program" if count == 1 else "programs"
                    lines.append(f"{where}: {count} {noun}: {reason}")
    return lines


def summary_line(report: VerifyReport) -> str:
    stats = report.stats
    passed = sum(result.passed for result in report.results)
    own = sum(result.outcome.duration for result in report.results)
    return (
        f"{len(report.results)} runs: {passed} passed, {len(report.results) - passed} failed, "
        f"{len(report.plan.skipped)} not run; {stats.processes} processes "
        f"({stats.batches} batches, {stats.solo} solo, {stats.fallback} fallback); "
        f"{max(report.seconds, stats.seconds):.1f} s in all (the programs alone: {own:.1f} s)"
    )


def header_lines(report: VerifyReport) -> list[str]:
    found = report.found
    present = ["cpu"] + [device for device in ("cuda", "mps") if found.has(device)]
    name = f" ({found.cuda_name})" if found.cuda_name else ""
    return [
        f"devlint verify: torch {found.torch_version}; devices present: {', '.join(present)}{name}",
        f"fixtures: {report.root}",
    ]


def footer_lines(report: VerifyReport) -> list[str]:
    lines = []
    if report.plan.live_fix != "available":
        lines.append("live fix: not available (devlint.testing.fix_fixture is missing)")
    virtual = [column.name for column in report.columns if column.virtual]
    if virtual:
        lines.append(
            f"{' and '.join(virtual)}: the device is absent here; the programs ran on the CPU "
            "under devlint's virtual device (devlint/verify/virtual.py), which tracks where each "
            "tensor would live and raises PyTorch's own errors. Not a real device run."
        )
    lines.append(summary_line(report))
    return lines


def _aligned(rows: list[list[str]], out: TextIO) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip(), file=out)


def render_text(report: VerifyReport, out: TextIO, record: Record | None = None) -> None:
    """Plain aligned text (stdout is not a terminal)."""
    matrix = build_matrix(report)
    names = [column.name for column in report.columns]
    rows = [["rule", *names]]
    rows += [[rule, *(row[name].text for name in names)] for rule, row in matrix.items()]
    for line in header_lines(report):
        print(line, file=out)
    print(file=out)
    _aligned(rows, out)
    _sections(report, matrix, out, record)


# --- observed vs declared --------------------------------------------------------------------

OBSERVED_TITLE = (
    "Observed vs declared (each expect.toml expectation: real = seen on that device, "
    "virtual = seen only in a CPU column posing as it, declared = never checked):"
)


def observed_view(
    report: VerifyReport, record: Record | None = None
) -> tuple[Record, list[Status]]:
    """The record (default: the shipped one plus this run) and every expectation's status."""
    if record is None:
        record = merge(load_record(), observe(report))
    return record, classify(report.plan.rules, record)


def observed_lines(record: Record, statuses: list[Status]) -> list[str]:
    """The observed-vs-declared table, where the observations come from, contradictions."""
    table = counts(statuses)
    rows = [["rule", *DEVICES]]
    rows += [
        [rule, *(cell_text(row[device]) if device in row else "-" for device in DEVICES)]
        for rule, row in table.items()
    ]
    lines = [OBSERVED_TITLE]
    buffer = io.StringIO()
    _aligned(rows, buffer)
    lines += ["  " + line for line in buffer.getvalue().splitlines()]
    lines += ["  observed by:", *(f"    {line}" for line in sources(record) or ["nothing yet"])]
    contradicted = [status for status in statuses if status.level == CONTRADICTED]
    if contradicted:
        lines.append(f"  contradicted ({len(contradicted)}):")
        lines += [
            f"    {s.rule}/{s.file} on {s.column}: declared {s.declared}; saw {s.got}"
            for s in contradicted
        ]
    return lines


STYLES = {
    "pass": "green",
    "fail": "bold red",
    "not present": "dim",
    "virtual": "cyan",
    "not run": "yellow",
}


def render_rich(report: VerifyReport, out: TextIO, record: Record | None = None) -> None:
    """A rich table (stdout is a terminal)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(file=out, highlight=False)
    matrix = build_matrix(report)
    table = Table()
    table.add_column("rule", style="bold")
    for column in report.columns:
        table.add_column(column.name, style="italic" if column.virtual else None)
    for rule, row in matrix.items():
        table.add_row(rule, *(Text(cell.text, style=STYLES[cell.status]) for cell in row.values()))
    for line in header_lines(report):
        console.print(Text(line))
    console.print(table)
    console.file.flush()
    _sections(report, matrix, out, record)


def _sections(
    report: VerifyReport, matrix: Matrix, out: TextIO, record: Record | None = None
) -> None:
    not_run = not_run_lines(matrix)
    if not_run:
        print("\nNot run:", file=out)
        for line in not_run:
            print(f"  {line}", file=out)
    if report.plan.problems:
        print(f"\nProblems with the fixtures ({len(report.plan.problems)}):", file=out)
        for _, problem in report.plan.problems:
            print(f"  {problem}", file=out)
    if report.failures:
        print(f"\nMismatches ({len(report.failures)}):", file=out)
        for result in report.failures:
            for line in explain(result):
                print(f"  {line}", file=out)
    print(file=out)
    record, statuses = observed_view(report, record)
    for line in observed_lines(record, statuses):
        print(line, file=out)
    print(file=out)
    for line in footer_lines(report):
        print(line, file=out)


def to_json(report: VerifyReport, record: Record | None = None) -> dict[str, Any]:
    matrix = build_matrix(report)
    record, statuses = observed_view(report, record)
    virtuals = {rule.code: virtual_for(rule.code) for rule in report.plan.rules}
    return {
        "torch": report.found.torch_version,
        "fixtures": str(report.root),
        "devices": {device: report.found.has(device) for device in ("cpu", "cuda", "mps")},
        "columns": [
            {"name": c.name, "device": c.device, "present": c.present, "virtual": c.virtual}
            for c in report.columns
        ],
        "matrix": {
            rule: {name: cell.to_json() for name, cell in row.items()}
            for rule, row in matrix.items()
        },
        "runs": [_run_json(result) for result in report.results],
        "not_run": [
            {
                "rule": skip.rule,
                "file": skip.name,
                "kind": skip.kind,
                "column": skip.column.name,
                "reason": skip.reason,
            }
            for skip in report.plan.skipped
        ],
        "problems": [{"rule": rule, "message": text} for rule, text in report.plan.problems],
        "virtual": {
            code: {"reproduces": virtual.note, "failure_at_flagged_line": virtual.at_flagged_line}
            for code, virtual in virtuals.items()
        },
        "observed": {
            "sources": sources(record),
            "counts": counts(statuses),
            "expectations": [status.to_json(record) for status in statuses],
        },
        "agreement": agreement(report),
        "live_fix": report.plan.live_fix,
        "summary": {
            "runs": len(report.results),
            "passed": sum(result.passed for result in report.results),
            "failed": len(report.failures),
            "not_run": len(report.plan.skipped),
            "processes": report.stats.processes,
            "batches": report.stats.batches,
            "solo": report.stats.solo,
            "fallback": report.stats.fallback,
            "seconds": round(report.stats.seconds, 3),
            "total_seconds": round(max(report.seconds, report.stats.seconds), 3),
            "program_seconds": round(sum(r.outcome.duration for r in report.results), 3),
        },
        "exit_code": report.exit_code,
    }


def _run_json(result: RunResult) -> dict[str, Any]:
    run = result.run
    return {
        "rule": run.rule,
        "file": run.name,
        "kind": run.kind,
        "column": run.column.name,
        "device": run.column.device,
        "virtual": run.column.virtual,
        "expected": run.expectation.to_json(),
        "must_not_warn": list(run.forbidden_warnings),
        "reason": run.expectation.reason,
        "status": "pass" if result.passed else "fail",
        "explanation": None if result.passed else "\n".join(explain(result)),
        "process": result.process,
        "duration_s": round(result.outcome.duration, 3),
        "outcome": result.outcome.to_json(),
    }
