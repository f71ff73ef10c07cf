"""From Python calls to the aten operators they run, observed: the map DEV019 reads.

``mps_op_map.json`` is recorded by ``scripts/record_op_map.py``: it runs each public call
(a ``torch`` function, a tensor method, an ``nn`` module, with the arguments that matter)
on the CPU under a ``TorchDispatchMode`` and keeps the calls whose operators lack an MPS
kernel in some release of the coverage table (``mps_coverage``). Each call's operators
form a tree: a composite operator (one MPS runs by decomposition, unless it has a kernel
or a fallback of its own there) holds the operators it decomposed into on the CPU.

An entry says when it applies: ``when`` names arguments of the call (of the constructor,
for a module) and what they must be: ``"given"`` (present and not ``None``/``False``)
or a literal value; ``positions`` gives their positional index where they may be passed
by position. Among a call's entries, the one whose conditions all hold with the most
conditions wins; a call that matches none runs its operators on MPS in every release.
``"absent or True"`` holds for a switch that is on by default and not written off (a
non-literal value may be off: the condition does not hold).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Literal

from devlint.analysis import mps_coverage
from devlint.records import record
from devlint.torch_target import TorchVersion

# How a call reaches its operators: ``torch.take(x)``, ``x.take()``, or calling a module
# built by ``nn.Embedding(...)``; ``object``: operators its later use runs, on the device
# its ``device`` argument names (``torch.amp.GradScaler("mps")``).
CallKind = Literal["function", "method", "module", "object"]
Outcome = Literal["K", "F", "M"]  # runs on MPS, falls back to the CPU, fails
_RANK = {"K": 0, "F": 1, "M": 2}
GIVEN = "given"
ABSENT_OR_TRUE = "absent or True"  # a switch on by default (``GradScaler(enabled=...)``)


@record(frozen=True, slots=True)
class OpTree:
    """An operator and, when it is composite, those it decomposed into on the CPU."""

    name: str
    children: tuple[OpTree, ...] = ()


@record(frozen=True, slots=True)
class CallEntry:
    call: str  # ``torch.take``, ``Tensor.take``, ``torch.nn.Embedding``
    kind: CallKind
    when: Mapping[str, object]
    positions: Mapping[str, int]
    ops: tuple[OpTree, ...]


@record(frozen=True, slots=True)
class Verdict:
    """What a call does on MPS in one release: the operator that decides it."""

    outcome: Outcome
    operator: str  # ``aten::take``
    since: TorchVersion | None  # the first release with an MPS kernel after a missing one

    @property
    def notable(self) -> bool:
        """A failure, or a fallback to the CPU that no later release removes (one that
        only older releases have runs, a little slower, where it still happens)."""
        return self.outcome == "M" or self.since is None


def _tree(data: Any) -> OpTree:
    if isinstance(data, str):
        return OpTree(data)
    name, children = data
    return OpTree(name, tuple(_tree(child) for child in children))


@cache
def entries() -> dict[str, tuple[CallEntry, ...]]:
    """Every recorded call, by the name the rule resolves (``torch.linalg.eig``)."""
    text = Path(__file__).with_name("mps_op_map.json").read_text("utf-8")
    found: dict[str, list[CallEntry]] = {}
    for item in json.loads(text)["calls"]:
        entry = CallEntry(
            item["call"],
            item["kind"],
            item.get("when", {}),
            item.get("positions", {}),
            tuple(_tree(op) for op in item["ops"]),
        )
        found.setdefault(entry.call, []).append(entry)
    return {call: tuple(group) for call, group in found.items()}


def methods() -> frozenset[str]:
    """Tensor method names with an entry (``take`` for ``Tensor.take``)."""
    return frozenset(call.split(".", 1)[1] for call in entries() if call.startswith("Tensor."))


def matching(call: str, arguments: Mapping[str | int, object]) -> CallEntry | None:
    """The entry of ``call`` for these arguments: ``arguments`` maps each keyword (or
    ``positions``' index, as an ``int``) to its literal value, ``...`` when it is not a
    literal, ``None`` when absent (or written ``None``)."""
    best: CallEntry | None = None
    for entry in entries().get(call, ()):
        holds = all(_holds(entry, name, want, arguments) for name, want in entry.when.items())
        if holds and (best is None or len(entry.when) > len(best.when)):
            best = entry
    return best


def _holds(
    entry: CallEntry, name: str, want: object, arguments: Mapping[str | int, object]
) -> bool:
    value = arguments.get(name)
    position = entry.positions.get(name)
    if value is None and position is not None:
        value = arguments.get(position)
    if want == GIVEN:
        return value is not None and value is not False
    if want == ABSENT_OR_TRUE:
        return value is None or value is True
    return value == want


def outcome(ops: Sequence[OpTree], release: TorchVersion) -> Verdict | None:
    """The worst of ``ops`` on MPS in ``release`` (None: all run there): failing before
    falling back, and of those the one that gained a kernel last (or never)."""
    verdicts = [v for v in (_outcome(op, release) for op in ops) if v is not None]
    return max(verdicts, key=_severity, default=None)


def _severity(verdict: Verdict) -> tuple[int, TorchVersion]:
    return _RANK[verdict.outcome], verdict.since or (99, 99)


def _outcome(op: OpTree, release: TorchVersion) -> Verdict | None:
    entry = mps_coverage.lookup(op.name)
    if entry is None:  # the same in every release: a kernel, or composite (has children)
        return outcome(op.children, release) if op.children else None
    letter = entry.status(release)
    if letter == "C":
        return outcome(op.children, release)
    if letter == "M" or letter == "F":
        return Verdict(letter, entry.aten, entry.since)
    return None  # a kernel; or no such operator in that release (its call ran another)
