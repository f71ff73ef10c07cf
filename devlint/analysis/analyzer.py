"""The analysis of one file: run the interpreter over a module and hand the rules its facts.

``analyze`` runs the module's code, then the function bodies it defined (twice where a
body ran before the calls that say what it receives), then decides the file-wide *CUDA
required* contexts (``requirements.py``) and returns the ``FileFacts``. ``summarize``
runs only a module's top-level code, for the files that star-import it
(``project_imports.py``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import libcst as cst

from devlint.analysis import name_guesses, project_imports, requirements
from devlint.analysis.calls import MAX_INLINED_SIZE
from devlint.analysis.facts import FileFacts
from devlint.analysis.interpreter import Env
from devlint.analysis.module_classes import ModuleClassInterpreter
from devlint.analysis.project_imports import (
    CallerCall,
    CallerSummary,
    ModuleSummary,
    ProjectModules,
)
from devlint.analysis.values import CPU, CUDA, Kind, Value, may_be_accelerator

# Statements of a function run for the flags on what it returns: argument parsers
# (``get_args()``: one ``add_argument`` per option) are long and cheap to run.
MAX_FLAGS_FUNCTION_SIZE = 400


class Analyzer(ModuleClassInterpreter):
    """Builds ``FileFacts`` for one module. Use ``analyze``."""

    def analyze(self, module: cst.Module) -> FileFacts:
        origin = self.project_modules.origin if self.project_modules else None
        own = frozenset(Path(os.path.abspath(origin)).parent.parts if origin else ())
        self.cuda_module = self.cuda_required = requirements.imports_cuda_only_package(module, own)
        if self.project_modules is not None:
            self.caller_calls = self.project_modules.callers()
        self.block(module.body)
        self.note_mps_at_end(0)
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
            return self.again(self.guard_attributes).analyze(module)
        if self.default_device_set and self.default_device == CPU:
            # ``torch.set_default_device(...)`` somewhere: factories and layers without
            # ``device=`` anywhere may land there, before or after it runs.
            again = self.again(self.guard_attributes)
            again.default_device = None
            return again.analyze(module)
        self.decide_requirements(module)
        rec = self.rec
        return FileFacts(
            calls=list(rec.calls.values()),
            mixes=list(rec.mixes.values()),
            conditionals=list(rec.conditionals.values()),
            values=rec.values,
            attribute_stores=rec.attribute_stores,
            attribute_loads={
                key for node, key in rec.attribute_loads.items() if node not in rec.moved_receivers
            },
            module_classes=self.module_classes,
            module_names=self.module_env,
            definition_literals=rec.definition_literals,
            read_defaults=rec.read_defaults,
            device_named=rec.device_named,
            mps_at_end=rec.mps_at_end,
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

    def again(self, guard_attributes: Env) -> Analyzer:
        """A fresh analyzer for one more run over the module, with this one's project
        modules; an entry script's caller analysis keeps only the last run's calls."""
        again = Analyzer(self.guard_functions, guard_attributes)
        again.project_modules = self.project_modules
        if self.project_calls is not None:
            self.project_calls.clear()
            again.project_calls = self.project_calls
        return again

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
    resolves its star imports of the project's modules (``project_imports.py``)."""
    guards = frozenset(guard_functions)
    analyzer = Analyzer(guards, {})
    if origin is not None:
        analyzer.project_modules = ProjectModules(origin, guards, summarize, caller_summary)
    return analyzer.analyze(module)


def caller_summary(module: cst.Module, modules: ProjectModules) -> CallerSummary:
    """What an entry script passes to the functions of the project modules it imports:
    the script is analysed in full (its own project imports resolved, its callers not),
    and each call of such a function is kept, its values made portable."""
    analyzer = Analyzer(modules.guard_functions, {})
    analyzer.project_modules = modules
    calls: list[tuple[str, CallerCall]] = []
    analyzer.project_calls = calls
    analyzer.analyze(module)
    found: CallerSummary = {}
    for callee, call in calls:
        origin = analyzer.project_origin(callee)
        path = modules.path_of(origin[0], origin[1]) if origin is not None else None
        if origin is None or path is None:
            continue
        portable = CallerCall(
            tuple(project_imports.portable(value) for value in call.args),
            {key: project_imports.portable(value) for key, value in call.keywords.items()},
            {
                key: {name: project_imports.portable(flag) for name, flag in given.items()}
                for key, given in call.flags.items()
            },
        )
        found.setdefault(path, {}).setdefault(origin[2], []).append(portable)
    return found


def _follows_inputs(analyzer: Analyzer, node: cst.FunctionDef) -> bool:
    """Whether a small function may return on the device of the tensors it is given (one
    of its returns, run with every positional parameter a CUDA tensor)."""
    positional = node.params.params
    body = node.body
    if not positional or not isinstance(body, cst.IndentedBlock):
        return False
    if len(body.body) > MAX_INLINED_SIZE:
        return False
    probe = Value(Kind.TENSOR, CUDA)
    env = analyzer.argument_env(node, [probe] * len(positional), {})
    return any(may_be_accelerator(value.where) for value in analyzer.detached(node, env)[1])


def _returned_flags(analyzer: Analyzer, node: cst.FunctionDef) -> dict[str, Value]:
    """The availability flags set on the object a function ends by returning
    (``return args`` after ``args.cuda = ... torch.cuda.is_available()``)."""
    body = node.body
    last = body.body[-1] if isinstance(body, cst.IndentedBlock) and body.body else None
    if not isinstance(last, cst.SimpleStatementLine) or len(body.body) > MAX_FLAGS_FUNCTION_SIZE:
        return {}
    returned = last.body[0]
    if not isinstance(returned, cst.Return) or not isinstance(returned.value, cst.Name):
        return {}
    prefix = returned.value.value + "."
    env = analyzer.detached(node, analyzer.argument_env(node, [], {}))[0]
    return {
        key[len(prefix) :]: project_imports.portable(value)
        for key, value in env.items()
        if key.startswith(prefix) and "." not in key[len(prefix) :] and value.kind is Kind.GUARD
    }


def summarize(module: cst.Module, guard_functions: frozenset[str]) -> ModuleSummary:
    """What ``from <module> import *`` binds: its top-level code is run (its functions'
    bodies are not), each function is inlined once for unknown arguments, each dataset
    class's items placed; its own star imports of project modules stay unresolved."""
    analyzer = Analyzer(guard_functions, {})
    analyzer.block(module.body)
    analyzer.module_done = True
    exported = project_imports.exported_names(module)
    names = {
        key: project_imports.portable(value)
        for key, value in analyzer.module_env.items()
        if project_imports.is_exported(key, exported)
    }
    returns = {
        name: project_imports.portable(analyzer.inline_call(node, [], {}))
        for name, node in analyzer.function_defs.items()
    }
    items = {
        name: analyzer.item_placement(name, methods, [], {})
        for name, methods in analyzer.dataset_classes.items()
        if "__getitem__" in methods
    }
    follows = frozenset(
        name
        for name, node in analyzer.function_defs.items()
        if not may_be_accelerator(returns[name].where) and _follows_inputs(analyzer, node)
    )
    return ModuleSummary(
        names,
        frozenset(analyzer.module_classes),
        frozenset(analyzer.stateless_classes),
        returns,
        items,
        tuple(analyzer.star_modules),
        follows,
        {
            name: flags
            for name, node in analyzer.function_defs.items()
            if (flags := _returned_flags(analyzer, node))
        },
    )
