"""The interpreter's core: state, environments, joins and scoped context.

The device-flow analysis is one abstract interpretation per file. It walks the module in
execution order with an *environment* (``Env``) that maps names and dotted attribute
paths (``self.model``, ``cfg.[cuda]`` for ``cfg["cuda"]``) to abstract ``Value``s.
Imports are values too, so name resolution is the same mechanism as device flow.
Function bodies run after the module body, against its final environment, as they would
when called from a script's main code; module-level functions are also re-run at their
calls (bounded inlining) to learn what they return for the arguments given.

The interpreter is composed, not inherited: this core holds the state and one handler
object per module, each built with the core and reaching the others through it
(``self.core.calls.call(node)``); ``analyzer.new_interpreter`` assembles them:

- ``interpreter.py`` (this file): the state, ``Context`` (loop, guard, function, class,
  branches: set for a region with ``with core.scope(...)``, restored by the core, never
  by hand), environments and their joins, the fixpoint for loops;
- ``statements.py``: statements, loops and ``try``; ``branches.py``: ``if``;
  ``imports.py``: imports; ``definitions.py``: functions, classes and parameter values;
- ``expressions.py``: expressions; ``operators.py``: operators and comparisons;
- ``calls.py``: calls: this file's functions and classes, modules called, and the
  dispatch of torch APIs to ``effects.py`` (one handler per ``torch_api.Effect``);
  ``methods.py``: methods of tensors, modules and this file's objects;
- ``datasets.py``: instances of the file's own ``Dataset`` classes (where their items are,
  for the loaders over them); ``module_classes.py``: instances of its ``nn.Module``s;
- ``guards.py``: availability as a boolean value domain; ``requirements.py``: *CUDA
  required* contexts; ``torch_api.py``: the torch semantics table; ``name_guesses.py``: the name guesses;
- ``facts.py``: what rules read (records and the query API); ``values.py``: the lattice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import field, replace
from typing import TYPE_CHECKING

import libcst as cst

from devlint.analysis.facts import (
    AttributeStore,
    Branch,
    CallRecord,
    Conditional,
    HandedPlacement,
    Loop,
    Mix,
    Site,
)
from devlint.analysis.syntax import dotted_name, subscript_key
from devlint.analysis.values import (
    CPU,
    UNKNOWN,
    Kind,
    Placement,
    Step,
    Value,
    is_empty_container,
    join_binding,
    join_placement,
    may_be_accelerator,
)
from devlint.records import record
from devlint.torch_target import DEFAULT_TARGET_TORCH, TorchVersion

if TYPE_CHECKING:  # the handlers import this module; they are built by ``analyzer``
    from devlint.analysis.branches import Branches
    from devlint.analysis.calls import Calls
    from devlint.analysis.datasets import Datasets
    from devlint.analysis.definitions import Definitions
    from devlint.analysis.effects import Effects
    from devlint.analysis.expressions import Expressions
    from devlint.analysis.imports import Imports
    from devlint.analysis.inlining import Inlining
    from devlint.analysis.methods import Methods
    from devlint.analysis.module_classes import ModuleClasses
    from devlint.analysis.operators import Operators
    from devlint.analysis.statements import Statements

Env = dict[str, Value]
MAX_LOOP_PASSES = 3


@record(frozen=True, slots=True)
class Context:
    """Where the interpreter is: what a ``Site`` records besides *CUDA required*."""

    guarded: bool = False  # only runs where CUDA is available
    loop: Loop | None = None  # innermost loop over a data loader
    function: cst.FunctionDef | None = None
    class_name: str | None = None
    conditional: bool = False  # inside an ``if`` nested in the loader loop's body
    branches: tuple[Branch, ...] = ()
    backends_tested: frozenset[str] = frozenset()  # the if/elif chain this is the else of
    inner_loop: Loop | None = None  # innermost loop of any kind
    inner_conditional: bool = False  # inside an ``if`` nested in that loop's body
    # The loop whose body runs the innermost loop on each of its iterations (the inner
    # loop's statement not inside an ``if`` there), if any.
    outer_loop: Loop | None = None

    def changed(self, changes: dict[str, object]) -> Context:
        """This context with some fields changed (``dataclasses.replace`` without its
        introspection: this runs for every branch)."""
        if not changes:
            return self
        get = changes.get
        return Context(
            get("guarded", self.guarded),  # type: ignore[arg-type]
            get("loop", self.loop),  # type: ignore[arg-type]
            get("function", self.function),  # type: ignore[arg-type]
            get("class_name", self.class_name),  # type: ignore[arg-type]
            get("conditional", self.conditional),  # type: ignore[arg-type]
            get("branches", self.branches),  # type: ignore[arg-type]
            get("backends_tested", self.backends_tested),  # type: ignore[arg-type]
            get("inner_loop", self.inner_loop),  # type: ignore[arg-type]
            get("inner_conditional", self.inner_conditional),  # type: ignore[arg-type]
            get("outer_loop", self.outer_loop),  # type: ignore[arg-type]
        )


class Scope:
    """The context manager of ``Interpreter.scope`` (a class: the generator-based
    ``contextlib`` form costs a tenth of the analysis)."""

    __slots__ = ("changes", "interpreter", "saved")

    def __init__(self, interpreter: Interpreter, changes: dict[str, object]) -> None:
        self.interpreter, self.changes = interpreter, changes
        self.saved = interpreter.ctx

    def __enter__(self) -> Context:
        self.interpreter.ctx = self.saved.changed(self.changes)
        return self.interpreter.ctx

    def __exit__(self, *exc_info: object) -> None:
        self.interpreter.ctx = self.saved


@record(slots=True)
class Records:
    """What one analysis run records for the rules (swapped out while inlining a call)."""

    values: dict[int, Value] = field(default_factory=dict)
    calls: dict[int, CallRecord] = field(default_factory=dict)
    mixes: dict[int, Mix] = field(default_factory=dict)
    conditionals: dict[int, Conditional] = field(default_factory=dict)
    attribute_stores: list[AttributeStore] = field(default_factory=list)
    # ``self.attr`` read in a method, by node id; the reads that are the receiver of a move
    # (``self.mask.to(x.device)``) are also in ``moved_receivers``.
    attribute_loads: dict[int, tuple[str, str, str]] = field(default_factory=dict)
    moved_receivers: set[int] = field(default_factory=set)
    # CUDA literals that are a whole definition (``device = "cuda"``, a parameter or option
    # default): DEV003 reports them and can replace them by a selection.
    definition_literals: set[int] = field(default_factory=set)
    # Expressions assigned to a device-like name (``device = 0 if avail else -1``).
    device_named: set[int] = field(default_factory=set)
    # (function id, 0 for the module; name): a name assigned a device that is MPS, and one
    # that may still hold it where that code ends (a CUDA-or-CPU choice overridden by it).
    mps_assigned: set[tuple[int, str]] = field(default_factory=set)
    mps_at_end: set[tuple[int, str]] = field(default_factory=set)
    # ``torch.device("cuda")`` calls whose device is read outside every guard (a name read,
    # an argument, an attribute store): the default is in use (DEV003), by call id.
    read_defaults: dict[int, cst.Call] = field(default_factory=dict)
    # A project function's parameters given a device they place with (``FileFacts``).
    handed_placements: dict[int, tuple[HandedPlacement, ...]] = field(default_factory=dict)


@record(slots=True)
class PendingBody:
    """A function body to analyse once the enclosing code has run."""

    node: cst.FunctionDef
    context: Context
    cuda_required: bool = False  # where the ``def`` ran
    owner: str | None = None  # the module-level function it is (or is nested in)
    closure: Env | None = None  # a nested function: the enclosing function's names


class Interpreter:
    """The core: state and environment operations, and the handlers (attached by
    ``analyzer.new_interpreter``)."""

    statements: Statements
    branches: Branches
    imports: Imports
    definitions: Definitions
    expressions: Expressions
    operators: Operators
    effects: Effects
    calls: Calls
    methods: Methods
    inlining: Inlining
    datasets: Datasets
    module_classes: ModuleClasses

    def __init__(self, guard_functions: frozenset[str], guard_attributes: Env) -> None:
        self.guard_functions = guard_functions
        self.guard_leaf_names = frozenset(name.rsplit(".", 1)[-1] for name in guard_functions)
        # Attributes such as ``args.cuda`` that hold an availability test somewhere in the
        # file; a function may read one before the analysis reaches its assignment.
        self.guard_attributes: Env = dict(guard_attributes)
        self.seeded_guards = frozenset(guard_attributes)  # those known before this run
        self.missed_attributes: set[str] = set()
        # (id of a function, name) for each ``global name`` statement: a flag it sets there
        # is module state, read by the module's other functions as an attribute is.
        self.declared_globals: set[tuple[int, str]] = set()
        # By id of a function (its current run): ``kwargs.[device]`` and its value for
        # each ``kwargs["device"] = ...`` seen so far, which ``kwargs.get("device",
        # "cuda")`` there finds instead of the fallback.
        self.assigned_keys: dict[int, Env] = {}
        self.rec = Records()
        self.ctx = Context()
        self.module_env: Env = {}
        self.env: Env = self.module_env
        self.pending: list[PendingBody] = []
        self.attribute_parents: set[str] = set()  # ``a``, ``a.b`` for every ``a.b.c`` held
        self.module_done = False  # the module's top-level code has been analysed
        # In a comparison's operands, or the arguments of a torch API that computes nothing
        # (``torch.cuda.set_device(device)``): a device read there places nothing.
        self.comparing = False
        self.returns: list[Value] | None = None  # return values, while inlining
        # *CUDA required* (requirements.py): the flag on the current path, flow state that
        # is joined after branches like the environment.
        self.cuda_required = False
        self.exits_without_cuda = False  # a ``return`` where CUDA was not yet required
        self.owner: str | None = None  # the module-level function being analysed
        # Module-level functions: their calls (arguments, sites), reads of their names.
        self.local_calls: list[tuple[str, Site, str | None]] = []
        self.owned_records: list[tuple[CallRecord, str]] = []
        self.name_reads: Counter[str] = Counter()
        self.name_calls: Counter[str] = Counter()
        self.class_reads: Counter[str] = Counter()  # of this file's classes, calls included
        self.option_defaults: Env = {}  # ``--device`` options with a CUDA default, by dest
        # ``parser.parse_args()`` ran: the file is a program's entry, whose ``__main__``
        # block is how it runs, not a library module's demonstration
        self.parses_command_line = False
        self.missed_options: set[str] = set()  # ``args.device`` read before its option
        self.seeded_options: frozenset[str] = frozenset()  # those known before this run
        # Torch's global state: where factories and layers without ``device=`` land (the
        # CPU; unknown in a file that calls ``torch.set_default_device``: analyzer.py), and
        # whether floating factories are float64 (``torch.set_default_dtype``).
        self.default_device: Placement = CPU
        self.target_torch: TorchVersion = DEFAULT_TARGET_TORCH  # decides release tests
        self.default_device_set = False
        self.default_float64 = False
        self._last_site: tuple[Context, bool, Site] | None = None

    def close(self) -> None:
        """Drop the handlers once nothing runs the interpreter again: each holds the core,
        and without them reference counting frees the core (no cyclic garbage per file).
        The definitions stay reachable from the facts (``Loop.stepping``), so they let go
        of the core too."""
        del self.definitions.core
        del self.statements, self.branches, self.imports, self.definitions, self.expressions
        del self.operators
        del self.effects, self.calls, self.datasets, self.module_classes, self.methods
        del self.inlining

    # -- context

    def scope(self, **changes: object) -> Scope:
        """Run a region (``with self.scope(guarded=True):``) with the context changed; the
        previous context comes back after, however the region ends."""
        return Scope(self, changes)

    def narrow(self, **changes: object) -> None:
        """Change the context for the rest of the current scope (after an early exit)."""
        self.ctx = self.ctx.changed(changes)

    def site(self) -> Site:
        """The current site; one object while the context and *CUDA required* hold (most
        calls of a block share it)."""
        ctx, required = self.ctx, self.cuda_required
        last = self._last_site
        if last is not None and last[0] is ctx and last[1] == required:
            return last[2]
        site = Site(
            ctx.guarded,
            ctx.loop,
            ctx.function,
            ctx.class_name,
            ctx.conditional,
            ctx.branches,
            required,
            ctx.inner_loop,
            ctx.inner_conditional,
            ctx.outer_loop,
        )
        self._last_site = (ctx, required, site)
        return site

    # -- environment

    def lookup(self, name: str) -> Value | None:
        value = self.env.get(name)
        if value is None and self.env is not self.module_env:
            value = self.module_env.get(name)
        return value

    def method_key(self, key: str) -> tuple[str, str, str] | None:
        """``(class, method, attr)`` for ``self.attr`` read or written in a method."""
        ctx = self.ctx
        if ctx.class_name is None or ctx.function is None or not key.startswith("self."):
            return None
        return (ctx.class_name, ctx.function.name.value, key[len("self.") :])

    def note_path_stores(self, target: cst.BaseExpression, value: cst.IfExp) -> None:
        """``self.std = std if isinstance(std, str) else torch.tensor((std,))``: where the
        two sides are of different kinds the joined value is unknown, yet on the path
        that makes a tensor the attribute holds that tensor (dreamerv3-torch's ``MLP``,
        eval/blind161): one store more for each such side."""
        key = dotted_name(target)
        method_key = self.method_key(key) if key is not None else None
        joined = self.env.get(key) if key is not None else None
        if method_key is None or joined is None or joined.kind is Kind.TENSOR:
            return
        for side in (value.body, value.orelse):
            known = self.rec.values.get(id(side))
            if known is not None and known.kind is Kind.TENSOR:
                self.rec.attribute_stores.append(AttributeStore(*method_key, known, target))

    def bind(self, target: cst.BaseExpression, value: Value) -> None:
        """Assign ``value`` to a target: a name, attribute, subscript, tuple or starred."""
        if type(target) is cst.Name or type(target) is cst.Attribute:
            key = dotted_name(target)
            if key is not None:
                self.store(key, value, target)
            elif type(target) is cst.Attribute:
                self.expressions.expr(target.value)
        elif type(target) is cst.Tuple or type(target) is cst.List:
            elements = value.elements
            if elements is None or len(elements) != len(target.elements):
                elements = (element_of(value),) * len(target.elements)
            for item, element in zip(target.elements, elements, strict=True):
                self.bind(item.value, element)
        elif type(target) is cst.StarredElement:
            self.bind(target.value, value)
        elif type(target) is cst.Subscript:
            self.bind_subscript(target, value)

    def note_read(self, value: Value) -> None:
        """A device read outside every guard: its ``torch.device("cuda")`` defaults are
        in use (``Records.read_defaults``); one never read, or read only where CUDA is
        available, places nothing."""
        if value.cuda_defaults and not self.ctx.guarded and not self.comparing:
            for default in value.cuda_defaults:
                if type(default) is cst.Call:
                    self.rec.read_defaults[id(default)] = default

    def store(self, key: str, value: Value, target: cst.BaseExpression | None = None) -> None:
        """Bind a dotted key, forgetting what was known about its attributes."""
        method_key = self.method_key(key)
        if "." in key and method_key is None:
            # ``args.device = torch.device("cuda")``: handed on. The instance's own
            # ``self.device`` is in use where a method reads it, as a name is.
            self.note_read(value)
        self.env[key] = value
        self.remember(key)
        self.forget_attributes_of(key)
        if "." in key and method_key is None:
            self.replace_state(key, value)
        if method_key is not None and target is not None:
            self.rec.attribute_stores.append(AttributeStore(*method_key, value, target))
        if value.kind is Kind.GUARD and (
            "." in key or (id(self.ctx.function), key) in self.declared_globals
        ):
            self.guard_attributes[key] = value

    def replace_state(self, key: str, value: Value) -> None:
        """``cell.weight_hh.data = gru.weight_hh_l0.data``: a module of this code given
        a tensor from elsewhere as its state is now also where that tensor is (unknown if
        that is unknown), not only where it was built (RTVC's WaveRNN cells)."""
        root = key.split(".", 1)[0]
        module = self.env.get(root)
        if module is None or module.kind is not Kind.MODULE or module.where is None:
            return
        if value.kind is Kind.TENSOR or key.endswith(".data"):
            self.env[root] = replace(module, where=join_placement(module.where, value.where))

    def bind_subscript(self, target: cst.Subscript, value: Value) -> None:
        self.expressions.expr(target)
        key = subscript_key(target)
        if key is not None and value.kind is Kind.GUARD:
            self.store(key, value)  # ``cfg["cuda"] = torch.cuda.is_available()``
        if key is not None:
            self.assigned_keys.setdefault(id(self.ctx.function), {})[key] = value
        base = dotted_name(target.value)
        container = self.lookup(base) if base is not None else None
        if base and container and container.from_batch and value.kind is Kind.TENSOR:
            # ``batch[k] = batch[k].to(device)``: the batch is being moved.
            self.env[base] = Value(Kind.TENSOR, value.where)
        elif base and container and is_empty_container(container):
            # ``losses = {}`` then ``losses["g"] = g_loss``: a container of such tensors;
            # of modules (``models["g"] = G()``) or anything else: not a tensor
            self.env[base] = (
                Value(Kind.TENSOR, value.where) if value.kind is Kind.TENSOR else UNKNOWN
            )

    def bind_pairwise(self, target: cst.BaseExpression, source: cst.BaseExpression) -> bool:
        """``a, b = x, y``: bind element by element; False when the shapes differ."""
        if not (
            isinstance(target, cst.Tuple | cst.List)
            and isinstance(source, cst.Tuple | cst.List)
            and len(target.elements) == len(source.elements)
            and not any(isinstance(e, cst.StarredElement) for e in target.elements)
            and not any(isinstance(e, cst.StarredElement) for e in source.elements)
        ):
            return False
        values = [self.expressions.expr(e.value) for e in source.elements]
        for element, value in zip(target.elements, values, strict=True):
            self.bind(element.value, value)
        return True

    def remember(self, key: str) -> None:
        """Note that ``key`` (``self.net.fc``) is held: its parents may need forgetting."""
        while "." in key:
            key = key.rsplit(".", 1)[0]
            if key in self.attribute_parents:
                break
            self.attribute_parents.add(key)

    def forget_attributes_of(self, key: str) -> None:
        if key not in self.attribute_parents:
            return  # nothing like ``key.attr`` was ever stored: no scan (linear analysis)
        prefix = key + "."
        for name in [name for name in self.env if name.startswith(prefix)]:
            del self.env[name]

    def mark_reference(self, node: cst.BaseExpression | None) -> None:
        """The call's result is compared, returned or a default: not itself a placement."""
        record = self.rec.calls.get(id(node)) if node is not None else None
        if record is not None:
            record.reference_only = True

    def join_envs(self, envs: Sequence[Env]) -> Env:
        if not envs:
            return dict(self.env)
        if len(envs) == 1:
            return envs[0]
        result: Env = {}
        function = id(self.ctx.function)
        for key in set().union(*envs):
            present = [env[key] for env in envs if key in env]
            if (
                len(present) < len(envs)
                and (function, key) in self.declared_globals
                and key in self.module_env
            ):
                # a global bound on some paths only: the others still see the module's
                # (``synchronize = torch.cuda.synchronize`` under a guard, the module's
                # own ``synchronize`` elsewhere: functorch, eval/blind112)
                present.append(self.module_env[key])
            value = present[0]
            for other in present[1:]:
                value = join_binding(value, other)
            result[key] = value
        return result

    def join_outcomes(
        self, original: Env, before: Env, outcomes: list[tuple[Env, bool, bool]], required: bool
    ) -> None:
        """After branches: the join of the environments (and *CUDA required*) of the
        branches that fall through."""
        live = [(env, needs) for env, needs, exits in outcomes if not exits]
        self.cuda_required = required or (bool(live) and all(needs for _, needs in live))
        self.settle(original, self.join_envs([env for env, _ in live]) if live else before)

    def settle(self, original: Env, joined: Env) -> None:
        """Make ``joined`` the current environment, in the dict object the scope owns."""
        if joined is not original:
            original.clear()
            original.update(joined)
        self.env = original

    def loop_body(self, run_once: Callable[[], None]) -> None:
        """Run a loop body until the environment at its head stops changing."""
        for _ in range(MAX_LOOP_PASSES):
            head = dict(self.env)
            run_once()
            merged = self.join_envs([head, self.env])
            self.settle(self.env, merged)
            if merged == head:
                break


def element_of(value: Value) -> Value:
    """An element of a container (unpacking, iteration)."""
    if value.kind is Kind.TENSOR:
        if value.vector:  # ``for t in torch.linspace(0, 1, n):`` 0-dim tensors
            return replace(value, whole_batch=False, vector=False, scalar=True)
        return replace(value, whole_batch=False, listed=False)
    if value.kind is Kind.LOADER:
        return batch_of(value)
    if value.kind is Kind.DEVICE and value.constant is None:
        return value  # one of a literal list's devices (``expressions.container``)
    if value.kind is Kind.UNKNOWN and may_be_accelerator(value.where):
        # what a moved container holds is there (an unseen function's: ``computed_from``)
        return Value(Kind.UNKNOWN, value.where, computed_from=value.computed_from)
    return UNKNOWN


def batch_of(loader: Value, at: cst.CSTNode | None = None) -> Value:
    """One batch of a loader: on the CPU unless its dataset's tensors were moved. ``at``:
    where it is taken from a known loader (``for x, y in <loader>``, ``next(...)``)."""
    if loader.where and loader.where != CPU:
        return Value(
            Kind.TENSOR, loader.where, whole_batch=True, computed_from=loader.computed_from
        )
    note = "batch taken from the data loader here, on the CPU"
    placed = (Step(at, note),) if at is not None and loader.kind is Kind.LOADER else ()
    return Value(Kind.TENSOR, CPU, from_batch=True, whole_batch=True, placed=placed)
