"""The interpreter's module classes: where an instance of this file's ``nn.Module`` lives.

A new module is on the CPU (``calls.instantiate``) only where its construction shows
parameters made there: its ``__init__`` (or a base class of this file's, or a torch
layer it derives from) builds ``nn`` layers, parameters or buffers. Anything else leaves
the placement unknown, never the CPU:

- a class that places its own parts (``self.fc = nn.Linear(4, 2).cuda()``,
  ``self.layers = [Layer(...).to(device)]``), so that ``net = Net()`` computes on the
  device though ``net`` itself is never moved;
- a module built from parts the caller passes (``AllClassifiers(classifiers_dict)`` of
  modules moved one by one, dinov2): it is where those parts are;
- a class whose construction shows no parameters (a postprocessor that only computes,
  GroundingDINO), or whose ``__init__`` cannot be run (from another file, too deep).

``__init__`` runs detached once per class, like an inlined call (nothing is recorded for
the rules), and counts against the inlining budget.
"""

from __future__ import annotations

from dataclasses import replace
from enum import Enum

from devlint.analysis import torch_api
from devlint.analysis.datasets import receiver_of
from devlint.analysis.inlining import MAX_INLINED_DEPTH
from devlint.analysis.interpreter import Interpreter, Records
from devlint.analysis.values import CPU, UNKNOWN, Kind, Value, may_be_accelerator

# Module methods that give a module parameters or buffers where it is built.
_REGISTERS = frozenset({"register_buffer", "register_parameter"})


class Construction(Enum):
    """What building an instance of a module class shows about its parameters."""

    ON_CPU = "on the CPU"  # it builds parameters, none of them moved
    SELF_PLACING = "placed by itself"  # it moves a part it builds off the CPU
    UNSEEN = "unseen"  # no parameters seen, or its ``__init__`` could not be run


class ModuleClasses:
    """Instances of this file's module classes (see the module docstring)."""

    def __init__(self, core: Interpreter) -> None:
        self.core = core
        self.constructions: dict[str, Construction] = {}

    def instance(self, value: Value, args: list[Value], keywords: dict[str, Value]) -> Value:
        """A new module of this file's class (``calls.instantiate``, on the default device):
        there only where its construction shows parameters built there."""
        name = value.qualname or ""
        if value.stateless:
            return value
        if any(_placed_part(arg) for arg in (*args, *keywords.values())):
            return replace(value, where=None)  # built from parts that may be elsewhere
        if self.construction(name, args, keywords) is Construction.ON_CPU:
            return value
        return replace(value, where=None)

    def construction(
        self, name: str, args: list[Value], keywords: dict[str, Value], depth: int = 0
    ) -> Construction:
        """What building ``name`` shows (answered once per class)."""
        if name not in self.constructions:
            self.constructions[name] = Construction.UNSEEN  # a class that builds itself
            self.constructions[name] = self.run_construction(name, args, keywords, depth)
        return self.constructions[name]

    def run_construction(
        self, name: str, args: list[Value], keywords: dict[str, Value], depth: int
    ) -> Construction:
        bases = self.core.definitions.module_bases.get(name, ())
        inherited = [
            self.construction(base, [], {}, depth + 1)
            for base in bases
            if base in self.core.definitions.module_methods and depth < MAX_INLINED_DEPTH
        ]
        if Construction.SELF_PLACING in inherited:
            return Construction.SELF_PLACING
        built = Construction.ON_CPU in inherited or name in self.core.definitions.layer_classes
        init = self.core.definitions.module_methods.get(name, {}).get("__init__")
        if init is None or not receiver_of(init):
            return Construction.ON_CPU if built else Construction.UNSEEN
        if not self.core.inlining.reserve():
            return Construction.UNSEEN
        env = self.core.inlining.argument_env(init, args, keywords, bound=1)
        env[init.params.params[0].name.value] = Value(Kind.MODULE)  # ``self.cuda()`` moves it
        _, _, records = self.core.inlining.detached(init, env, class_name=name)
        if _places_parts(records):
            return Construction.SELF_PLACING
        return Construction.ON_CPU if built or _builds_parameters(records) else Construction.UNSEEN


def _placed_part(value: Value) -> bool:
    """A module (or a moved value of unknown kind) that may not be on the CPU."""
    if value.kind is Kind.MODULE:
        return value.where != CPU and not value.stateless
    return value.kind is Kind.UNKNOWN and may_be_accelerator(value.where)


def _places_parts(records: Records) -> bool:
    """Whether a detached ``__init__`` moved a module or tensor off the CPU."""
    return any(
        record.method in torch_api.PLACING_METHODS
        and not record.casts_only
        and record.receiver is not None
        and record.receiver.kind in (Kind.MODULE, Kind.TENSOR)
        and records.values.get(id(record.node), UNKNOWN).where != CPU  # None: a device
        for record in records.calls.values()
    )


def _builds_parameters(records: Records) -> bool:
    """Whether a detached ``__init__`` built layers, parameters or buffers on the CPU."""
    for record in records.calls.values():
        if record.callee in torch_api.PARAMETER_WRAPPERS or record.method in _REGISTERS:
            return True
        value = records.values.get(id(record.node), UNKNOWN)
        if value.kind is Kind.MODULE and value.where == CPU and not value.stateless:
            return True
    return False
