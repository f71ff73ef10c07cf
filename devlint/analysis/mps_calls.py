"""Calls whose aten operators may lack an MPS kernel, and where their tensors may be.

The facts DEV019 (and DEV004's fix safety note) ask: each call of the file that the op
map (``mps_op_map``) knows, with the entry its literal arguments select and the devices
it may run on. A call runs where its tensors are: its tensor arguments (a function),
its receiver (a tensor method), the module built by the call (an ``nn`` module, which
runs where it is moved, or where the model whose ``__init__`` built it is moved), or its
``device`` argument (``torch.amp.GradScaler("mps")``). In a method of a model class, a
tensor of unknown placement is where that model may be.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from devlint.analysis import mps_op_map
from devlint.analysis.mps_op_map import CallEntry, Verdict
from devlint.analysis.values import Kind, Placement, Step, chain
from devlint.records import record
from devlint.torch_target import TorchVersion, format_target

if TYPE_CHECKING:  # facts re-exports this module's queries for the rules
    from devlint.analysis.facts import CallRecord, FileFacts

_TENSOR_LIKE = (Kind.TENSOR, Kind.UNKNOWN)


@record(frozen=True, slots=True)
class OpCall:
    """A call the op map knows, and the devices it may run on."""

    node: cst.Call  # reported here: the call, or the module's constructor
    entry: CallEntry
    where: Placement  # None: not known
    placed: tuple[Step, ...] = ()  # where its tensors (or device) got there

    @property
    def may_be_mps(self) -> bool:
        return self.where is not None and "mps" in self.where

    def verdict(self, target: TorchVersion) -> Verdict | None:
        """What its operators do on MPS in the ``target`` torch, when it is notable (None:
        they run, or only fall back in releases older than their kernel)."""
        verdict = mps_op_map.outcome(self.entry.ops, target)
        return verdict if verdict is not None and verdict.notable else None

    @property
    def display(self) -> str:
        """``torch.nn.Embedding(max_norm=...)``, ``Tensor.take``: the call as the map names it."""
        shown = ", ".join(
            f"{name}=..." if want == mps_op_map.GIVEN else f"{name}={json.dumps(want)}"
            for name, want in self.entry.when.items()
            if want != mps_op_map.ABSENT_OR_TRUE
        )
        return f"{self.entry.call}({shown})" if shown else self.entry.call

    @property
    def subject(self) -> str:
        """What may be on MPS: a tensor, a module, a device."""
        kinds = {
            "module": "on a module that may be on MPS",
            "object": "for a device that may be MPS",
        }
        return kinds.get(self.entry.kind, "on a tensor that may be on MPS")


def op_calls(facts: FileFacts) -> Iterator[OpCall]:
    """Every call of the file that the op map has an entry for, with its placement."""
    table = mps_op_map.entries()
    methods = mps_op_map.methods()
    classes: dict[str, frozenset[str]] | None = None
    containers: dict[int, cst.Call] | None = None
    for call in facts.calls:
        if call.callee is not None and call.callee in table:
            name = call.callee
        elif call.method in methods and call.receiver is not None:
            name = f"Tensor.{call.method}"
        else:
            continue
        entry = mps_op_map.matching(name, _arguments(call.node))
        if entry is None:
            continue
        if classes is None or containers is None:
            classes, containers = _class_placements(facts), _containers(facts)
        if entry.kind == "module":
            where = _module_placement(facts, call.node, call.site.class_name, classes, containers)
            yield OpCall(call.node, entry, where)
        else:
            where = _placement(facts, call, entry, classes)
            yield OpCall(call.node, entry, where, _steps(call, entry))


def _steps(call: CallRecord, entry: CallEntry) -> tuple[Step, ...]:
    """The placement steps of the values a tensor op runs on (or of its device)."""
    if entry.kind == "method":
        return call.receiver.placed if call.receiver is not None else ()
    if entry.kind == "object":
        device = call.keywords.get("device") or (call.args[0] if call.args else None)
        return device.placed if device is not None else ()
    values = [v for v in (*call.args, *call.keywords.values()) if v.kind in _TENSOR_LIKE]
    return chain(*(value.placed for value in values))


def _placement(
    facts: FileFacts, call: CallRecord, entry: CallEntry, classes: dict[str, frozenset[str]]
) -> Placement:
    if entry.kind == "method":
        assert call.receiver is not None
        values = [call.receiver] if call.receiver.kind in _TENSOR_LIKE else []
    elif entry.kind == "object":
        device = call.keywords.get("device") or (call.args[0] if call.args else None)
        return device.where if device is not None and device.kind is Kind.DEVICE else None
    else:
        values = [v for v in (*call.args, *call.keywords.values()) if v.kind in _TENSOR_LIKE]
    known = [v.where for v in values if v.where is not None]
    if known:
        return frozenset().union(*known)
    if values and _in_forward(call):
        return classes.get(call.site.class_name or "") or None  # where the model is
    return None


def _module_placement(
    facts: FileFacts,
    node: cst.Call,
    class_name: str | None,
    classes: dict[str, frozenset[str]],
    containers: dict[int, cst.Call],
) -> Placement:
    """Where the module the constructor call ``node`` builds may be: where its value is
    moved (``emb = nn.Embedding(...).to(device)``), where a container holding it is
    (``nn.Sequential(..., nn.RReLU())``), or where the model class whose method built it
    may be."""
    found: frozenset[str] = frozenset()
    seen = False
    for value in facts.values.values():
        if value.built_by is node and value.where is not None:
            found, seen = found | value.where, True
    parent = containers.get(id(node))
    if parent is not None:
        outer = _module_placement(facts, parent, None, classes, containers)
        if outer is not None:
            found, seen = found | outer, True
    if class_name is not None and classes.get(class_name):
        found, seen = found | classes[class_name], True
    return found if seen else None


def _containers(facts: FileFacts) -> dict[int, cst.Call]:
    """Constructor calls written as the parts of a module call (``nn.Sequential(a, b)``,
    ``nn.ModuleList([a, b])``): each part's id -> the container's call."""
    found: dict[int, cst.Call] = {}
    for call in facts.calls:
        if facts.value_of(call.node).kind is not Kind.MODULE:
            continue
        for arg in call.node.args:
            parts: list[cst.BaseExpression] = [arg.value]
            if isinstance(arg.value, cst.List | cst.Tuple):
                parts = [element.value for element in arg.value.elements]
            elif isinstance(arg.value, cst.Dict):
                parts = [e.value for e in arg.value.elements if isinstance(e, cst.DictElement)]
            for part in parts:
                if isinstance(part, cst.Call):
                    found[id(part)] = call.node
    return found


def _class_placements(facts: FileFacts) -> dict[str, frozenset[str]]:
    """Where instances of this file's module classes may be, a class built in another's
    methods (``self.block = Block()``) being where that one is."""
    found: dict[str, frozenset[str]] = {}
    for value in facts.values.values():
        name = value.qualname
        if value.kind is Kind.MODULE and name in facts.module_classes and value.where:
            assert name is not None
            found[name] = found.get(name, frozenset()) | value.where
    parts = [
        (call.site.class_name, built.qualname)
        for call in facts.calls
        if call.site.class_name is not None
        and (built := facts.value_of(call.node)).kind is Kind.MODULE
        and built.qualname in facts.module_classes
    ]
    changed = True
    while changed:
        changed = False
        for owner, part in parts:
            assert owner is not None and part is not None
            outer, inner = found.get(owner, frozenset()), found.get(part, frozenset())
            if not outer <= inner:
                found[part] = inner | outer
                changed = True
    return found


def _in_forward(call: CallRecord) -> bool:
    function = call.site.function
    return (
        call.site.class_name is not None
        and function is not None
        and (function.name.value == "forward")
    )


def _arguments(node: cst.Call) -> dict[str | int, object]:
    """Each argument's literal value (``...`` when not a literal) by keyword, and by
    position for positional ones."""
    found: dict[str | int, object] = {}
    position = 0
    for arg in node.args:
        if arg.star:
            continue
        value = _literal(arg.value)
        if arg.keyword is not None:
            found[arg.keyword.value] = value
        else:
            found[position] = value
            position += 1
    return found


def _literal(node: cst.BaseExpression) -> object:
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, cst.SimpleString | cst.ConcatenatedString):
        return node.evaluated_value
    if isinstance(node, cst.Integer | cst.Float):
        return node.evaluated_value
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _literal(node.expression)
        return -inner if isinstance(inner, int | float) else ...
    return ...


def mps_note(facts: FileFacts, target: TorchVersion) -> str:
    """For a fix that adds MPS to a CUDA-or-CPU choice (DEV004): the operators of the
    file's accelerator code that MPS lacks in ``target``, or ``""``."""
    fails: dict[str, None] = {}
    falls_back: dict[str, None] = {}
    for found in op_calls(facts):
        if found.where is None or not found.where & {"cuda", "mps"}:
            continue
        verdict = found.verdict(target)
        if verdict is not None:
            (fails if verdict.outcome == "M" else falls_back)[f"`{verdict.operator}`"] = None
    parts = []
    if fails:
        parts.append(f"{', '.join(fails)} {'fails' if len(fails) == 1 else 'fail'}")
    if falls_back:
        verb = "falls" if len(falls_back) == 1 else "fall"
        parts.append(f"{', '.join(falls_back)} {verb} back to the CPU")
    return f" (on MPS in torch {format_target(target)}: {'; '.join(parts)})" if parts else ""
