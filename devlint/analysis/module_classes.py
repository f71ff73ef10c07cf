"""The interpreter's module classes: where an instance of this file's ``nn.Module`` lives.

A new module is on the CPU (``calls.instantiate``) until something moves it. A class can
place its own parts instead: ``self.layers = [Layer(...).to(device)]`` or
``self.fc = nn.Linear(4, 2).cuda()`` in ``__init__``, so that ``net = Net()`` computes on
the device though ``net`` itself is never moved. For such a class the instance's
placement is unknown (its methods return values where their inputs are), never the CPU.
``__init__`` runs detached once per class, like an inlined call (nothing is recorded for
the rules), and counts against the inlining budget.
"""

from __future__ import annotations

from dataclasses import replace

from devlint.analysis import torch_api
from devlint.analysis.calls import MAX_INLINED_DEPTH
from devlint.analysis.datasets import DatasetInterpreter, receiver_of
from devlint.analysis.interpreter import Env
from devlint.analysis.values import CPU, UNKNOWN, Kind, Value


class ModuleClassInterpreter(DatasetInterpreter):
    """Instances of this file's module classes (see the module docstring)."""

    def __init__(self, guard_functions: frozenset[str], guard_attributes: Env) -> None:
        super().__init__(guard_functions, guard_attributes)
        self.self_placing: dict[str, bool] = {}

    def instantiate(self, callee: Value, args: list[Value], keywords: dict[str, Value]) -> Value:
        value = super().instantiate(callee, args, keywords)
        name = callee.qualname or ""
        if value.kind is not Kind.MODULE or value.stateless:
            return value
        if name not in self.self_placing:
            self.self_placing[name] = self.places_own_parts(name, args, keywords)
        return replace(value, where=None) if self.self_placing[name] else value

    def places_own_parts(self, name: str, args: list[Value], keywords: dict[str, Value]) -> bool:
        """Whether the class's ``__init__`` moves a module or tensor it builds off the CPU."""
        init = self.module_methods.get(name, {}).get("__init__")
        if init is None or not receiver_of(init):
            return False
        if id(init) in self.analysed_functions and id(init) not in self.placing_functions:
            return False  # its analysis saw no ``.to()``/``.cuda()``: no need to run it
        if self.inline_depth >= MAX_INLINED_DEPTH or self.inline_budget <= 0:
            return False
        self.inline_budget -= 1
        env = self.argument_env(init, args, keywords, bound=1)
        _, _, records = self.detached(init, env, class_name=name)
        return any(
            record.method in torch_api.PLACING_METHODS
            and not record.casts_only
            and record.receiver is not None
            and record.receiver.kind in (Kind.MODULE, Kind.TENSOR)
            and records.values.get(id(record.node), UNKNOWN).where != CPU  # None: a device
            for record in records.calls.values()
        )
