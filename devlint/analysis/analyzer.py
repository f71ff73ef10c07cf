"""The analysis of one file: run the interpreter over a module and hand the rules its facts.

``analyze`` runs the module's code, then the function bodies it defined (twice where a
body ran before the calls that say what it receives), then decides the file-wide *CUDA
required* contexts (``requirements.py``) and returns the ``FileFacts``. ``summarize``
runs only a module's top-level code, for the files that star-import it
(``star_imports.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import libcst as cst

from devlint.analysis import name_guesses, requirements, star_imports
from devlint.analysis.facts import FileFacts
from devlint.analysis.interpreter import Env
from devlint.analysis.module_classes import ModuleClassInterpreter
from devlint.analysis.star_imports import ModuleSummary, ProjectModules
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
        flags = self.guard_attributes.keys() - self.seeded_guards
        missed = {name_guesses.aliased_flag(key, flags) or key for key in self.missed_attributes}
        if missed & flags:
            # A guard attribute was read before its assignment was seen: run once more.
            again = Analyzer(self.guard_functions, self.guard_attributes)
            again.project_modules = self.project_modules
            return again.analyze(module)
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
            device_named=rec.device_named,
            star_bindings=self.star_bindings,
            resolve_stars=self.resolve_stars if self.unresolved_stars else None,
            device_parameters={
                id(self.function_defs[name]): device_names
                for name, seeds in self.seeded.items()
                if name in self.function_defs
                and (
                    device_names := frozenset(
                        param for param, value in seeds.items() if may_be_accelerator(value.where)
                    )
                )
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


def analyze(
    module: cst.Module, guard_functions: Iterable[str] = (), origin: Path | None = None
) -> FileFacts:
    """Run the device-flow analysis over a parsed module; ``origin``, where the file is,
    resolves its star imports of the project's modules (``star_imports.py``)."""
    guards = frozenset(guard_functions)
    analyzer = Analyzer(guards, {})
    if origin is not None:
        analyzer.project_modules = ProjectModules(origin, guards, summarize)
    return analyzer.analyze(module)


def summarize(module: cst.Module, guard_functions: frozenset[str]) -> ModuleSummary:
    """What ``from <module> import *`` binds: its top-level code is run (its functions'
    bodies are not), each function is inlined once for unknown arguments, each dataset
    class's items placed; its own star imports of project modules stay unresolved."""
    analyzer = Analyzer(guard_functions, {})
    analyzer.block(module.body)
    analyzer.module_done = True
    exported = star_imports.exported_names(module)
    names = {
        key: star_imports.portable(value)
        for key, value in analyzer.module_env.items()
        if star_imports.is_exported(key, exported)
    }
    returns = {
        name: star_imports.portable(analyzer.inline_call(node, [], {}))
        for name, node in analyzer.function_defs.items()
    }
    items = {
        name: analyzer.item_placement(name, methods, [], {})
        for name, methods in analyzer.dataset_classes.items()
        if "__getitem__" in methods
    }
    return ModuleSummary(
        names,
        frozenset(analyzer.module_classes),
        frozenset(analyzer.stateless_classes),
        returns,
        items,
        tuple(analyzer.star_modules),
    )
