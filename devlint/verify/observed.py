"""Observed vs declared: what ``devlint verify`` really saw, kept in a committed record.

``expect.toml`` *declares* what each fixture program does on each device. A declaration is
only a claim until a run on that device checked it. ``devlint verify --record [FILE]``
writes what a run observed to a JSON record (by default ``observed.json`` beside this
module, shipped in the wheel): per matrix column, the machine (real device name or the
virtual column's label), torch and Python versions, the date, and per program its
outcome (``pass`` / ``fail``, what was expected, what happened) with a hash of the program
and the declared expectation at the time.

An expectation (rule, program, device) is then classified as

- ``real``: a real device of that kind ran the program and saw the declared outcome;
- ``virtual``: only a virtual column (a CPU run posing as the device) saw it;
- ``contradicted``: a run saw something else (a real run outranks a virtual one);
- ``declared``: nothing has checked it (or the program / the declaration changed since).

Declared skips (``{ skip = "…" }``) are not expectations and are not counted.
Pure data and files: no torch.
"""

from __future__ import annotations

import datetime
import hashlib
import importlib.resources
import json
import platform
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devlint import __version__
from devlint.verify.expectations import DEVICES, Expectation
from devlint.verify.fixture_set import RuleFixtures

if TYPE_CHECKING:
    from devlint.verify.runner import VerifyReport

RECORD_NAME = "observed.json"
FORMAT = 1
REAL, VIRTUAL, CONTRADICTED, DECLARED = "real", "virtual", "contradicted", "declared"
LEVELS = (REAL, VIRTUAL, CONTRADICTED, DECLARED)

Record = dict[str, Any]


def default_record_path() -> Path:
    """``observed.json`` beside this module: the record shipped with devlint."""
    return Path(__file__).with_name(RECORD_NAME)


def load_record(path: Path | None = None) -> Record:
    """The record at ``path`` (default: the shipped one); empty when there is none."""
    if path is None:
        resource = importlib.resources.files("devlint.verify").joinpath(RECORD_NAME)
        text = resource.read_text(encoding="utf-8") if resource.is_file() else ""
    else:
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
    data = json.loads(text) if text.strip() else {}
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return {"format": FORMAT, "columns": {}}
    data.setdefault("columns", {})
    return data


def program_hash(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return "?"


def column_kind(present: bool) -> str:
    return REAL if present else VIRTUAL


def observe(report: VerifyReport, today: datetime.date | None = None) -> Record:
    """This run as a record: one entry per column that ran something."""
    date = (today or datetime.datetime.now(datetime.timezone.utc).date()).isoformat()
    declared_of = _declared_index(report.plan.rules)
    columns: dict[str, Any] = {}
    for result in report.results:
        run, column = result.run, result.run.column
        entry = columns.setdefault(column.name, _column_header(report, column, date))
        key = f"{run.rule}/{run.name}"
        declared = declared_of.get((run.rule, run.name, column.device))
        entry["outcomes"][key] = {
            "kind": run.kind,
            "status": "pass" if result.passed else "fail",
            "declared": declared,
            "expected": run.expectation.describe(),
            "got": result.outcome.describe() if result.mismatch is None else result.mismatch,
            "program": program_hash(run.program),
        }
    for entry in columns.values():
        statuses = [outcome["status"] for outcome in entry["outcomes"].values()]
        entry["passed"], entry["failed"] = statuses.count("pass"), statuses.count("fail")
    return {"format": FORMAT, "columns": columns}


def _column_header(report: VerifyReport, column: Any, date: str) -> dict[str, Any]:
    found = report.found
    if column.present:
        machine = found.cuda_name if column.device == "cuda" and found.cuda_name else None
        machine = machine or f"{column.device} ({platform.machine() or 'unknown machine'})"
    else:
        machine = f"{column.name} on the CPU ({platform.machine() or 'unknown machine'})"
    return {
        "device": column.device,
        "kind": column_kind(column.present),
        "machine": machine,
        "torch": found.torch_version,
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}".strip(),
        "date": date,
        "devlint": __version__,
        "passed": 0,
        "failed": 0,
        "outcomes": {},
    }


def _declared_index(rules: Iterable[RuleFixtures]) -> dict[tuple[str, str, str], str]:
    """(rule, program, device) -> the declared expectation's text, for every real one."""
    index = {}
    for rule in rules:
        for name, entry in rule.expect.entries.items():
            for device in DEVICES:
                declared = entry.devices.get(device)
                if isinstance(declared, Expectation):
                    index[(rule.code, name, device)] = declared.describe()
    return index


def merge(old: Record, new: Record) -> Record:
    """``new``'s columns over ``old``'s. A column observed again keeps the old outcomes of
    programs this run did not reach (``--rule``) only when torch and machine are the same."""
    columns = dict(old.get("columns", {}))
    for name, entry in new.get("columns", {}).items():
        previous = columns.get(name)
        outcomes = dict(entry["outcomes"])
        same = previous is not None and all(
            previous.get(key) == entry.get(key) for key in ("torch", "machine", "kind")
        )
        if same and previous is not None:
            outcomes = {**previous.get("outcomes", {}), **outcomes}
        statuses = [outcome["status"] for outcome in outcomes.values()]
        columns[name] = {
            **entry,
            "outcomes": dict(sorted(outcomes.items())),
            "passed": statuses.count("pass"),
            "failed": statuses.count("fail"),
        }
    return {"format": FORMAT, "columns": dict(sorted(columns.items()))}


