"""The interpreter's datasets: where the items of this file's ``Dataset`` classes live.

``DataLoader(TensorDataset(x.to(device)))`` yields batches on the device
(``Effects.loader``); so does a loader over this file's own
``torch.utils.data.Dataset`` subclass whose ``__getitem__`` returns device tensors,
typically ones its ``__init__`` moved there (``self.x = torch.tensor(x).cuda()``). When
such a class is instantiated, ``__init__`` and then ``__getitem__`` run detached, like an
inlined call (nothing is recorded for the rules: the methods' own analysis stands), with
the constructor's arguments; the instance's placement is where the items may be. Items on
the CPU, or unknown, leave the loader's batches on the CPU as before, unless
``__getitem__`` moves tensors in a way not followed to what it returns (through
``map(lambda ...)``): the items are then where those moves send them. Answers are kept per
class and argument values, and count against the inlining budget. A dataset class of a
star-imported project module comes with its answer for unknown arguments
(``project_imports.py``).
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from devlint.analysis.interpreter import Interpreter, Records
from devlint.analysis.torch_api import MOVE_METHODS
from devlint.analysis.values import (
    ANY_DEVICE,
    UNKNOWN,
    Kind,
    Placement,
    Value,
    join,
    join_placements,
)

# What a dataset's ``__init__`` receives where the call does not say: its data, which the
# class's own moves place (``x.to(device)``); anything else leaves the items unknown.
UNKNOWN_TENSOR = Value(Kind.TENSOR)


class Datasets:
    """Instances of this file's dataset classes (see the module docstring)."""

    def __init__(self, core: Interpreter) -> None:
        self.core = core
        self.item_placements: dict[tuple[object, ...], Placement] = {}

    def instance(self, value: Value, args: list[Value], keywords: dict[str, Value]) -> Value:
        """A new object of this file's class (``calls.instantiate``): where its items are,
        for a dataset."""
        name = value.qualname
        definitions = self.core.definitions
        methods = definitions.dataset_classes.get(name or "")
        if methods is None and name in definitions.imported_items:
            return replace(value, where=definitions.imported_items[name])  # star-imported
        if not methods or "__getitem__" not in methods:
            return value
        key = (name, tuple(args), tuple(sorted(keywords.items())))
        if key not in self.item_placements:
            self.item_placements[key] = self.item_placement(name or "", methods, args, keywords)
        return replace(value, where=self.item_placements[key])

    def item_placement(
        self,
        class_name: str,
        methods: dict[str, cst.FunctionDef],
        args: list[Value],
        keywords: dict[str, Value],
    ) -> Placement:
        """Where the items of a new instance may be (None: unknown)."""
        if not self.core.inlining.reserve():
            return None
        init, getitem = methods.get("__init__"), methods["__getitem__"]
        attributes: dict[str, Value] = {}  # what ``__init__`` stored, by attribute name
        if init is not None and receiver_of(init):
            env = self.core.inlining.argument_env(init, args, keywords, bound=1)
            for name, value in env.items():
                if value is UNKNOWN:  # data of unknown kind: placed only by the class's moves
                    env[name] = UNKNOWN_TENSOR
            final, _, _ = self.core.inlining.detached(init, env, class_name=class_name)
            prefix = f"{receiver_of(init)}."
            attributes = {k[len(prefix) :]: v for k, v in final.items() if k.startswith(prefix)}
        receiver = receiver_of(getitem)
        if not receiver:
            return None
        env = self.core.inlining.argument_env(getitem, [], {}, bound=1)
        for attribute, value in attributes.items():
            env[f"{receiver}.{attribute}"] = value
            self.core.remember(f"{receiver}.{attribute}")
        _, returned, records = self.core.inlining.detached(getitem, env, class_name=class_name)
        if not returned:
            return None
        item = returned[0]
        for value in returned[1:]:
            item = join(item, value)
        if item.kind is Kind.TENSOR:
            return item.where
        # ``tuple(map(lambda t: t[i].to(self.device), self.data))``: what it returns is not
        # followed, but it moves tensors; the items may be where it moves them.
        targets = _move_targets(records)
        return join_placements(targets) if targets else None


def receiver_of(method: cst.FunctionDef) -> str | None:
    """The name a method calls its instance (``self``)."""
    params = [*method.params.posonly_params, *method.params.params]
    return params[0].name.value if params else None


def _move_targets(records: Records) -> list[Placement]:
    """Where the moves recorded in a detached body send tensors: ``.cuda()``, ``.cpu()``,
    ``.to(device)`` (a device not known: any of them)."""
    targets: list[Placement] = []
    for call in records.calls.values():
        if call.method not in MOVE_METHODS or call.casts_only:
            continue
        where: Placement = records.values.get(id(call.node), UNKNOWN).where
        device = call.keywords.get("device") or (call.args[0] if call.args else None)
        if where is None and device is not None and device.kind is Kind.DEVICE:
            where = ANY_DEVICE
        if where is not None:
            targets.append(where)
    return targets
