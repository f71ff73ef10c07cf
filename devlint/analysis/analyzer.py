"""The analysis of one file: run the interpreter over a module and hand the rules its facts.

``analyze`` runs the module's code, then the function bodies it defined (twice where a
body ran before the calls that say what it receives), then decides the file-wide *CUDA
required* contexts (``requirements.py``) and returns the ``FileFacts``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import libcst as cst

from devlint.analysis import requirements
from devlint.analysis.facts import FileFacts
from devlint.analysis.interpreter import Env
from devlint.analysis.module_classes import ModuleClassInterpreter
from devlint.analysis.values import may_be_accelerator


class Analyzer(ModuleClassInterpreter):
    """Builds ``FileFacts`` for one module. Use ``analyze``."""

    def analyze(self, module: cst.Module) -> FileFacts:
        self.cuda_module = self.cuda_required = requirements.imports_cuda_only_package(module)
        self.block(module.body)
        self.module_done = True
        self.run_pending()
        # A function's body may have run before the calls that say what it receives
        # (``main()`` calls ``evaluate(model, loader)`` defined above it): once more.
        for name, item in list(self.bodies.items()):
            if self.parameter_seeds(item.node) != self.seeded.get(name, {}):
                self.pending.append(item)
        self.run_pending()
        if self.missed_attributes & (self.guard_attributes.keys() - self.seeded_guards):
            # A guard attribute was read before its assignment was seen: run once more.
            return Analyzer(self.guard_functions, self.guard_attributes).analyze(module)
        self.decide_requirements(module)
        rec = self.rec
        return FileFacts(
            calls=list(rec.calls.values()),
            mixes=list(rec.mixes.values()),
            conditionals=list(rec.conditionals.values()),
            values=rec.values,
            attribute_stores=rec.attribute_stores,
            attribute_loads=rec.attribute_loads,
            module_classes=self.module_classes,
            module_names=self.module_env,
            definition_literals=rec.definition_literals,
            device_functions={
                id(self.function_defs[name])
                for name, seeds in self.seeded.items()
                if name in self.function_defs
                and any(may_be_accelerator(value.where) for value in seeds.values())
            },
        )

    def __init__(self, guard_functions: frozenset[str], guard_attributes: Env) -> None:
        super().__init__(guard_functions, guard_attributes)
        self.seeded_guards = frozenset(guard_attributes)

    def decide_requirements(self, module: cst.Module) -> None:
        """File-wide *CUDA required*: functions held by their callers, stream-creating
        modules, CUDA integration libraries (requirements.py)."""
        if self.owned_records:
            used = {owner for _, owner in self.owned_records if self.used_as_value(owner)}
            requirements.callers_require_cuda(self.owned_records, self.local_calls, used)
        records = self.rec.calls.values()
        if requirements.creates_cuda_streams(records) or (
            self.refuses_without_cuda and requirements.is_library_module(module)
        ):
            for record in records:
                record.site = replace(record.site, cuda_required=True)


def analyze(module: cst.Module, guard_functions: Iterable[str] = ()) -> FileFacts:
    """Run the device-flow analysis over a parsed module."""
    return Analyzer(frozenset(guard_functions), {}).analyze(module)