def write_record(record: Record, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, sort_keys=False) + "\n", encoding="utf-8")


# --- classifying the declared expectations ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class Status:
    """Where one declared expectation stands."""

    rule: str
    file: str
    device: str
    declared: str
    level: str  # REAL, VIRTUAL, CONTRADICTED or DECLARED
    column: str | None = None  # the record column that decided it
    got: str | None = None  # for CONTRADICTED: what was seen

    def to_json(self, record: Record) -> dict[str, Any]:
        data: dict[str, Any] = {
            "rule": self.rule,
            "file": self.file,
            "device": self.device,
            "declared": self.declared,
            "observed": self.level,
            "column": self.column,
        }
        if self.column is not None:
            header = record["columns"][self.column]
            data["where"] = describe_column(self.column, header)
        if self.got is not None:
            data["got"] = self.got
        return data


def classify(rules: Iterable[RuleFixtures], record: Record) -> list[Status]:
    """Every declared (not skipped) expectation of ``rules``, with where it was observed."""
    statuses = []
    for rule in rules:
        programs = {path.name: path for path in rule.programs}
        for name, entry in sorted(rule.expect.entries.items()):
            path = programs.get(name)
            digest = program_hash(path) if path is not None else None
            for device in DEVICES:
                declared = entry.devices.get(device)
                if isinstance(declared, Expectation):
                    text = declared.describe()
                    statuses.append(_status(rule.code, name, device, text, digest, record))
    return statuses


def _status(
    rule: str, name: str, device: str, declared: str, digest: str | None, record: Record
) -> Status:
    """The best evidence: a real run over a virtual one, a contradiction over a pass."""
    candidates: list[tuple[int, int, Status]] = []
    for column, header in record.get("columns", {}).items():
        outcome = header.get("outcomes", {}).get(f"{rule}/{name}")
        if header.get("device") != device or outcome is None:
            continue
        if outcome.get("declared") != declared or outcome.get("program") != digest:
            continue  # observed before the program or its declaration changed
        kind = REAL if header.get("kind") == REAL else VIRTUAL
        passed = outcome.get("status") == "pass"
        got = None if passed else outcome.get("got")
        status = Status(rule, name, device, declared, kind if passed else CONTRADICTED, column, got)
        candidates.append((0 if kind == REAL else 1, 1 if passed else 0, status))
    if not candidates:
        return Status(rule, name, device, declared, DECLARED)
    return min(candidates, key=lambda candidate: candidate[:2])[2]


def describe_column(name: str, header: Mapping[str, Any]) -> str:
    label = "real" if header.get("kind") == REAL else "virtual"
    return (
        f"{name} [{label}]: {header.get('machine')}, torch {header.get('torch')}, "
        f"{header.get('date')}"
    )


def counts(statuses: Iterable[Status]) -> dict[str, dict[str, dict[str, int]]]:
    """rule -> device -> level -> how many expectations."""
    table: dict[str, dict[str, dict[str, int]]] = {}
    for status in statuses:
        cell = table.setdefault(status.rule, {}).setdefault(status.device, dict.fromkeys(LEVELS, 0))
        cell[status.level] += 1
    return table


def cell_text(cell: Mapping[str, int]) -> str:
    parts = [f"{cell[level]} {level}" for level in LEVELS if cell.get(level)]
    return ", ".join(parts) or "-"


def sources(record: Record) -> list[str]:
    return [describe_column(name, header) for name, header in record.get("columns", {}).items()]


def rule_lines(code: str) -> list[str]:
    """For ``devlint rule CODE``: where the rule's declared runtime outcomes were observed."""
    from contextlib import ExitStack

    from devlint.verify.fixture_set import FixtureError, load_rule, shipped_fixture_root

    with ExitStack() as stack:
        try:
            folder = shipped_fixture_root(stack) / code
        except FixtureError:
            return []
        if not folder.is_dir():
            return []
        record = load_record()
        statuses = classify([load_rule(folder)], record)
    if not statuses:
        return []
    row = counts(statuses).get(code, {})
    used = sorted({s.column for s in statuses if s.column is not None})
    lines = [
        "## Runtime outcomes (devlint verify)",
        "",
        "Expectations in fixtures/"
        + code
        + "/expect.toml, per device: "
        + "; ".join(f"{device}: {cell_text(row[device])}" for device in DEVICES if device in row)
        + ".",
    ]
    lines += [f"- {describe_column(name, record['columns'][name])}" for name in used]
    lines.append(
        "real = seen on that device; virtual = seen only in a CPU column posing as it; "
        "declared = not checked by any recorded run."
    )
    contradicted = [s for s in statuses if s.level == CONTRADICTED]
    lines += [f"- contradicted: {s.file} on {s.column}: saw {s.got}" for s in contradicted]
    return lines
