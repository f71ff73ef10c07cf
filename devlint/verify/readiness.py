"""``devlint run --device mps --report``: which aten operators a run needs that MPS lacks.

The script runs under virtual MPS (``virtual.VirtualDevice(record=True)``) at one torch
release (``--target-torch``, else the project's ``target-torch``), as with
``PYTORCH_ENABLE_MPS_FALLBACK=1``: an operator without an MPS kernel is recorded and runs
(on the CPU, as everything here does) instead of raising, so one run finds them all. The
report lists every operator the run used on MPS that is missing there (``NotImplementedError``
on a Mac without the fallback variable) or always falls back to the CPU, with its calls, its
first call site in the user's code, the first torch release with an MPS kernel for it,
DEV019 (the rule that finds its call statically) and whether DEV019 does so in the script.

Exit code (``devlint run``): 0 when every operator runs on MPS (falling back to the CPU
included: it runs, slower), 1 when one is missing or the run met another device bug, 2 when
the script failed for another reason.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devlint.analysis import mps_coverage
from devlint.torch_target import TorchVersion, format_target

RULE = "DEV019"
STATUS = {"M": "missing", "F": "falls back to the CPU"}
_OPERATOR = re.compile(r"runs `aten::([\w.]+)`")


@dataclass(frozen=True, slots=True)
class Unavailable:
    """One aten operator of the run that MPS lacks at the target."""

    operator: str  # ``take``, ``linalg_svd``, ``upsample_bicubic2d.vec``
    letter: str  # ``M`` missing, ``F`` falls back to the CPU
    calls: int
    path: str  # the first call site in the user's code ("" when none)
    line: int
    first_release: TorchVersion | None  # the first release after the target with a kernel
    static: tuple[int, ...]  # lines where DEV019 reports this operator in the script

    @property
    def status(self) -> str:
        return STATUS[self.letter]


@dataclass(frozen=True, slots=True)
class Readiness:
    script: Path
    target: TorchVersion
    operators: Mapping[str, int]  # every aten operator run on MPS: calls
    unavailable: tuple[Unavailable, ...]  # missing first, then by calls

    @property
    def missing(self) -> tuple[Unavailable, ...]:
        return tuple(u for u in self.unavailable if u.letter == "M")

    @property
    def exit_code(self) -> int:
        return 1 if self.missing else 0


def first_release(name: str, target: TorchVersion) -> TorchVersion | None:
    """The first release after ``target`` from which ``name`` runs on MPS (a kernel or a
    composite) in every later release of the table; None when none does."""
    entry = mps_coverage.lookup(name)
    index = mps_coverage.release_index(target)
    if entry is None or index is None:
        return None
    found = None
    for offset in range(len(entry.statuses) - 1, index, -1):
        if entry.statuses[offset] not in mps_coverage.RUNS:
            break
        found = mps_coverage.RELEASES[offset]
    return found


def static_lines(script: Path, target: TorchVersion) -> dict[str, tuple[int, ...]]:
    """``devlint check --select DEV019`` on the script at ``target``: operator -> lines."""
    from devlint.api import lint_path
    from devlint.engine import CheckOptions

    options = CheckOptions(codes=frozenset({RULE}), target_torch=target, origin=script)
    found: dict[str, list[int]] = {}
    for diagnostic in lint_path(script, str(script), options).diagnostics:
        match = _OPERATOR.search(diagnostic.message)
        if diagnostic.code == RULE and match:
            found.setdefault(match[1], []).append(diagnostic.start.row)
    return {name: tuple(sorted(set(rows))) for name, rows in found.items()}


def readiness(
    script: Path,
    target: TorchVersion,
    operators: Mapping[str, int],
    unavailable: Mapping[str, Sequence[Any]],
) -> Readiness:
    """The report of one run from what ``VirtualDevice(record=True)`` recorded."""
    static = static_lines(script, target) if unavailable else {}
    rows = [
        Unavailable(
            name,
            letter,
            calls,
            path,
            line,
            first_release(name, target),
            _static(static, name),
        )
        for name, (letter, calls, path, line) in unavailable.items()
    ]
    rows.sort(key=lambda u: (u.letter != "M", -u.calls, u.operator))
    return Readiness(script, target, dict(operators), tuple(rows))


def _static(static: Mapping[str, tuple[int, ...]], name: str) -> tuple[int, ...]:
    """DEV019's lines for an operator: its own, its base name's, or for a backward operator
    its forward's (DEV019 reports the call, whose forward operator it names)."""
    base = name.split(".")[0]
    forward = base.removesuffix("_backward")
    for candidate in (name, base, forward, f"{forward}_forward"):
        if static.get(candidate):
            return static[candidate]
    return ()


def _where(path: str, line: int) -> str:
    if not path:
        return "-"
    try:
        shown = os.path.relpath(path)
    except ValueError:  # another drive
        shown = path
    if shown.startswith(".."):
        shown = path
    return f"{shown}:{line}"


def _first(release: TorchVersion | None, letter: str) -> str:
    if release is not None:
        return format_target(release)
    return f"none up to {format_target(mps_coverage.RELEASES[-1])}"


def summary(report: Readiness) -> str:
    target = format_target(report.target)
    used = len(report.operators)
    missing = len(report.missing)
    falling = len(report.unavailable) - missing
    if not used:
        return "nothing ran on MPS: the run placed no tensor there (nothing to report)"
    if not report.unavailable:
        return f"ready: all {used} aten operators the run used on MPS have an MPS kernel in torch {target}"
    verdict = (
        f"not ready: {missing} missing on MPS in torch {target} (NotImplementedError unless "
        "PYTORCH_ENABLE_MPS_FALLBACK=1)"
        if missing
        else f"runs: nothing missing on MPS in torch {target}"
    )
    return f"{verdict}, {falling} falling back to the CPU, of {used} aten operators used on MPS"


def render_text(report: Readiness) -> str:
    header = ("operator", "on MPS", "calls", "first call", "MPS kernel from", "rule", "static")
    rows = [
        (
            f"aten::{u.operator}",
            u.status,
            str(u.calls),
            _where(u.path, u.line),
            _first(u.first_release, u.letter),
            RULE,
            f"line {', '.join(map(str, u.static))}" if u.static else "not found",
        )
        for u in report.unavailable
    ]
    lines = [
        f"MPS readiness of {report.script} at torch {format_target(report.target)} "
        "(virtual MPS, run on past missing operators as with PYTORCH_ENABLE_MPS_FALLBACK=1)"
    ]
    if rows:
        widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
        for row in (header, *rows):
            lines.append(
                "  ".join(
                    cell.ljust(width) for cell, width in zip(row, widths, strict=True)
                ).rstrip()
            )
    lines.append(summary(report))
    return "\n".join(lines)


def to_json(report: Readiness, run_exit: int) -> dict[str, Any]:
    return {
        "script": str(report.script),
        "device": "mps",
        "target_torch": format_target(report.target),
        "exit_code": max(run_exit, report.exit_code) if run_exit != 2 else 2,
        "operators_used": len(report.operators),
        "unavailable": [
            {
                "operator": f"aten::{u.operator}",
                "status": "missing" if u.letter == "M" else "falls_back",
                "calls": u.calls,
                "first_call": _where(u.path, u.line),
                "mps_kernel_from": format_target(u.first_release) if u.first_release else None,
                "rule": RULE,
                "static_lines": list(u.static),
            }
            for u in report.unavailable
        ],
        "summary": summary(report),
    }


def dumps(report: Readiness, run_exit: int) -> str:
    return json.dumps(to_json(report, run_exit), indent=2)
