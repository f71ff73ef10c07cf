"""The analysis of one file: run the interpreter over a module and hand the rules its facts.

``new_interpreter`` assembles the interpreter: its core and one handler per module
(``interpreter.py``). ``analyze`` runs the module's code, then the function bodies it
defined (twice where a body ran before the calls that say what it receives), then decides
the file-wide *CUDA required* contexts (``requirements.py``) and returns the
``FileFacts``. ``summarize`` runs only a module's top-level code, for the files that
star-import it (``project_imports.py``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import libcst as cst

from devlint.analysis import name_guesses, project_imports, requirements
from devlint.analysis.branches import Branches
from devlint.analysis.calls import Calls
from devlint.analysis.datasets import Datasets, receiver_of
from devlint.analysis.definitions import Definitions
from devlint.analysis.effects import Effects
from devlint.analysis.expressions import Expressions
from devlint.analysis.facts import FileFacts, placements
from devlint.analysis.guards import CUDA_AVAILABLE
from devlint.analysis.imports import Imports
from devlint.analysis.inlining import MAX_INLINED_SIZE, Inlining
from devlint.analysis.interpreter import Env, Interpreter, PendingBody
from devlint.analysis.methods import Methods
from devlint.analysis.module_classes import ModuleClasses
from devlint.analysis.operators import Operators
from devlint.analysis.project_flags import namespace_flags
from devlint.analysis.project_imports import (
    CallerCall,
    CallerSummary,
    ModuleSummary,
    ProjectModules,
)
from devlint.analysis.statements import Statements
from devlint.analysis.values import CPU, CUDA, Kind, Value, may_be_accelerator
from devlint.torch_target import DEFAULT_TARGET_TORCH, TorchVersion

# Statements of a function run for the flags on what it returns: argument parsers
# (``get_args()``: one ``add_argument`` per option) are long and cheap to run.
MAX_FLAGS_FUNCTION_SIZE = 400
# Rounds of re-running the bodies whose callers' arguments changed after they ran: one per
# level of a call chain defined in the "wrong" order (``get_batch`` above ``train`` above
# ``main``, each handed the CUDA-only ``fabric``).
SEED_ROUNDS = 3


def new_interpreter(
    guard_functions: frozenset[str],
    guard_attributes: Env,
    project_modules: ProjectModules | None = None,
    target: TorchVersion = DEFAULT_TARGET_TORCH,
) -> Interpreter:
    """An interpreter core with its handlers, one per module, each holding the core
    (``target``: the oldest torch the code runs on, ``target-torch``)."""
    core = Interpreter(guard_functions, guard_attributes)
    core.target_torch = target
    core.statements = Statements(core)
    core.branches = Branches(core)
    core.imports = Imports(core)
    core.definitions = Definitions(core)
    core.expressions = Expressions(core)
    core.operators = Operators(core)
    core.effects = Effects(core)
    core.calls = Calls(core)
    core.methods = Methods(core)
    core.inlining = Inlining(core)
    core.datasets = Datasets(core)
    core.module_classes = ModuleClasses(core)
    core.imports.project_modules = project_modules
    return core


def run(core: Interpreter, module: cst.Module) -> FileFacts:
    """Analyse a module with a new interpreter core; the ``FileFacts`` for the rules."""
    definitions = core.definitions
    project_modules = core.imports.project_modules
    origin = project_modules.origin if project_modules else None
    own = frozenset(Path(os.path.abspath(origin)).parent.parts if origin else ())
    cuda_module = requirements.imports_cuda_only_package(module, own)
    definitions.cuda_module = core.cuda_required = cuda_module
    if project_modules is not None:
        core.imports.caller_calls = project_modules.callers()
        if project_modules.importers_set_default_device():
            core.default_device = None  # NeuS's ``exp_runner.py``: a CUDA tensor type
    core.statements.block(module.body)
    definitions.note_mps_at_end(0)
    core.module_done = True
    core.pending = _callers_first(core.pending)
    definitions.run_pending()
    for _ in range(SEED_ROUNDS):
        if not _reseed(core):
            break
        definitions.run_pending()
    fresh = _run_again(core)
    if fresh is not None:
        return run(fresh, module)
    decide_requirements(core, module)
    facts = _file_facts(core)
    if facts.resolve_stars is None:  # nothing runs the interpreter again
        core.close()
    return facts


def _run_again(core: Interpreter) -> Interpreter | None:
    """A fresh core when what the run learned late changes what it read early; None when
    the run stands."""
    flags = core.guard_attributes.keys() - core.seeded_guards
    missed = {name_guesses.aliased_flag(key, flags) or key for key in core.missed_attributes}
    if missed & flags:
        # A guard attribute was read before its assignment was seen: run once more.
        return again(core, core.guard_attributes)
    if core.missed_options & (core.option_defaults.keys() - core.seeded_options):
        # ``main(args)`` read ``args.device`` before the body of a parser builder too big
        # to inline registered ``--device``: run once more with the options known.
        options = core.option_defaults
        fresh = again(core, core.guard_attributes)
        fresh.option_defaults, fresh.seeded_options = dict(options), frozenset(options)
        return fresh
    if core.default_device_set and core.default_device == CPU:
        # ``torch.set_default_device(...)`` somewhere: factories and layers without
        # ``device=`` anywhere may land there, before or after it runs.
        fresh = again(core, core.guard_attributes)
        fresh.default_device = None
        return fresh
    return None


def _file_facts(core: Interpreter) -> FileFacts:
    """What the finished run tells the rules."""
    definitions = core.definitions
    rec, imports = core.rec, core.imports
    return FileFacts(
        calls=list(rec.calls.values()),
        mixes=list(rec.mixes.values()),
        conditionals=list(rec.conditionals.values()),
        values=rec.values,
        attribute_stores=rec.attribute_stores,
        attribute_loads={
            key for node, key in rec.attribute_loads.items() if node not in rec.moved_receivers
        },
        module_classes=definitions.module_classes,
        module_names=core.module_env,
        definition_literals=rec.definition_literals,
        read_defaults=rec.read_defaults,
        handed_placements=rec.handed_placements,
        device_named=rec.device_named,
        mps_at_end=rec.mps_at_end,
        star_bindings=imports.star_bindings,
        resolve_stars=imports.resolve_stars if imports.unresolved_stars else None,
        device_parameters={
            id(definitions.function_defs[name]): device_names
            for name, seeds in definitions.seeded.items()
            if name in definitions.function_defs
            and (
                device_names := frozenset(
                    param for param, value in seeds.items() if may_be_accelerator(value.where)
                )
            )
        },
    )


def _reseed(core: Interpreter) -> bool:
    """Queue the bodies that ran before the calls that say what they receive; whether
    there are any. A function's (``main()`` calls ``evaluate(model, loader)`` defined
    above it), and a class's whose ``__init__`` ran before the calls that construct it:
    its methods, from fresh attributes."""
    definitions = core.definitions
    for name, item in list(definitions.bodies.items()):
        if definitions.parameter_seeds(item.node) != definitions.seeded.get(name, {}):
            core.pending.append(item)
    for class_name, items in definitions.class_bodies.items():
        init = next((item for item in items if item.node.name.value == "__init__"), None)
        if init is not None and definitions.constructor_seeds(
            class_name, init.node
        ) != definitions.constructor_seeded.get(class_name, {}):
            definitions.class_attributes.pop(class_name, None)
            core.pending.extend(items)
    return bool(core.pending)


def _callers_first(pending: list[PendingBody]) -> list[PendingBody]:
    """The module's bodies: its functions in their order (``get_args()`` registers the
    options before ``main`` reads them), then its classes, the last defined first, each
    class's methods in their own order. A model's ``__init__`` builds the blocks defined
    above it (``Block(dim, device)``): their calls are seen before the blocks' bodies
    run, so far fewer bodies run twice."""
    functions = [item for item in pending if item.context.class_name is None]
    groups: list[list[PendingBody]] = []
    for item in pending:
        name = item.context.class_name
        if name is None:
            continue
        if groups and groups[-1][0].context.class_name == name:
            groups[-1].append(item)
        else:
            groups.append([item])
    return functions + [item for group in reversed(groups) for item in group]


def again(core: Interpreter, guard_attributes: Env) -> Interpreter:
    """A fresh interpreter for one more run over the module, with this one's project
    modules; an entry script's caller analysis keeps only the last run's calls."""
    imports = core.imports
    fresh = new_interpreter(
        core.guard_functions, guard_attributes, imports.project_modules, core.target_torch
    )
    if imports.project_calls is not None:
        imports.project_calls.clear()
        fresh.imports.project_calls = imports.project_calls
    core.close()
    return fresh


def _reached_otherwise(
    core: Interpreter, module: cst.Module, owners: set[str], private_classes: frozenset[str]
) -> set[str]:
    """Of ``owners``, those reached from places this file does not show: a function used
    as a value, a private method referenced other than by ``self._name(...)``, a private
    class subclassed or read other than to construct it (a factory, ``isinstance``)."""
    definitions = core.definitions
    methods = {owner for owner in owners if "." in owner}  # ``Class._name``
    used = {
        owner for owner in owners - methods - private_classes if definitions.used_as_value(owner)
    }
    used |= {
        name
        for name in owners & private_classes
        if name in definitions.base_names or core.class_reads[name] > core.name_calls[name]
    }
    if methods:
        used |= requirements.private_methods_reached_otherwise(module, methods, core.local_calls)
    return used


def decide_requirements(core: Interpreter, module: cst.Module) -> None:
    """File-wide *CUDA required*: functions held by their callers, stream-creating
    modules, CUDA integration libraries (requirements.py)."""
    if core.owned_records:
        # what holds DEV011 candidates, and the private classes constructed between
        # them and their callers (``_GraphCache.run`` constructs ``_CapturedCall``)
        private_classes = frozenset(
            name for name in core.definitions.class_parents if requirements.is_private(name)
        )
        owners = {owner for _, owner in core.owned_records}
        owners |= {name for name, _, _ in core.local_calls} & private_classes
        used = _reached_otherwise(core, module, owners, private_classes)
        requirements.callers_require_cuda(
            core.owned_records, core.local_calls, used, private_classes
        )
    records = core.rec.calls.values()
    if core.statements.refuses_without_cuda and requirements.is_library_module(module):
        for record in records:
            record.site = replace(record.site, cuda_required=True)


def analyze(
    module: cst.Module,
    guard_functions: Iterable[str] = (),
    origin: Path | None = None,
    target: TorchVersion = DEFAULT_TARGET_TORCH,
) -> FileFacts:
    """Run the device-flow analysis over a parsed module; ``origin``, where the file is,
    resolves its star imports of the project's modules (``project_imports.py``);
    ``target``, the oldest torch it runs on, decides tests of the torch release."""
    guards = frozenset(guard_functions)
    if origin is None:
        return run(new_interpreter(guards, {}, None, target), module)
    project_modules = ProjectModules(origin, guards, summarize, caller_summary)
    flags, scripts = namespace_flags(origin)
    project_modules.read.update(scripts)
    seeded = {flag: CUDA_AVAILABLE for flag in flags}  # ``args.use_gpu`` set by a script
    # ``cuda.CUDA_ENABLED`` set by a script, read as ``CUDA_ENABLED`` in ``cuda.py`` itself
    own = f"{origin.stem}."
    seeded.update({flag[len(own) :]: CUDA_AVAILABLE for flag in flags if flag.startswith(own)})
    return run(new_interpreter(guards, seeded, project_modules, target), module)


def caller_summary(module: cst.Module, modules: ProjectModules) -> CallerSummary:
    """What an entry script passes to the functions of the project modules it imports:
    the script is analysed in full (its own project imports resolved, its callers not),
    and each call of such a function is kept, its values made portable."""
    core = new_interpreter(modules.guard_functions, {}, modules)
    imports = core.imports  # ``run`` closes the core
    calls: list[tuple[str, CallerCall]] = []
    imports.project_calls = calls
    run(core, module)
    found: CallerSummary = {}
    for callee, call in calls:
        origin = imports.project_origin(callee)
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


def _follows_inputs(core: Interpreter, node: cst.FunctionDef) -> bool:
    """Whether a small function may return on the device of the tensors it is given (one
    of its returns, run with every positional parameter a CUDA tensor)."""
    positional = node.params.params
    body = node.body
    if not positional or not isinstance(body, cst.IndentedBlock):
        return False
    if len(body.body) > MAX_INLINED_SIZE:
        return False
    probe = Value(Kind.TENSOR, CUDA)
    env = core.inlining.argument_env(node, [probe] * len(positional), {})
    return any(may_be_accelerator(value.where) for value in core.inlining.detached(node, env)[1])


def _placing_parameters(core: Interpreter, node: cst.FunctionDef) -> tuple[tuple[int, str], ...]:
    """The parameters of a small function that it places things with outside every guard
    (``.to(p)``, ``device=p``, ``map_location=torch.device(p)``): the placements that
    CUDA marks reach, each parameter marked as its own default. Run twice: with each a
    CUDA device, and with each of unknown kind on CUDA, as the tensors it may be
    (``to_device(data, device)`` tests ``isinstance(data, torch.Tensor)`` and moves it)."""
    body = node.body
    if not isinstance(body, cst.IndentedBlock) or len(body.body) > MAX_INLINED_SIZE:
        return ()
    named = [*node.params.params, *node.params.kwonly_params]
    if not named:
        return ()
    marks = {param.name.value: param.name for param in named}
    reached: set[int] = set()
    for kind in (Kind.DEVICE, Kind.UNKNOWN):
        env = core.inlining.argument_env(node, [], {})
        for name, mark in marks.items():
            env[name] = Value(kind, CUDA, cuda_defaults=(mark,))
        records = core.inlining.detached(node, env)[2]
        reached.update(
            id(default)
            for call in records.calls.values()
            if not call.site.guarded
            for _, value, _ in placements(call, records.values)
            for default in value.cuda_defaults
        )
    positional = {param.name.value: index for index, param in enumerate(node.params.params)}
    return tuple(
        (positional.get(name, -1), name) for name, mark in marks.items() if id(mark) in reached
    )


def _returned_flags(core: Interpreter, node: cst.FunctionDef) -> dict[str, Value]:
    """The availability flags set on the object a function ends by returning
    (``return args`` after ``args.cuda = ... torch.cuda.is_available()``)."""
    body = node.body
    last = body.body[-1] if isinstance(body, cst.IndentedBlock) and body.body else None
    if not isinstance(last, cst.SimpleStatementLine) or len(body.body) > MAX_FLAGS_FUNCTION_SIZE:
        return {}
    returned = last.body[0]
    if not isinstance(returned, cst.Return) or not isinstance(returned.value, cst.Name):
        return {}
    env = core.inlining.detached(node, core.inlining.argument_env(node, [], {}))[0]
    return _flags_on(env, returned.value.value)


def _instance_flags(core: Interpreter, name: str, init: cst.FunctionDef | None) -> dict[str, Value]:
    """The availability flags a class's ``__init__`` sets on the instance
    (``self.use_gpu = torch.cuda.is_available() and use_gpu``), for any arguments."""
    if init is None or not isinstance(init.body, cst.IndentedBlock):
        return {}
    receiver = receiver_of(init)
    if not receiver or len(init.body.body) > MAX_FLAGS_FUNCTION_SIZE:
        return {}
    env = core.inlining.argument_env(init, [], {}, bound=1)
    return _flags_on(core.inlining.detached(init, env, class_name=name)[0], receiver)


def _flags_on(env: Env, holder: str) -> dict[str, Value]:
    """The availability flags ``env`` holds as attributes of ``holder`` (``args.cuda``)."""
    prefix = holder + "."
    return {
        key[len(prefix) :]: project_imports.portable(value)
        for key, value in env.items()
        if key.startswith(prefix) and "." not in key[len(prefix) :] and value.kind is Kind.GUARD
    }


def summarize(module: cst.Module, guard_functions: frozenset[str]) -> ModuleSummary:
    """What ``from <module> import *`` binds: its top-level code is run (its functions'
    bodies are not), each function is inlined once for unknown arguments, each dataset
    class's items placed; its own star imports of project modules stay unresolved."""
    core = new_interpreter(guard_functions, {})
    definitions = core.definitions
    core.statements.block(module.body)
    core.module_done = True
    exported = project_imports.exported_names(module)
    names = {
        key: project_imports.portable(value)
        for key, value in core.module_env.items()
        if project_imports.is_exported(key, exported)
    }
    returns = {
        name: project_imports.portable(core.inlining.call(node, [], {}))
        for name, node in definitions.function_defs.items()
    }
    items = {
        name: core.datasets.item_placement(name, methods, [], {})
        for name, methods in definitions.dataset_classes.items()
        if "__getitem__" in methods
    }
    follows = frozenset(
        name
        for name, node in definitions.function_defs.items()
        if not may_be_accelerator(returns[name].where) and _follows_inputs(core, node)
    )
    summary = ModuleSummary(
        names,
        frozenset(definitions.module_classes),
        frozenset(definitions.stateless_classes),
        returns,
        items,
        tuple(core.imports.star_modules),
        follows,
        {
            name: flags
            for name, node in definitions.function_defs.items()
            if (flags := _returned_flags(core, node))
        },
        {
            name: flags
            for name, methods in definitions.class_methods.items()
            if (flags := _instance_flags(core, name, methods.get("__init__")))
        },
        {
            name: placing
            for name, node in definitions.function_defs.items()
            if (placing := _placing_parameters(core, node))
        },
    )
    core.close()
    return summary
