"""The device-flow analysis: one abstract interpretation per file.

The analyzer walks the module once, in execution order, keeping an environment that
maps names (and dotted attribute paths such as ``self.model``) to abstract ``Value``s.
Imports are values too, so name resolution through every import form is the same
mechanism as device flow. Function bodies run after the module body, against the
module's final environment, as they would when called from a script's main code.

Along the way it records, for the rules: every call with the values of its parts
(``CallRecord``), every operation that combines tensors (``Mix``), every conditional
(``Conditional``), whether each point is *guarded* by a CUDA availability test, and the
if/else, conditional-expression and try/except parts it runs in (``Site.branches``).
Branches are joined; loops run to a fixpoint (bounded); early exits guard the rest of
their block.

*CUDA required* (``Site.cuda_required``) is weaker than guarded: nothing tested for CUDA,
but the code is written to run with CUDA only, by a contract visible in the file. It holds
- in a branch on DDP ``device_ids is not None`` (CUDA device ids, by torch's contract):
  branch-local, joined after ``if`` and ``try``, dropped after loops, comprehensions and
  the right of ``and``/``or``; a function defined in the branch inherits it. An earlier
  call that merely raises without CUDA (``.cuda()``, ``torch.cuda.synchronize()``,
  ``init_process_group("nccl")``) does not count: each unguarded call is its own report,
  as users label them;
- in every method of a class whose ``__init__`` requires CUDA (or is guarded: ``if not
  torch.cuda.is_available(): raise``) on each path that returns;
- in a method named for CUDA (``def cuda(self)``, ``def _replay_cuda_graph``);
- in a module-level function named for CUDA that this file never calls from code where
  CUDA is not required, and in one that this file calls, only from such code (and never
  uses as a value): its callers hold the precondition (``_callers_require_cuda``);
- everywhere in a module that imports a ``torch_api.CUDA_ONLY_PACKAGES`` package at module
  level, unconditionally or under ``if is_..._available():`` (not inside ``try``, which
  means an optional dependency);
- everywhere in a module that creates CUDA streams (``torch.cuda.Stream()``) outside any
  if/try branch: streams have no meaning without CUDA, such code is CUDA code by design;
- everywhere in a library module (no code at its top level that runs work: no calls, loops
  or ``__main__`` block) with a function that refuses to run without CUDA in words
  (``if not torch.cuda.is_available(): raise ImportError("... requires CUDA")``): the module
  is a CUDA integration whose callers come through that gate (``_is_library_module``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import libcst as cst

from devlint.analysis import torch_api
from devlint.analysis.facts import (
    AttributeStore,
    Branch,
    CallRecord,
    Conditional,
    FileFacts,
    LoaderLoop,
    Mix,
    Operand,
    Site,
)
from devlint.analysis.values import (
    ANY_DEVICE,
    CPU,
    CUDA,
    UNKNOWN,
    Kind,
    Placement,
    Value,
    is_cpu,
    join,
    join_placement,
    join_placements,
    placement_of_device_string,
)

MAX_LOOP_PASSES = 3
_CUDA_NAMED = re.compile(r"cuda|gpu", re.IGNORECASE)
# Helpers such as ``is_torch_cuda_available()`` or ``has_cuda()`` are availability checks.
_GUARD_NAME = re.compile(r"^(is_)?(torch_)?(cuda|gpu)(_is)?_available$|^has_(cuda|gpu)$")
# A function named for CUDA (``def cuda``, ``_replay_cuda_graph``) is written for CUDA; one
# that also names an alternative or a check (``to_gpu_or_cpu``, ``is_gpu_available``) is not.
_CUDA_CONTRACT_NAME = re.compile(r"cuda|gpu|nccl", re.IGNORECASE)
_NOT_CUDA_CONTRACT_NAME = re.compile(
    r"cpu|mps|xpu|avail|has_|maybe|fallback|select|choose|detect|auto|_or_|_if_|^if_|no_",
    re.IGNORECASE,
)

Env = dict[str, Value]


@dataclass(slots=True)
class _Pending:
    """A function body to analyse once the enclosing code has run."""

    node: cst.FunctionDef
    guarded: bool
    class_name: str | None
    branches: tuple[Branch, ...] = ()
    cuda_required: bool = False  # where the ``def`` ran (see *CUDA required*)
    owner: str | None = None  # the module-level function it is (or is nested in)
    closure: Env | None = None  # a nested function: the enclosing function's names


_SEEDED_KINDS = (Kind.TENSOR, Kind.MODULE, Kind.LOADER, Kind.DEVICE)
MAX_INLINED_CALLS = 200  # per file: analysis time stays linear in the file's size
MAX_INLINED_SIZE = 25  # top-level statements of a function analysed at its calls
MAX_INLINED_DEPTH = 2  # a helper's own helper (``visible()`` returning ``list(range(count()))``)
MAX_NESTED_INLINED_SIZE = 3  # ... when it is a one-liner or close to it


def dotted_name(expr: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else None."""
    parts: list[str] = []
    while type(expr) is cst.Attribute:  # `type() is`: isinstance on libcst's ABCs is slow
        parts.append(expr.attr.value)
        expr = expr.value
    if type(expr) is not cst.Name:
        return None
    parts.append(expr.value)
    return ".".join(reversed(parts))


def _module_name(expr: cst.BaseExpression | None) -> str:
    if expr is None:
        return ""
    return dotted_name(expr) or ""


def _is_device_like_name(name: str) -> bool:
    last = name.rsplit(".", 1)[-1].lower()
    return last in torch_api.DEVICE_NAMES or last.endswith("_device") or last.startswith("device_")


def _is_loader_like_name(name: str) -> bool:
    last = name.rsplit(".", 1)[-1].lower()
    return "loader" in last or last in ("dl", "train_dl", "val_dl", "test_dl", "valid_dl")


def _is_settings_holder(expr: cst.BaseExpression) -> bool:
    """``self``, ``args``, ``config``...: objects whose ``.device`` is a chosen device."""
    name = dotted_name(expr)
    if name is None:
        return False
    last = name.rsplit(".", 1)[-1].lower()
    return last in (
        "self",
        "cls",
        "args",
        "opt",
        "opts",
        "options",
        "config",
        "cfg",
        "conf",
        "hparams",
        "hp",
        "settings",
        "params",
        "trainer",
        "accelerator",
        "state",
    )


def _is_loss_like_name(name: str) -> bool:
    last = name.rsplit(".", 1)[-1].lower()
    return "loss" in last or "criterion" in last


def _string_value(expr: cst.BaseExpression) -> str | None:
    """The value of a string literal; plain ones without ``literal_eval`` (a hot path)."""
    if isinstance(expr, cst.SimpleString):
        raw = expr.value
        if raw[0] in "'\"" and "\\" not in raw:
            return raw[3:-3] if raw[:3] in ('"""', "'''") else raw[1:-1]
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _number_value(node: cst.Integer | cst.Float) -> object:
    """The value of a number literal, without ``literal_eval`` where plain."""
    try:
        text = node.value.replace("_", "")
        return int(text, 0) if isinstance(node, cst.Integer) else float(text)
    except ValueError:  # 0o17-style octal is fine for int(..., 0); this is the rest
        return node.evaluated_value


class Analyzer:
    """Builds ``FileFacts`` for one module. Use ``analyze``."""

    def __init__(
        self, guard_functions: Iterable[str] = (), guard_attributes: Env | None = None
    ) -> None:
        self.guard_functions = frozenset(guard_functions)
        # Attributes such as ``args.cuda`` that hold an availability test somewhere in the
        # file; a function may read one before the analysis reaches its assignment.
        self.guard_attributes: Env = dict(guard_attributes or {})
        self.missed_attributes: set[str] = set()
        self._seeded = frozenset(self.guard_attributes)
        self.guard_leaf_names = frozenset(name.rsplit(".", 1)[-1] for name in guard_functions)
        self.values: dict[int, Value] = {}
        self.calls: dict[int, CallRecord] = {}
        self.mixes: dict[int, Mix] = {}
        self.conditionals: dict[int, Conditional] = {}
        self.module_env: Env = {}
        self.env: Env = self.module_env
        self.guarded = False
        self.loop: LoaderLoop | None = None
        self.function: cst.FunctionDef | None = None
        self.backends_tested: frozenset[str] = frozenset()
        self.pending: list[_Pending] = []
        self.module_classes: set[str] = set()
        self.stateless_classes: set[str] = set()  # module classes without parameters (losses)
        # The methods of the module classes, and which compute on the module's device
        # (``decode``; decided at the first call, see ``computes_like_forward``).
        self.module_methods: dict[str, dict[str, cst.FunctionDef]] = {}
        self.compute_methods: dict[tuple[str, str], bool] = {}
        self.class_attributes: dict[str, Env] = {}
        self.class_name: str | None = None
        self.conditional = False
        self.branches: tuple[Branch, ...] = ()  # see ``Site.branches``
        self.attribute_stores: list[AttributeStore] = []
        self.attribute_loads: set[tuple[str, str, str]] = set()
        self.attribute_parents: set[str] = set()  # ``a``, ``a.b`` for every ``a.b.c`` held
        # Module-level functions, analysed again at a call with the caller's arguments
        # (``preds = predict(model, x)``) to learn what they return; see ``inline_call``.
        self.function_defs: dict[str, cst.FunctionDef] = {}
        self.returns: list[Value] | None = None  # return values, while inlining
        self.inline_depth = 0
        self.inline_budget = MAX_INLINED_CALLS
        self.inlined: dict[tuple[object, ...], Value] = {}  # inline_call's answers
        self.module_done = False  # the module's top-level code has been analysed
        # *CUDA required* (see the module docstring): the flag for the current path, the
        # classes whose ``__init__`` requires CUDA, the module-level function being
        # analysed (``owner``), and what ``_callers_require_cuda`` decides on at the end.
        self.cuda_required = False
        self.cuda_module = False
        self.refuses_without_cuda = False  # a function here refuses to run without CUDA
        self.cuda_classes: set[str] = set()
        self.owner: str | None = None
        self.exits_without_cuda = False  # a ``return`` where CUDA was not yet required
        self.local_calls: list[tuple[str, Site, str | None]] = []  # f(...), site, owner
        # Module-level functions called in this file: the arguments of each call, how
        # often the name is read and how often called (more reads: also used as a value),
        # and the parameter values each body was analysed with (see ``parameter_seeds``).
        self.call_args: dict[str, list[tuple[tuple[Value, ...], dict[str, Value]]]] = {}
        self.name_reads: Counter[str] = Counter()
        self.name_calls: Counter[str] = Counter()
        self.seeded: dict[str, dict[str, Value]] = {}
        self.bodies: dict[str, _Pending] = {}
        self.owned_records: list[tuple[CallRecord, str]] = []

    # ------------------------------------------------------------------ entry point

    def analyze(self, module: cst.Module) -> FileFacts:
        self.cuda_module = self.cuda_required = _imports_cuda_only_package(module)
        self.block(module.body)
        self.module_done = True
        self.run_pending()
        # A function's body may have run before the calls that say what it receives
        # (``main()`` calls ``evaluate(model, loader)`` defined above it): once more.
        for name, item in list(self.bodies.items()):
            if self.parameter_seeds(item.node) != self.seeded.get(name, {}):
                self.pending.append(item)
        self.run_pending()
        if self.missed_attributes & (self.guard_attributes.keys() - self._seeded):
            # A guard attribute was read before its assignment was seen: run once more.
            return Analyzer(self.guard_functions, self.guard_attributes).analyze(module)
        self._callers_require_cuda(module)
        if any(  # unconditionally: not one side of a version or availability test
            record.callee in torch_api.CUDA_STREAMS and not record.site.branches
            for record in self.calls.values()
        ) or (self.refuses_without_cuda and _is_library_module(module)):
            for record in self.calls.values():
                record.site = replace(record.site, cuda_required=True)
        return FileFacts(
            calls=list(self.calls.values()),
            mixes=list(self.mixes.values()),
            conditionals=list(self.conditionals.values()),
            values=self.values,
            attribute_stores=self.attribute_stores,
            attribute_loads=self.attribute_loads,
            module_classes=self.module_classes,
            module_names=self.module_env,
        )

    def run_pending(self) -> None:
        while self.pending:
            batch, self.pending = self.pending, []
            for item in batch:
                self.function_body(item)

    def used_as_value(self, name: str) -> bool:
        """A module-level function read here other than to call it (a callback, a
        ``map(f, ...)`` argument): it is also called from places this file does not show."""
        return self.name_reads[name] > self.name_calls[name]

    def parameter_seeds(self, node: cst.FunctionDef) -> dict[str, Value]:
        """What a module-level function's parameters hold at every call in this file.

        Only a tensor, module, loader or device that every call passes (joined) counts,
        and only for a function that is called here and never used as a value (a callback
        is called from places unseen).
        """
        name = node.name.value
        calls = self.call_args.get(name)
        if not calls or self.function_defs.get(name) is not node:
            return {}
        if self.used_as_value(name):
            return {}
        positional = [*node.params.posonly_params, *node.params.params]
        seeds: dict[str, Value] = {}
        for index, param in enumerate([*positional, *node.params.kwonly_params]):
            joined: Value | None = None
            for args, keywords in calls:
                if index < len(positional) and index < len(args):
                    value = args[index]
                elif param.name.value in keywords:
                    value = keywords[param.name.value]
                else:
                    joined = UNKNOWN  # the default: not seen here
                    break
                joined = value if joined is None else join(joined, value)
            if joined is not None and joined.kind in _SEEDED_KINDS and joined.where:
                seeds[param.name.value] = replace(joined, origins=())
        return seeds

    # ------------------------------------------------------------------ environment

    def site(self) -> Site:
        return Site(
            self.guarded,
            self.loop,
            self.function,
            self.class_name,
            self.conditional,
            self.branches,
            self.cuda_required,
        )

    def _callers_require_cuda(self, module: cst.Module) -> None:
        """*CUDA required* in module-level functions by the code that calls them.

        A function named for CUDA holds it unless this file calls it from code where CUDA
        is not required (a script's ``gpu_info()`` call from its main code keeps the
        reports); any other function holds it when this file calls it, only from code where
        CUDA is guarded or required. A function this file also uses as a value (a callback)
        is called from places unseen: neither. Only the records that DEV011 could report
        are revisited (``owned_records``), so files without them cost nothing.
        """
        if not self.owned_records:
            return
        candidates = {owner for _, owner in self.owned_records}
        used_as_value = {name for name in candidates if self.used_as_value(name)}
        callers: dict[str, list[tuple[Site, str | None]]] = {}
        for name, site, owner in self.local_calls:
            if name in candidates:
                callers.setdefault(name, []).append((site, owner))
        required: set[str] = set()
        changed = True
        while changed:  # a caller may itself be required by its own callers
            changed = False
            for name in candidates - required - used_as_value:
                sites = [(site, owner) for site, owner in callers.get(name, []) if owner != name]
                if (sites or _is_cuda_contract_name(name)) and all(
                    site.guarded or site.cuda_required or owner in required for site, owner in sites
                ):
                    required.add(name)
                    changed = True
        for record, owner in self.owned_records:
            if owner in required:
                record.site = replace(record.site, cuda_required=True)

    def _method_key(self, key: str) -> tuple[str, str, str] | None:
        if self.class_name is None or self.function is None or not key.startswith("self."):
            return None
        return (self.class_name, self.function.name.value, key[len("self.") :])

    def lookup(self, name: str) -> Value | None:
        value = self.env.get(name)
        if value is None and self.env is not self.module_env:
            value = self.module_env.get(name)
        return value

    def bind(self, target: cst.BaseExpression, value: Value) -> None:
        if isinstance(target, cst.Name | cst.Attribute):
            key = dotted_name(target)
            if key is not None:
                self.env[key] = value
                self._remember(key)
                self._forget_attributes_of(key)
                method_key = self._method_key(key)
                if method_key is not None:
                    self.attribute_stores.append(AttributeStore(*method_key, value, target))
                if "." in key and value.kind is Kind.GUARD:
                    self.guard_attributes[key] = value
            elif isinstance(target, cst.Attribute):
                self.expr(target.value)
        elif isinstance(target, cst.Tuple | cst.List):
            element = self.element_of(value)
            for item in target.elements:
                self.bind(item.value, element)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, value)
        elif isinstance(target, cst.Subscript):
            self.expr(target)
            key = dotted_name(target.value)
            container = self.lookup(key) if key is not None else None
            if key and container and container.from_batch and value.kind is Kind.TENSOR:
                # ``batch[k] = batch[k].to(device)``: the batch is being moved.
                self.env[key] = Value(Kind.TENSOR, value.where)

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
        values = [self.expr(e.value) for e in source.elements]
        for element, value in zip(target.elements, values, strict=True):
            self.bind(element.value, value)
        return True

    def _mark_reference(self, node: cst.BaseExpression | None) -> None:
        """The call's result is compared, returned or a default: not itself a placement."""
        record = self.calls.get(id(node)) if node is not None else None
        if record is not None:
            record.reference_only = True

    def _remember(self, key: str) -> str:
        """Note that ``key`` (``self.net.fc``) is held: its parents may need forgetting."""
        while "." in key:
            key = key.rsplit(".", 1)[0]
            if key in self.attribute_parents:
                break
            self.attribute_parents.add(key)
        return key

    def _forget_attributes_of(self, key: str) -> None:
        if key not in self.attribute_parents:
            return  # nothing like ``key.attr`` was ever stored: no scan (linear analysis)
        prefix = key + "."
        stale = [name for name in self.env if name.startswith(prefix)]
        for name in stale:
            del self.env[name]

    @staticmethod
    def element_of(value: Value) -> Value:
        """An element of a container (unpacking, iteration)."""
        if value.kind is Kind.TENSOR:
            return replace(value, whole_batch=False)
        if value.kind is Kind.LOADER:
            return Analyzer.batch_of(value)
        return UNKNOWN

    @staticmethod
    def batch_of(loader: Value) -> Value:
        """One batch of a loader: on the CPU unless its dataset's tensors were moved."""
        if loader.where and loader.where != CPU:
            return Value(Kind.TENSOR, loader.where, whole_batch=True)
        return Value(Kind.TENSOR, CPU, from_batch=True, whole_batch=True)

    def join_envs(self, envs: Sequence[Env]) -> Env:
        if not envs:
            return dict(self.env)
        if len(envs) == 1:
            return envs[0]
        result: Env = {}
        keys = set().union(*envs)
        for key in keys:
            present = [env[key] for env in envs if key in env]
            value = present[0]
            for other in present[1:]:
                value = join(value, other)
            result[key] = value
        return result

    # ------------------------------------------------------------------ statements

    def block(self, statements: Sequence[cst.BaseStatement]) -> bool:
        """Run a block; True when it always leaves (return, raise, continue, break, exit)."""
        saved_guard, saved_backends = self.guarded, self.backends_tested
        exits = False
        for index, statement in enumerate(statements):
            following = statements[index + 1] if index + 1 < len(statements) else None
            if self.statement(statement, following):
                exits = True
            if self._guards_rest_of_block(statement):
                self.guarded = True
                if self.function is not None and _refusal_names_cuda(statement):
                    self.refuses_without_cuda = True
            self.backends_tested |= self._backend_left_behind(statement)
        self.guarded, self.backends_tested = saved_guard, saved_backends
        return exits

    def _backend_left_behind(self, statement: cst.BaseStatement) -> frozenset[str]:
        """``if mps_available: return "mps"``: what follows is the else of that test."""
        if type(statement) is cst.If and statement.orelse is None:
            test = self.values.get(id(statement.test), UNKNOWN)
            if test.kind is Kind.GUARD and test.qualname and _always_exits(statement.body):
                return frozenset({test.qualname})
        return frozenset()

    def _guards_rest_of_block(self, statement: cst.BaseStatement) -> bool:
        if type(statement) is cst.If and statement.orelse is None:
            test = self.values.get(id(statement.test), UNKNOWN)
            return _is_cuda_guard(test, -1) and _always_exits(statement.body)
        if type(statement) is cst.SimpleStatementLine:
            for small in statement.body:
                if type(small) is cst.Assert:
                    test = self.values.get(id(small.test), UNKNOWN)
                    if _is_cuda_guard(test, +1):
                        return True
        return False

    def suite(self, body: cst.BaseSuite) -> bool:
        if isinstance(body, cst.IndentedBlock):
            return self.block(body.body)
        assert isinstance(body, cst.SimpleStatementSuite)
        return self.small_statements(body.body)

    def statement(self, stmt: cst.BaseStatement, following: cst.BaseStatement | None) -> bool:
        if type(stmt) is cst.SimpleStatementLine:
            return self.small_statements(stmt.body)
        if type(stmt) is cst.If:
            return self.if_statement(stmt, following)
        if type(stmt) is cst.For:
            self.for_statement(stmt)
        elif type(stmt) is cst.While:
            self.while_statement(stmt)
        elif type(stmt) is cst.FunctionDef:
            self.function_def(stmt, class_name=None)
        elif type(stmt) is cst.ClassDef:
            self.class_def(stmt)
        elif type(stmt) is cst.With:
            for item in stmt.items:
                value = self.expr(item.item)
                if item.asname is not None:
                    self.bind(item.asname.name, value)
            return self.suite(stmt.body)
        elif isinstance(stmt, cst.Try | cst.TryStar):
            self.try_statement(stmt)
        elif type(stmt) is cst.Match:
            self.match_statement(stmt)
        return False

    def small_statements(self, statements: Sequence[cst.BaseSmallStatement]) -> bool:
        return any(self.small_statement(small) for small in statements)

    def small_statement(self, small: cst.BaseSmallStatement) -> bool:
        if type(small) is cst.Expr:
            self.expression_statement(small.value)
            return _is_exit_call(small.value)
        if type(small) is cst.Assign:
            if len(small.targets) == 1 and self.bind_pairwise(small.targets[0].target, small.value):
                return False
            value = self.expr(small.value)
            if value.scalar and value.origins == (small.value,) and len(small.targets) == 1:
                # ``rewards = torch.tensor(r)``: the name it gets says it holds several.
                value = replace(
                    value, scalar=not _names_a_sequence(dotted_name(small.targets[0].target) or "")
                )
            for target in small.targets:
                self.bind(target.target, value)
        elif type(small) is cst.AnnAssign:
            if small.value is not None:
                self.bind(small.target, self.expr(small.value))
        elif type(small) is cst.AugAssign:
            current = self.expr(small.target)
            value = self.expr(small.value)
            self.bind(
                small.target, self.combine(small, [(small.target, current), (small.value, value)])
            )
        elif type(small) is cst.Return:
            if small.value is not None:
                returned = self.expr(small.value)
                self._mark_reference(small.value)
                if self.returns is not None:
                    self.returns.append(returned)
            if not (self.cuda_required or self.guarded):
                self.exits_without_cuda = True
            return True
        elif type(small) is cst.Raise:
            if small.exc is not None:
                self.expr(small.exc)
            return True
        elif isinstance(small, cst.Break | cst.Continue):
            return True
        elif type(small) is cst.Assert:
            self.expr(small.test)
            if small.msg is not None:
                self.expr(small.msg)
        elif type(small) is cst.Import:
            for alias in small.names:
                full = _module_name(alias.name)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.env[alias.asname.name.value] = Value(Kind.IMPORTED, qualname=full)
                else:
                    top = full.split(".", 1)[0]
                    self.env[top] = Value(Kind.IMPORTED, qualname=top)
        elif type(small) is cst.ImportFrom:
            self.import_from(small)
        elif type(small) is cst.Del:
            self.expr(small.target)
        return False

    def import_from(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        base = "." * len(node.relative) + _module_name(node.module)
        for alias in node.names:
            name = _module_name(alias.name)
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            qualname = f"{base}.{name}" if base and not base.endswith(".") else base + name
            self.env[local] = Value(Kind.IMPORTED, qualname=qualname)

    def expression_statement(self, expr: cst.BaseExpression) -> None:
        self.expr(expr)
        if not isinstance(expr, cst.Call):
            return
        record = self.calls.get(id(expr))
        if record is not None:
            record.discarded = True
        if not isinstance(expr.func, cst.Attribute):
            return
        func = expr.func
        while func.attr.value in torch_api.MODULE_SELF_METHODS:  # ``model.to(dev).eval()``
            inner = func.value
            if not (isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute)):
                break
            expr, func = inner, inner.func
        key = dotted_name(func.value)
        if key is None:
            return
        method = func.attr.value
        receiver = self.lookup(key) or UNKNOWN
        if method in torch_api.MOVE_METHODS and (
            receiver.kind is not Kind.TENSOR or receiver.whole_batch
        ):
            # ``model.to(device)`` moves an nn.Module in place.
            self.env[key] = self.values.get(id(expr), receiver)
        elif receiver.kind is Kind.MODULE and method in _ADDS_MODULES and expr.args:
            # ``seq.add_module("conv", layer)``: the container now also lives where the
            # new part lives (unknown when that is unknown).
            part = self.values.get(id(expr.args[-1].value), UNKNOWN)
            where = join_placement(receiver.where, part.where) if part.kind is Kind.MODULE else None
            self.env[key] = Value(Kind.MODULE, where)
        elif method in ("append", "extend", "insert") and expr.args:
            item = self.values.get(id(expr.args[-1].value), UNKNOWN)
            if method == "extend":
                item = self.element_of(item)
            if item.kind is Kind.TENSOR and receiver.kind is Kind.TENSOR:
                self.env[key] = Value(Kind.TENSOR, join_placement(receiver.where, item.where))
            elif receiver.kind is Kind.TENSOR:
                self.env[key] = UNKNOWN

    def if_statement(self, node: cst.If, following: cst.BaseStatement | None) -> bool:
        test = self.expr(node.test)
        self.conditionals[id(node)] = Conditional(
            node, test, self.backends_tested, following, self.site()
        )
        original, before = self.env, dict(self.env)
        saved_guard, saved_backends = self.guarded, self.backends_tested
        saved_conditional, self.conditional = self.conditional, self.loop is not None
        saved_branches, self.branches = self.branches, (*self.branches, Branch(node, node.body))
        saved_required, ids_test = self.cuda_required, _cuda_ids_test(node.test)
        self.guarded = saved_guard or _is_cuda_guard(test, +1)
        self.cuda_required = saved_required or ids_test > 0
        on_cpu = _cpu_test(node.test)  # ``if x.is_cpu:`` / ``if x.device.type != "cpu":``
        self.refine_to_cpu(on_cpu, +1)
        self.refine_to_tensor(node.test)
        body_exits = self.suite(node.body)
        body_env, body_required = self.env, self.cuda_required
        self.env = dict(before)
        self.refine_to_cpu(on_cpu, -1)
        self.guarded = saved_guard or _is_cuda_guard(test, -1)
        self.cuda_required = saved_required or ids_test < 0
        if test.kind is Kind.GUARD and test.qualname:
            self.backends_tested = saved_backends | {test.qualname}
        else_exits = False
        if node.orelse is not None:
            self.branches = (*saved_branches, Branch(node, node.orelse))
        if isinstance(node.orelse, cst.If):
            else_exits = self.if_statement(node.orelse, None)
        elif isinstance(node.orelse, cst.Else):
            else_exits = self.suite(node.orelse.body)
        else_env, else_required = self.env, self.cuda_required
        self.guarded, self.backends_tested = saved_guard, saved_backends
        self.branches = saved_branches
        self.conditional = saved_conditional
        requirements = [
            required
            for required, exits in ((body_required, body_exits), (else_required, else_exits))
            if not exits
        ]
        self.cuda_required = saved_required or (bool(requirements) and all(requirements))
        live = [env for env, exits in ((body_env, body_exits), (else_env, else_exits)) if not exits]
        joined = self.join_envs(live) if live else before
        if node.orelse is None and test.kind is Kind.GUARD and not body_exits:
            # ``if device != "cpu": x = x.cpu()``: the untaken branch is the CPU case.
            joined = {**joined, **{k: v for k, v in body_env.items() if is_cpu(v.where)}}
        self.settle(original, joined)
        return body_exits and else_exits

    def refine_to_cpu(self, on_cpu: tuple[str, int] | None, branch: int) -> None:
        """In the branch where the test says the tensor is on the CPU, it is."""
        if on_cpu is None or on_cpu[1] != branch:
            return
        value = self.lookup(on_cpu[0])
        if value is not None and value.kind is Kind.TENSOR:
            self.env[on_cpu[0]] = replace(value, where=CPU)

    def refine_to_tensor(self, test: cst.BaseExpression) -> None:
        """``if torch.is_tensor(v):`` / ``isinstance(v, torch.Tensor)`` (or the left of an
        ``and``): in the body, ``v`` is a tensor, wherever it is."""
        while type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
            test = test.left
        record = self.calls.get(id(test))
        if record is None or not record.args or type(test) is not cst.Call:
            return
        if record.callee == "torch.is_tensor" or (
            dotted_name(test.func) == "isinstance"
            and len(record.args) == 2
            and record.args[1].qualname == "torch.Tensor"
        ):
            name = dotted_name(test.args[0].value)
            if name is not None and (self.lookup(name) or UNKNOWN).kind is Kind.UNKNOWN:
                self.env[name] = Value(Kind.TENSOR)

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

    def for_statement(self, node: cst.For) -> None:
        iterable = self.expr(node.iter)
        element, is_loader = self.iteration_element(node.iter, iterable)
        saved_loop, saved_guard, saved_conditional = self.loop, self.guarded, self.conditional
        if is_loader:
            self.loop, self.conditional = LoaderLoop(node), False
        if _iterates_devices(node.iter, self.values):
            self.guarded = True
        saved_required = self.cuda_required

        def run_once() -> None:
            self.cuda_required = saved_required  # the body may not run at all
            self.bind_loop_target(node.target, node.iter, element)
            self.suite(node.body)

        self.loop_body(run_once)
        self.loop, self.guarded, self.conditional = saved_loop, saved_guard, saved_conditional
        self.cuda_required = saved_required
        if node.orelse is not None:
            self.suite(node.orelse.body)

    def iteration_element(self, iterable: cst.BaseExpression, value: Value) -> tuple[Value, bool]:
        """The value of one element of ``iterable``, and whether it is a data loader."""
        inner = _unwrap_iteration(iterable)
        if inner is not iterable:
            inner_value = self.values.get(id(inner), UNKNOWN)
            return self.iteration_element(inner, inner_value)
        name = dotted_name(iterable)
        if value.kind is Kind.LOADER or (
            value.kind is Kind.UNKNOWN and name is not None and _is_loader_like_name(name)
        ):
            return self.batch_of(value), True
        return self.element_of(value), False

    def bind_loop_target(
        self, target: cst.BaseExpression, iterable: cst.BaseExpression, element: Value
    ) -> None:
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name):
            if (
                iterable.func.value == "enumerate"
                and isinstance(target, cst.Tuple)
                and len(target.elements) == 2
            ):
                self.bind(target.elements[0].value, UNKNOWN)
                self.bind(target.elements[1].value, element)
                return
            if iterable.func.value == "zip" and isinstance(target, cst.Tuple):
                for item, arg in zip(target.elements, iterable.args, strict=False):
                    value, _ = self.iteration_element(
                        arg.value, self.values.get(id(arg.value), UNKNOWN)
                    )
                    self.bind(item.value, value)
                return
        self.bind(target, element)

    def while_statement(self, node: cst.While) -> None:
        saved_required = self.cuda_required

        def run_once() -> None:
            self.cuda_required = saved_required
            test = self.expr(node.test)
            saved = self.guarded
            self.guarded = saved or _is_cuda_guard(test, +1)
            self.suite(node.body)
            self.guarded = saved

        self.loop_body(run_once)
        self.cuda_required = saved_required
        if node.orelse is not None:
            self.suite(node.orelse.body)

    def try_statement(self, node: cst.Try | cst.TryStar) -> None:
        original, before = self.env, dict(self.env)
        saved_guard = self.guarded
        # ``try: x.cuda() except RuntimeError: ...`` probes for CUDA and handles its absence.
        self.guarded = saved_guard or any(_catches_device_errors(h) for h in node.handlers)
        saved_branches, self.branches = self.branches, (*self.branches, Branch(node, node.body))
        saved_required = self.cuda_required
        body_exits = self.suite(node.body)
        self.guarded, self.branches = saved_guard, saved_branches
        if node.orelse is not None and not body_exits:
            self.suite(node.orelse.body)
        after_body = dict(self.env)
        outcomes = [] if body_exits else [after_body]
        requirements = [] if body_exits else [self.cuda_required]
        for handler in node.handlers:
            self.env = self.join_envs([before, after_body])
            self.cuda_required = saved_required  # the body stopped anywhere
            if handler.type is not None:
                self.expr(handler.type)
            self.branches = (*saved_branches, Branch(node, handler))
            if not self.suite(handler.body):
                outcomes.append(self.env)
                requirements.append(self.cuda_required)
            self.branches = saved_branches
        self.settle(original, self.join_envs(outcomes) if outcomes else before)
        self.cuda_required = saved_required or (bool(requirements) and all(requirements))
        if node.finalbody is not None:
            self.suite(node.finalbody.body)

    def match_statement(self, node: cst.Match) -> None:
        self.expr(node.subject)
        original, before = self.env, dict(self.env)
        outcomes = []
        saved_required = self.cuda_required
        for case in node.cases:
            self.env = dict(before)
            self.cuda_required = saved_required
            if not self.suite(case.body):
                outcomes.append(self.env)
        self.settle(original, self.join_envs([*outcomes, before]))
        self.cuda_required = saved_required

    # ------------------------------------------------------------------ definitions

    def function_def(self, node: cst.FunctionDef, class_name: str | None) -> None:
        # Methods of a class named for CUDA (``class CUDAAccelerator``) only run where CUDA
        # is in use: whoever picks that class holds the guard.
        guarded = self.guarded or bool(class_name and _CUDA_NAMED.search(class_name))
        for decorator in node.decorators:
            value = self.expr(decorator.decorator)
            if _is_cuda_guard(value, +1) or self._is_guard_callable(decorator.decorator):
                guarded = True
        self.env[node.name.value] = Value(Kind.FUNCTION, qualname=node.name.value)
        if class_name is None and self.env is self.module_env:
            self.function_defs[node.name.value] = node
        owner = self.owner
        if self.function is None:
            owner = node.name.value if class_name is None and self.env is self.module_env else None
        self.pending.append(
            _Pending(
                node,
                guarded,
                class_name,
                self.branches,
                self.cuda_required,
                owner,
                dict(self.env) if self.function is not None else None,
            )
        )

    def class_def(self, node: cst.ClassDef) -> None:
        is_module = False
        for base in node.bases:
            value = self.expr(base.value)
            if (value.kind is Kind.IMPORTED and torch_api.is_module_class(value.qualname)) or (
                value.kind is Kind.CLASS and value.qualname in self.module_classes
            ):
                is_module = True
        name = node.name.value
        if is_module:
            self.module_classes.add(name)
            if name.endswith("Loss") or any(
                torch_api.is_stateless_module(dotted_name(b.value) or "") for b in node.bases
            ):
                self.stateless_classes.add(name)
        saved_env = self.env
        self.env = dict(self.module_env) if saved_env is self.module_env else dict(saved_env)
        methods: list[cst.FunctionDef] = []
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        for statement in body:
            if isinstance(statement, cst.FunctionDef):
                methods.append(statement)
            else:
                self.statement(statement, None)
        self.env = saved_env
        if is_module:
            self.module_methods[name] = {method.name.value: method for method in methods}
        methods.sort(key=lambda method: method.name.value != "__init__")
        for method in methods:
            self.function_def(method, class_name=name)
        self.env[name] = Value(Kind.CLASS, qualname=name)

    def function_body(self, item: _Pending) -> None:
        node = item.node
        saved = (self.env, self.guarded, self.loop, self.function, self.backends_tested)
        saved_class, saved_conditional = self.class_name, self.conditional
        self.class_name, self.conditional = item.class_name, False
        saved_branches, self.branches = self.branches, item.branches
        saved_required = (self.cuda_required, self.owner, self.exits_without_cuda)
        self.cuda_required = (
            item.cuda_required
            or self.cuda_module
            or item.class_name in self.cuda_classes  # its ``__init__`` required CUDA
            or (item.class_name is not None and _is_cuda_contract_name(node.name.value))
        )
        self.owner, self.exits_without_cuda = item.owner, False
        env: Env = dict(item.closure) if item.closure else {}
        if item.class_name is not None:
            owner_is_module = item.class_name in self.module_classes
            for key, value in self.class_attributes.get(item.class_name, {}).items():
                if value.kind is Kind.MODULE and (owner_is_module or value.where == CPU):
                    # Submodules move with the module that owns them (whose base class may be
                    # one we cannot see): only an explicit move of the attribute is kept.
                    value = Value(Kind.MODULE, stateless=value.stateless)
                env[key] = value
                self._remember(key)
        self.env = env
        self.guarded, self.loop, self.function = item.guarded, None, node
        self.backends_tested = frozenset()
        for param in _parameters(node.params):
            value = UNKNOWN
            if param.default is not None:
                value = self.expr(param.default)
                self._mark_reference(param.default)
            if _is_device_like_name(param.name.value):
                value = Value(Kind.DEVICE, ANY_DEVICE)
            elif value.kind is not Kind.GUARD:
                value = UNKNOWN
            env[param.name.value] = value
        if item.class_name is None and item.closure is None:
            self.bodies[node.name.value] = item
            seeds = self.parameter_seeds(node)
            self.seeded[node.name.value] = seeds
            env.update(seeds)
        if item.class_name in self.module_classes and node.params.params:
            env[node.params.params[0].name.value] = Value(Kind.MODULE)
            if node.name.value == "forward":  # the inputs of a module are tensors
                for param in node.params.params[1:]:
                    if env[param.name.value] is UNKNOWN:
                        env[param.name.value] = Value(Kind.TENSOR)
        self.suite(node.body)
        if (
            item.class_name is not None
            and node.name.value == "__init__"
            and not self.exits_without_cuda
            and (
                self.cuda_required
                or (  # ``if not torch.cuda.is_available(): raise ...`` in ``__init__``
                    isinstance(node.body, cst.IndentedBlock)
                    and any(self._guards_rest_of_block(line) for line in node.body.body)
                )
            )
        ):
            self.cuda_classes.add(item.class_name)  # no instance exists without CUDA
        self.cuda_required, self.owner, self.exits_without_cuda = saved_required
        if item.class_name is not None:
            attributes = self.class_attributes.setdefault(item.class_name, {})
            for key, value in env.items():
                if key.startswith("self."):
                    attributes[key] = join(attributes[key], value) if key in attributes else value
        self.env, self.guarded, self.loop, self.function, self.backends_tested = saved
        self.class_name, self.conditional = saved_class, saved_conditional
        self.branches = saved_branches

    def _is_guard_callable(self, expr: cst.BaseExpression) -> bool:
        target = expr.func if isinstance(expr, cst.Call) else expr
        name = dotted_name(target)
        if name is None:
            return False
        value = self.lookup(name.split(".", 1)[0])
        qualname = name
        if value is not None and value.kind is Kind.IMPORTED and value.qualname:
            qualname = value.qualname + name[len(name.split(".", 1)[0]) :]
        return qualname in self.guard_functions or name in self.guard_functions

    # ------------------------------------------------------------------ expressions

    def expr(self, node: cst.BaseExpression) -> Value:
        value = self._expr(node)
        self.values[id(node)] = value
        return value

    def _expr(self, node: cst.BaseExpression) -> Value:
        # `type(node) is` rather than isinstance: libcst's node classes are ABCs, whose
        # failing isinstance checks go through ABCMeta (a fifth of the analysis time).
        if type(node) is cst.Name:
            if node.value in ("True", "False", "None"):
                return Value(Kind.CONSTANT, constant={"True": True, "False": False}.get(node.value))
            value = self.lookup(node.value) or UNKNOWN
            if value.kind is Kind.FUNCTION:
                self.name_reads[node.value] += 1
            return value
        if type(node) is cst.Attribute:
            return self.attribute(node)
        if type(node) is cst.Call:
            return self.call(node)
        if type(node) is cst.SimpleString:
            text = _string_value(node)
            if text is not None:
                where = placement_of_device_string(text)
                if where is not None:
                    return Value(Kind.DEVICE, where, constant=text, from_literal=not self.guarded)
            return Value(Kind.CONSTANT, constant=text)
        if type(node) is cst.FormattedString:
            for part in node.parts:
                if isinstance(part, cst.FormattedStringExpression):
                    self.expr(part.expression)
            head = node.parts[0] if node.parts else None
            if isinstance(head, cst.FormattedStringText) and head.value.startswith("cuda"):
                return Value(Kind.DEVICE, CUDA, from_literal=not self.guarded)
            return UNKNOWN
        if type(node) is cst.Integer or type(node) is cst.Float:
            return Value(Kind.CONSTANT, constant=_number_value(node))
        if type(node) is cst.Subscript:
            return self.subscript(node)
        if type(node) is cst.BinaryOperation:
            return self.binary_operation(node)
        if type(node) is cst.UnaryOperation:
            inner = self.expr(node.expression)
            if isinstance(node.operator, cst.Not):
                if inner.kind is Kind.GUARD:
                    return replace(inner, polarity=-inner.polarity)
                return UNKNOWN
            return inner if inner.kind is Kind.TENSOR else UNKNOWN
        if type(node) is cst.BooleanOperation:
            return self.boolean_operation(node)
        if type(node) is cst.Comparison:
            return self.comparison(node)
        if type(node) is cst.IfExp:
            return self.if_expression(node)
        if type(node) is cst.Tuple or type(node) is cst.List or type(node) is cst.Set:
            return self.container([self.expr(element.value) for element in node.elements])
        if type(node) is cst.Dict:
            values = []
            for element in node.elements:
                if isinstance(element, cst.DictElement):
                    self.expr(element.key)
                values.append(self.expr(element.value))
            return self.container(values)
        if (
            type(node) is cst.ListComp
            or type(node) is cst.SetComp
            or type(node) is cst.GeneratorExp
            or type(node) is cst.DictComp
        ):
            return self.comprehension(node)
        if type(node) is cst.NamedExpr:
            value = self.expr(node.value)
            self.bind(node.target, value)
            return value
        if type(node) is cst.Lambda:
            saved, saved_required = self.env, self.cuda_required
            self.env = dict(saved)
            for param in _parameters(node.params):
                self.env[param.name.value] = UNKNOWN
            self.expr(node.body)
            self.env, self.cuda_required = saved, saved_required
            return UNKNOWN
        if type(node) is cst.Await:
            return self.expr(node.expression)
        if type(node) is cst.Yield:
            if isinstance(node.value, cst.BaseExpression):
                self.expr(node.value)
            elif isinstance(node.value, cst.From):
                self.expr(node.value.item)
            return UNKNOWN
        if type(node) is cst.StarredElement:
            return self.expr(node.value)
        if type(node) is cst.ConcatenatedString:
            self.expr(node.left)
            self.expr(node.right)
            return UNKNOWN
        return UNKNOWN

    def container(self, values: Sequence[Value]) -> Value:
        """A literal list/tuple/dict: a tensor container when every element is a tensor."""
        if not values:
            return Value(Kind.TENSOR, frozenset())
        if all(value.kind is Kind.TENSOR for value in values):
            where = join_placements(value.where for value in values)
            origins = tuple(origin for value in values for origin in value.origins)
            from_batch = all(v.from_batch for v in values)
            return Value(Kind.TENSOR, where, from_batch=from_batch, origins=origins)
        return UNKNOWN

    def comprehension(
        self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp
    ) -> Value:
        saved, saved_guard, saved_required = self.env, self.guarded, self.cuda_required
        self.env = dict(saved)
        for_in: cst.CompFor | None = node.for_in
        while for_in is not None:
            iterable = self.expr(for_in.iter)
            element, _ = self.iteration_element(for_in.iter, iterable)
            self.bind_loop_target(for_in.target, for_in.iter, element)
            if _iterates_devices(for_in.iter, self.values):
                self.guarded = True  # ``[... for i in range(torch.cuda.device_count())]``
            for condition in for_in.ifs:
                self.expr(condition.test)
            for_in = for_in.inner_for_in
        if isinstance(node, cst.DictComp):
            self.expr(node.key)
            element_value = self.expr(node.value)
        else:
            element_value = self.expr(node.elt)
        self.env, self.guarded, self.cuda_required = saved, saved_guard, saved_required
        if element_value.kind is Kind.TENSOR:
            return Value(Kind.TENSOR, element_value.where, from_batch=element_value.from_batch)
        return UNKNOWN

    def attribute(self, node: cst.Attribute) -> Value:
        key = dotted_name(node)
        if key is not None:
            method_key = self._method_key(key)
            if method_key is not None:
                self.attribute_loads.add(method_key)
            known = self.lookup(key) or self.guard_attributes.get(key)
            if known is not None:
                return known
            self.missed_attributes.add(key)
        base = self.expr(node.value)
        attr = node.attr.value
        if base.kind is Kind.IMPORTED and base.qualname:
            qualname = f"{base.qualname}.{attr}"
            if qualname in torch_api.CUDA_AVAILABILITY_ATTRIBUTES:
                return Value(Kind.GUARD, polarity=+1, qualname="cuda")
            return Value(Kind.IMPORTED, qualname=qualname)
        if attr == "is_cuda":
            return Value(Kind.GUARD, polarity=+1, qualname="cuda")
        if base.kind in (Kind.TENSOR, Kind.MODULE):
            if attr == "device":
                return Value(Kind.DEVICE, base.where)
            if attr in torch_api.TENSOR_VIEW_ATTRIBUTES or (
                base.kind is Kind.TENSOR and attr not in torch_api.NON_TENSOR_ATTRIBUTES
            ):
                # ``x.T``, and the fields of a model's output (``out.logits``,
                # ``x.max(dim=1).values``): what a "tensor" value holds is on its device.
                return base.derived()
        if key is not None and _is_device_like_name(key) and _is_settings_holder(node.value):
            return Value(Kind.DEVICE, ANY_DEVICE)  # ``self.device``, ``args.device``
        if attr == "device":
            return Value(Kind.DEVICE)  # the device of an unknown tensor: unknown
        return UNKNOWN

    def subscript(self, node: cst.Subscript) -> Value:
        base = self.expr(node.value)
        for element in node.slice:
            if isinstance(element.slice, cst.Index):
                self.expr(element.slice.value)
            elif isinstance(element.slice, cst.Slice):
                for part in (element.slice.lower, element.slice.upper, element.slice.step):
                    if part is not None:
                        self.expr(part)
        if base.kind is Kind.TENSOR:
            return replace(base, whole_batch=False)
        return UNKNOWN

    def binary_operation(self, node: cst.BinaryOperation) -> Value:
        # Left-nested chains (a + b + c + ...) are flattened so that long ones cannot
        # exhaust the recursion limit.
        chain: list[cst.BinaryOperation] = []
        current: cst.BaseExpression = node
        while isinstance(current, cst.BinaryOperation):
            chain.append(current)
            current = current.left
        left_node: cst.BaseExpression = current
        left = self.expr(current)
        for operation in reversed(chain):
            right = self.expr(operation.right)
            left = self.combine(operation, [(left_node, left), (operation.right, right)])
            self.values[id(operation)] = left
            left_node = operation
        return left

    def combine(
        self, node: cst.CSTNode, operands: Sequence[tuple[cst.BaseExpression | None, Value]]
    ) -> Value:
        """The result of an operation over tensors; records a ``Mix`` when several meet."""
        tensors = [(n, v) for n, v in operands if v.kind is Kind.TENSOR]
        if not tensors:
            return UNKNOWN
        if len(tensors) > 1:  # 0-dim tensors from numbers mix with any device
            tensors = [(n, v) for n, v in tensors if not v.scalar] or tensors[:1]
        if len(tensors) >= 2:
            self.mixes[id(node)] = Mix(node, tuple(Operand(n, v) for n, v in tensors), self.site())
        known = [v.where for _, v in tensors if v.where is not None]
        where: Placement = None
        if known and (len(known) == len(tensors) or any(w and w != CPU for w in known)):
            # On an accelerator if any operand may be; CPU only when every operand is
            # (a CPU tensor meeting one of unknown placement gives unknown).
            where = frozenset().union(*known)
        # A result computed from CPU factories (and values of unknown placement, such as
        # the inputs of ``forward``) still comes from those factories.
        cpu_only = where is None or where == CPU
        origins = tuple(o for _, v in tensors for o in v.origins) if cpu_only else ()
        from_batch = all(v.from_batch for _, v in tensors)
        scalar = all(v.scalar for _, v in tensors) and not _gives_shape(node)
        return Value(Kind.TENSOR, where, from_batch=from_batch, scalar=scalar, origins=origins)

    def boolean_operation(self, node: cst.BooleanOperation) -> Value:
        left = self.expr(node.left)
        is_and = isinstance(node.operator, cst.And)
        saved, saved_required = self.guarded, self.cuda_required
        if _is_cuda_guard(left, +1 if is_and else -1):
            self.guarded = True
        if _cuda_ids_test(node.left) == (+1 if is_and else -1):
            self.cuda_required = True
        right = self.expr(node.right)  # may not run: what it requires stays with it
        self.guarded, self.cuda_required = saved, saved_required
        polarities = [v.polarity if v.kind is Kind.GUARD else 0 for v in (left, right)]
        backend = left.qualname if left.kind is Kind.GUARD else right.qualname
        if is_and:
            polarity = +1 if +1 in polarities else (-1 if polarities == [-1, -1] else 0)
        else:
            polarity = -1 if -1 in polarities else (+1 if polarities == [+1, +1] else 0)
        if polarity:
            # The backend is the one tested by the operand that decides the polarity.
            deciding = [v for v in (left, right) if v.kind is Kind.GUARD and v.polarity == polarity]
            backend = next(
                (v.qualname for v in deciding if v.qualname in ("cuda", "accelerator")),
                deciding[0].qualname,
            )
            return Value(Kind.GUARD, polarity=polarity, qualname=backend)
        if left.kind is Kind.GUARD or right.kind is Kind.GUARD:
            return Value(Kind.GUARD, polarity=0, qualname=backend)
        return join(left, right) if left.kind is right.kind else UNKNOWN

    def comparison(self, node: cst.Comparison) -> Value:
        left = self.expr(node.left)
        operands: list[tuple[cst.BaseExpression | None, Value]] = [(node.left, left)]
        for target in node.comparisons:
            operands.append((target.comparator, self.expr(target.comparator)))
        for operand, _ in operands:
            self._mark_reference(operand)
        if len(node.comparisons) == 1:
            guard = _availability_comparison(
                node.left, node.comparisons[0].operator, node.comparisons[0].comparator, left
            )
            if guard is not None:
                return guard
        result = self.combine(node, operands)
        return result

    def if_expression(self, node: cst.IfExp) -> Value:
        test = self.expr(node.test)
        self.conditionals[id(node)] = Conditional(
            node, test, self.backends_tested, None, self.site()
        )
        saved_guard, saved_backends = self.guarded, self.backends_tested
        saved_branches, self.branches = self.branches, (*self.branches, Branch(node, node.body))
        saved_required, ids_test = self.cuda_required, _cuda_ids_test(node.test)
        self.guarded = saved_guard or _is_cuda_guard(test, +1)
        self.cuda_required = saved_required or ids_test > 0
        on_cpu, saved_env = _cpu_test(node.test), self.env
        if on_cpu is not None:
            self.env = dict(saved_env)
        self.refine_to_cpu(on_cpu, +1)
        body = self.expr(node.body)
        self.guarded = saved_guard or _is_cuda_guard(test, -1)
        self.cuda_required = saved_required or ids_test < 0
        if test.kind is Kind.GUARD and test.qualname:
            self.backends_tested = saved_backends | {test.qualname}
        self.branches = (*saved_branches, Branch(node, node.orelse))
        if on_cpu is not None:
            self.env = dict(saved_env)
        self.refine_to_cpu(on_cpu, -1)
        orelse = self.expr(node.orelse)
        self.env = saved_env
        self.guarded, self.backends_tested = saved_guard, saved_backends
        self.branches = saved_branches
        self.cuda_required = saved_required
        if body.kind is Kind.DEVICE and orelse.kind is Kind.DEVICE:
            return Value(Kind.DEVICE, join_placement(body.where, orelse.where))
        return join(body, orelse)

    # ------------------------------------------------------------------ calls

    def call(self, node: cst.Call) -> Value:
        func = node.func
        receiver: Value | None = None
        method: str | None = None
        callee_value = self.expr(func) if not isinstance(func, cst.Attribute) else None
        if isinstance(func, cst.Attribute):
            key = dotted_name(func)
            known = self.lookup(key) if key is not None else None
            if known is not None:
                callee_value = known
            else:
                receiver = self.expr(func.value)
                if receiver.kind is Kind.IMPORTED and receiver.qualname:
                    callee_value = Value(
                        Kind.IMPORTED, qualname=f"{receiver.qualname}.{func.attr.value}"
                    )
                    receiver = None
                else:
                    method = func.attr.value
            if callee_value is not None:
                self.values[id(func)] = callee_value
        args: list[Value] = []
        keywords: dict[str, Value] = {}
        starred: list[Value] = []
        for arg in node.args:
            value = self.expr(arg.value)
            if arg.keyword is not None:
                keywords[arg.keyword.value] = value
            elif arg.star:
                starred.append(value)
            else:
                args.append(value)
        callee = (
            callee_value.qualname
            if callee_value is not None and callee_value.kind is Kind.IMPORTED
            else None
        )
        record = CallRecord(node, callee, method, receiver, tuple(args), keywords, self.site())
        self.calls[id(node)] = record
        if self.returns is None:  # not while inlining: those records are thrown away
            if type(func) is cst.Name and func.value in self.function_defs:
                self.local_calls.append((func.value, record.site, self.owner))
            if (
                callee in torch_api.CUDA_ONLY_CALLS
                and self.owner is not None
                and not (record.site.guarded or record.site.cuda_required)
            ):
                self.owned_records.append((record, self.owner))
        if method is not None and receiver is not None:
            return self.method_call(node, receiver, method, args, keywords)
        if callee is not None:
            return self.library_call(node, callee, args, keywords, starred)
        if callee_value is None:
            return UNKNOWN
        return self.value_call(node, callee_value, args, keywords, starred)

    def placement_argument(self, args: Sequence[Value], keywords: dict[str, Value]) -> Value | None:
        if "device" in keywords:
            return keywords["device"]
        return args[0] if args else None

    def target_placement(self, target: Value | None, node: cst.Call) -> tuple[Placement, bool]:
        """Where ``.to(target)`` sends a value; the bool says whether it moves at all."""
        if target is None:
            return None, False
        if target.kind is Kind.DEVICE:
            return target.where, True
        if target.kind is Kind.TENSOR:
            return target.where, True
        if target.kind is Kind.IMPORTED and target.qualname in torch_api.DTYPES:
            return None, False
        first = node.args[0].value if node.args else None
        if type(first) is cst.Call:  # ``x.to(torch.get_default_dtype())``
            first = first.func
        name = dotted_name(first) if first is not None else None
        if name is not None and _is_device_like_name(name):
            return ANY_DEVICE, True
        names_device = any(arg.keyword and arg.keyword.value == "device" for arg in node.args)
        if name is not None and name.rsplit(".", 1)[-1].endswith("dtype") and not names_device:
            return None, False  # ``x.to(spec.dtype)``, ``x.to(self.compute_dtype)``: a cast
        return None, True

    def method_call(
        self,
        node: cst.Call,
        receiver: Value,
        method: str,
        args: list[Value],
        keywords: dict[str, Value],
    ) -> Value:
        if method == "cuda":
            return receiver.moved(CUDA)
        if method == "cpu":
            return receiver.moved(CPU)
        if method == "to":
            where, moves = self.target_placement(self.placement_argument(args, keywords), node)
            moves = moves or any(arg.star for arg in node.args)  # ``x.to(*args)``
            self.calls[id(node)].casts_only = not moves
            if not moves:
                return receiver.derived() if receiver.kind is Kind.TENSOR else receiver
            return receiver.moved(where)
        if method == "type_as" and args:
            return receiver.moved(args[0].where)
        if (
            method == "startswith"
            and args
            and args[0].kind is Kind.DEVICE
            and args[0].where == CUDA
        ):
            return Value(Kind.GUARD, polarity=+1, qualname="cuda")
        if method == "forward" and receiver.kind is Kind.MODULE:
            return self.value_call(node, receiver, args, keywords, [])
        if method == "detach" and receiver.kind is Kind.UNKNOWN:
            return Value(Kind.TENSOR, receiver.where)  # only tensors have ``.detach()``
        if receiver.kind is Kind.MODULE:
            if method in torch_api.MODULE_SELF_METHODS:
                return receiver
            if receiver.qualname and self.computes_like_forward(receiver.qualname, method):
                # ``vae.decode(z)``: computes with the module's parameters, like ``forward``.
                return self.value_call(node, receiver, args, keywords, [])
            return UNKNOWN
        if receiver.kind is Kind.TENSOR:
            if method in torch_api.NON_TENSOR_METHODS:
                return UNKNOWN
            if method not in torch_api.DEVICE_FREE_METHODS:
                operands = [(node.func, receiver)] + [
                    (arg.value, value)
                    for arg, value in zip(
                        (a for a in node.args if a.keyword is None and not a.star),
                        args,
                        strict=False,
                    )
                ]
                return self.combine(node, operands)
            return receiver.derived()
        return UNKNOWN

    def computes_like_forward(self, class_name: str, method: str) -> bool:
        """Whether ``method`` of this file's module class reads ``self`` and neither moves
        nor converts anything (see ``_computes_on_parameters``); a plain method only."""
        key = (class_name, method)
        if key not in self.compute_methods:
            node = self.module_methods.get(class_name, {}).get(method)
            self.compute_methods[key] = (
                node is not None
                and method not in ("__init__", "forward")
                and not any(_changes_binding(decorator) for decorator in node.decorators)
                and _computes_on_parameters(node)
            )
        return self.compute_methods[key]

    def library_call(
        self,
        node: cst.Call,
        callee: str,
        args: list[Value],
        keywords: dict[str, Value],
        starred: list[Value],
    ) -> Value:
        if callee in torch_api.CUDA_AVAILABILITY:
            return Value(Kind.GUARD, polarity=+1, qualname=torch_api.CUDA_AVAILABILITY[callee])
        leaf = callee.rsplit(".", 1)[-1]
        if (
            callee in self.guard_functions
            or leaf in self.guard_leaf_names
            or _GUARD_NAME.match(leaf)
        ):
            return Value(Kind.GUARD, polarity=+1, qualname="cuda")
        if callee in torch_api.SKIP_IF and args:
            polarity = +1 if callee in torch_api.SKIP_UNLESS else -1
            if _is_cuda_guard(args[0], polarity):
                return Value(Kind.GUARD, polarity=+1, qualname="cuda")
            return UNKNOWN
        if callee == "torch.device":
            first = self.placement_argument(args, {})
            if first is not None and first.kind is Kind.DEVICE:
                return Value(Kind.DEVICE, first.where)
            if "type" in keywords and keywords["type"].kind is Kind.DEVICE:
                return Value(Kind.DEVICE, keywords["type"].where)
            return Value(Kind.DEVICE, ANY_DEVICE)
        if callee in torch_api.ACCELERATOR_DEVICE_FUNCTIONS:
            return Value(Kind.DEVICE, ANY_DEVICE)
        if callee in torch_api.DATA_LOADERS:
            dataset = args[0] if args else keywords.get("dataset")
            if dataset is not None and dataset.kind is Kind.TENSOR and dataset.where:
                return Value(Kind.LOADER, dataset.where)  # ``TensorDataset(x.to(device))``
            return Value(Kind.LOADER)
        if callee in torch_api.TENSOR_DATASETS:  # ``TensorDataset(x.to(device), y)``
            if not args or any(not arg.where for arg in args):
                return UNKNOWN
            return Value(Kind.TENSOR, join_placements(arg.where for arg in args))
        if callee.rsplit(".", 1)[-1] in torch_api.LOADER_WRAPPERS and node.args:
            return self.wrapped_loader(node)
        if callee in torch_api.IMAGE_TO_TENSOR_FUNCTIONS:
            return Value(Kind.TENSOR, CPU)  # ``TF.to_tensor(image)``
        if callee in torch_api.IMAGE_TO_TENSOR or (
            callee in torch_api.TRANSFORM_PIPELINES and self._converts_images(node)
        ):
            # ``preprocess = T.Compose([..., T.ToTensor(), ...])``: what it returns is a CPU
            # tensor, like the output of a module left on the CPU.
            return Value(Kind.MODULE, CPU)
        if callee == "torch.load":
            location = keywords.get("map_location")
            if location is not None and location.kind is Kind.DEVICE:
                return Value(Kind.TENSOR, location.where)
            return UNKNOWN
        if torch_api.is_module_class(callee):
            if callee in torch_api.WRAPPERS and args:
                return Value(Kind.MODULE, args[0].where)
            if callee in torch_api.MODULE_CONTAINERS:  # ``nn.Sequential(*layers)``
                parts = [*args, *keywords.values()]
                known = [part.where for part in parts if part.kind is Kind.MODULE]
                if starred or not parts or len(known) < len(parts) or None in known:
                    return Value(Kind.MODULE)  # where its parts are: unknown
                known = [p.where for p in parts if not p.stateless] or known  # ``nn.ReLU()``
                if None in known:
                    return Value(Kind.MODULE)  # where its parts are: unknown
                return Value(Kind.MODULE, join_placements(known))
            device = keywords.get("device")
            where = device.where if device is not None and device.kind is Kind.DEVICE else CPU
            return Value(Kind.MODULE, where, stateless=torch_api.is_stateless_module(callee))
        if callee in torch_api.PARAMETER_WRAPPERS and args:
            return Value(Kind.TENSOR)  # a parameter lives wherever its module is moved
        if torch_api.is_factory(callee):
            device = keywords.get("device")
            if any(arg.star == "**" for arg in node.args):
                return Value(Kind.TENSOR)  # ``**kwargs`` may carry the device
            if device is not None:
                return Value(Kind.TENSOR, device.where if device.kind is Kind.DEVICE else None)
            if callee.endswith("_like") and args:
                return Value(Kind.TENSOR, args[0].where)
            data = node.args[0].value if node.args else None
            from_data = callee.endswith((".tensor", ".as_tensor", ".scalar_tensor"))
            is_number = isinstance(data, cst.Integer | cst.Float) or (
                isinstance(data, cst.Name) and data.value in ("True", "False")
            )
            if from_data and not (is_number or isinstance(data, cst.List | cst.Tuple)):
                if data is None:
                    return Value(Kind.TENSOR)
                source = self.values.get(id(data), UNKNOWN)
                if source.kind is Kind.TENSOR:  # ``torch.tensor(t)`` keeps the device of t
                    return Value(Kind.TENSOR, source.where, origins=source.origins)
                # ``torch.tensor(rewards)``, ``torch.tensor(self.dim)``: Python data, made
                # on the CPU; a number (0-dim, mixes with any device) unless the name says
                # it holds several (or a shape is given: ``.view(1, 3, 1, 1)``).
                several = _names_a_sequence(dotted_name(data) or "")
                return Value(Kind.TENSOR, CPU, scalar=not several, origins=(node,))
            return Value(Kind.TENSOR, CPU, scalar=from_data and is_number, origins=(node,))
        if callee.startswith("torch.") and not callee.startswith(torch_api.NON_TENSOR_NAMESPACES):
            return self.combine(node, list(self.tensor_operands(node)))
        return UNKNOWN

    def _converts_images(self, pipeline: cst.Call) -> bool:
        """A ``Compose([...])`` whose list holds an image-to-tensor transform."""
        steps = pipeline.args[0].value if pipeline.args else None
        if not isinstance(steps, cst.List | cst.Tuple):
            return False
        return any(
            (record := self.calls.get(id(step.value))) is not None
            and record.callee in torch_api.IMAGE_TO_TENSOR
            for step in steps.elements
        )

    def wrapped_loader(self, node: cst.Call) -> Value:
        """``tqdm(loader)`` is still the loader when the loop iterates over it."""
        first = node.args[0].value
        name = dotted_name(first)
        value = self.values.get(id(first), UNKNOWN)
        if value.kind is Kind.LOADER or (name is not None and _is_loader_like_name(name)):
            return Value(Kind.LOADER)
        return UNKNOWN

    def tensor_operands(self, node: cst.Call) -> Iterable[tuple[cst.BaseExpression, Value]]:
        """Tensor arguments, looking inside literal lists (``torch.cat([a, b])``): positional
        ones and the keywords that must share the input's device (``F.nll_loss(..., weight=w)``)."""
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value not in _TENSOR_KEYWORDS:
                continue
            if isinstance(arg.value, cst.List | cst.Tuple):
                for element in arg.value.elements:
                    yield element.value, self.values.get(id(element.value), UNKNOWN)
            else:
                yield arg.value, self.values.get(id(arg.value), UNKNOWN)

    def inline_call(
        self, node: cst.FunctionDef | None, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        """What a small module-level function returns for these arguments.

        The body is analysed once more with the parameters bound to the arguments; what
        that records is thrown away (the function's own analysis stands), only the join of
        its return values is kept. ``MAX_INLINED_DEPTH`` levels deep, and a bounded number
        per file.
        """
        if node is None or self.inline_depth >= MAX_INLINED_DEPTH or self.inline_budget <= 0:
            return UNKNOWN
        size = MAX_INLINED_SIZE if self.inline_depth == 0 else MAX_NESTED_INLINED_SIZE
        if not isinstance(node.body, cst.IndentedBlock) or len(node.body.body) > size:
            return UNKNOWN
        # Once the module's own code has run, what the body sees is fixed but for these:
        # the same call again (a helper called in every method) is answered from memory.
        key = (
            id(node), tuple(args), tuple(sorted(keywords.items())), self.guarded,
            self.class_name, self.backends_tested, len(self.guard_attributes),
        )  # fmt: skip
        if self.module_done and key in self.inlined:
            return self.inlined[key]
        self.inline_budget -= 1
        result = self._inline(node, args, keywords)
        if self.module_done:
            self.inlined[key] = result
        return result

    def _inline(
        self, node: cst.FunctionDef, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        env: Env = {}
        positional = [*node.params.posonly_params, *node.params.params]
        for param in _parameters(node.params):
            name = param.name.value
            value = keywords.get(name, UNKNOWN)
            if _is_device_like_name(name) and value is UNKNOWN:
                value = Value(Kind.DEVICE, ANY_DEVICE)
            env[name] = value
        for param, value in zip(positional, args, strict=False):
            env[param.name.value] = value
        saved = (
            self.env, self.values, self.calls, self.mixes, self.conditionals, self.pending,
            self.attribute_stores, self.attribute_loads, self.function, self.loop,
        )  # fmt: skip
        self.env, self.values, self.calls, self.mixes, self.conditionals = env, {}, {}, {}, {}
        self.pending, self.attribute_stores, self.attribute_loads = [], [], set()
        outer_returns = self.returns
        self.function, self.loop, self.returns = node, None, []
        saved_required = (self.cuda_required, self.exits_without_cuda)
        self.inline_depth += 1
        try:
            self.suite(node.body)
            returned = self.returns
        finally:
            self.inline_depth -= 1
            self.cuda_required, self.exits_without_cuda = saved_required
            (
                self.env, self.values, self.calls, self.mixes, self.conditionals, self.pending,
                self.attribute_stores, self.attribute_loads, self.function, self.loop,
            ) = saved  # fmt: skip
            self.returns = outer_returns
        if not returned:
            return UNKNOWN
        result = returned[0]
        for value in returned[1:]:
            result = join(result, value)
        return replace(result, origins=())

    def value_call(
        self,
        node: cst.Call,
        callee: Value,
        args: list[Value],
        keywords: dict[str, Value],
        starred: list[Value],
    ) -> Value:
        if (
            type(node.func) is cst.Name
            and node.func.value in _GUARD_PRESERVING
            and args
            and args[-1].kind is Kind.GUARD
        ):
            # ``len(torch.cuda.default_generators) > 0``; ``list(range(device_count()))``
            # is empty exactly where CUDA is absent, so it tests and iterates like the count.
            return args[-1]
        if callee.kind is Kind.CLASS:
            if callee.qualname in self.module_classes:
                stateless = callee.qualname in self.stateless_classes
                return Value(Kind.MODULE, CPU, qualname=callee.qualname, stateless=stateless)
            return UNKNOWN
        leaf = (dotted_name(node.func) or "").rsplit(".", 1)[-1]
        if leaf in torch_api.LOADER_WRAPPERS and node.args and callee.kind is not Kind.MODULE:
            return self.wrapped_loader(node)  # a local ``tqdm`` stand-in, say
        if leaf == "next" and args and args[0].kind is Kind.LOADER:
            return self.batch_of(args[0])  # ``images, labels = next(iter(loader))``
        if leaf == "enumerate" and args and args[0].kind is Kind.LOADER:
            return args[0]  # ``_, (x, y) = next(enumerate(loader))``: the index goes along
        if callee.kind is Kind.FUNCTION:
            name = callee.qualname or ""
            if name in self.guard_leaf_names or _GUARD_NAME.match(name):
                return Value(Kind.GUARD, polarity=+1, qualname="cuda")
            if type(node.func) is cst.Name:
                self.name_calls[node.func.value] += 1
            if starred:
                return UNKNOWN
            if self.returns is None:  # not while inlining
                self.call_args.setdefault(name, []).append((tuple(args), dict(keywords)))
            return self.inline_call(self.function_defs.get(name), args, keywords)
        if callee.kind is Kind.IMPORTED:
            return UNKNOWN
        inputs = [(arg.value, self.values.get(id(arg.value), UNKNOWN)) for arg in node.args]
        if callee.kind is Kind.UNKNOWN and callee.where is None:
            # An unknown callable (a parameter ``model``, ``self.net``): a loss-like name
            # combines its inputs; anything else returns a result on their device.
            name = dotted_name(node.func) or ""
            if _is_loss_like_name(name):
                return self.combine(node, inputs)
            known = [  # a value of unknown kind moved with ``.to(device)`` counts too
                v.where for _, v in inputs if v.kind in (Kind.TENSOR, Kind.UNKNOWN) and v.where
            ]
            return Value(Kind.TENSOR, frozenset().union(*known)) if known else UNKNOWN
        if callee.kind in (Kind.MODULE, Kind.UNKNOWN, Kind.TENSOR):
            if callee.stateless or callee.where is None:
                return self.combine(node, inputs)
            tensors = [(n, v) for n, v in inputs if v.kind is Kind.TENSOR]
            if tensors:
                self.mixes[id(node)] = Mix(
                    node,
                    (
                        Operand(None, Value(Kind.MODULE, callee.where)),
                        *(Operand(n, v) for n, v in tensors),
                    ),
                    self.site(),
                )
            return Value(Kind.TENSOR, callee.where)
        return UNKNOWN


# ---------------------------------------------------------------------- helpers


class _MethodShape(cst.CSTVisitor):
    """Whether a method reads ``self.<...>`` and whether it moves or converts anything."""

    def __init__(self) -> None:
        self.reads_self = False
        self.moves = False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if type(node.value) is cst.Name and node.value.value == "self":
            self.reads_self = True

    def visit_Call(self, node: cst.Call) -> None:
        if type(node.func) is cst.Attribute and node.func.attr.value in _MOVES_OR_CONVERTS:
            self.moves = True


_MOVES_OR_CONVERTS = frozenset({"to", "cuda", "cpu", "numpy", "tolist", "item"})


def _changes_binding(decorator: cst.Decorator) -> bool:
    """``@staticmethod``, ``@property``, ``@x.setter``: not a plain method of the instance
    (``@torch.no_grad()`` and other wrappers are)."""
    target = decorator.decorator
    name = dotted_name(target.func if type(target) is cst.Call else target) or ""
    leaf = name.rsplit(".", 1)[-1]
    return leaf in ("staticmethod", "classmethod", "property", "cached_property", "setter")


def _computes_on_parameters(method: cst.FunctionDef) -> bool:
    """A module method that reads ``self.<...>`` (its layers, buffers) and neither moves
    nor converts anything: called on a moved module, its inputs meet the module's
    device and its result stays there. One that moves its inputs itself
    (``x.to(self.device)``) or hands back host data (``.cpu().numpy()``) is not one."""
    shape = _MethodShape()
    method.body.visit(shape)
    return shape.reads_self and not shape.moves


def _names_a_sequence(name: str) -> bool:
    """``rewards``, ``batch_ids``, ``token_list``: a plural name (not ``loss``, ``bias``)."""
    last = name.rsplit(".", 1)[-1].lower()
    plural = last.endswith("s") and not last.endswith(("ss", "us", "is"))
    return plural or last.endswith(("list", "_seq", "array", "_arr"))


def _cpu_test(test: cst.BaseExpression) -> tuple[str, int] | None:
    """``(name, +1)`` when ``test`` being truthy means tensor ``name`` is on the CPU (-1: falsy).

    ``x.is_cpu``, ``x.device.type == "cpu"``, ``str(x.device) == "cpu"``,
    ``x.device == torch.device("cpu")``, their negations and ``!=``.
    """
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        inner = _cpu_test(test.expression)
        return (inner[0], -inner[1]) if inner is not None else None
    if type(test) is cst.Attribute and test.attr.value == "is_cpu":
        name = dotted_name(test.value)
        return (name, +1) if name is not None else None
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    comparison = test.comparisons[0]
    if type(comparison.operator) in (cst.Equal, cst.Is):
        polarity = +1
    elif type(comparison.operator) in (cst.NotEqual, cst.IsNot):
        polarity = -1
    else:
        return None
    for side, other in ((test.left, comparison.comparator), (comparison.comparator, test.left)):
        if not _names_cpu(other):
            continue
        device = side
        if type(device) is cst.Call and dotted_name(device.func) == "str" and device.args:
            device = device.args[0].value
        if type(device) is cst.Attribute and device.attr.value == "type":
            device = device.value
        if type(device) is cst.Attribute and device.attr.value == "device":
            name = dotted_name(device.value)
            return (name, polarity) if name is not None else None
    return None


def _names_cpu(expr: cst.BaseExpression) -> bool:
    """``"cpu"`` or ``torch.device("cpu")``."""
    if type(expr) is cst.Call and expr.args and (dotted_name(expr.func) or "").endswith("device"):
        expr = expr.args[0].value
    return type(expr) is cst.SimpleString and _string_value(expr) == "cpu"


def _gives_shape(node: cst.CSTNode) -> bool:
    """``t.view(1, 3)``, ``t.expand(...)``: the result of a 0-dim tensor is no longer 0-dim."""
    return (
        type(node) is cst.Call
        and type(node.func) is cst.Attribute
        and node.func.attr.value in torch_api.SHAPING_METHODS
    )


def _parameters(params: cst.Parameters) -> list[cst.Param]:
    result = [*params.posonly_params, *params.params, *params.kwonly_params]
    if isinstance(params.star_arg, cst.Param):
        result.append(params.star_arg)
    if params.star_kwarg is not None:
        result.append(params.star_kwarg)
    return result


def _cuda_ids_test(test: cst.BaseExpression) -> int:
    """``device_ids is not None`` (+1) / ``is None`` (-1): DDP's device ids are CUDA devices."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return 0
    comparison = test.comparisons[0]
    sides = (dotted_name(test.left), dotted_name(comparison.comparator))
    if "None" not in sides or not any(
        side and side.rsplit(".", 1)[-1] == "device_ids" for side in sides
    ):
        return 0
    if isinstance(comparison.operator, cst.IsNot):
        return +1
    return -1 if isinstance(comparison.operator, cst.Is) else 0


def _is_cuda_contract_name(name: str) -> bool:
    return bool(_CUDA_CONTRACT_NAME.search(name)) and not _NOT_CUDA_CONTRACT_NAME.search(name)


def _imports_cuda_only_package(module: cst.Module) -> bool:
    """A module-level import of a CUDA-only package, unconditional or under an ``if``
    availability check (``if is_megatron_lm_available(): from megatron ...``); imports
    inside ``try`` (an optional dependency) or ``if TYPE_CHECKING:`` do not count."""
    statements: list[cst.CSTNode] = []
    for statement in module.body:
        if isinstance(statement, cst.If) and type(statement.test) is cst.Call:
            statements.extend(statement.body.body)
        else:
            statements.append(statement)
    for line in statements:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            names: list[str] = []
            if isinstance(small, cst.Import):
                names = [_module_name(alias.name) for alias in small.names]
            elif isinstance(small, cst.ImportFrom) and not small.relative:
                names = [_module_name(small.module)]
            if any(name.split(".", 1)[0] in torch_api.CUDA_ONLY_PACKAGES for name in names):
                return True
    return False


def _is_cuda_guard(value: Value, polarity: int) -> bool:
    """True when ``value`` being truthy (+1) / falsy (-1) implies CUDA is available."""
    return (
        value.kind is Kind.GUARD
        and value.polarity == polarity
        and value.qualname in ("cuda", "accelerator")
    )


def _availability_comparison(
    left_node: cst.BaseExpression,
    operator: cst.BaseCompOp,
    right_node: cst.BaseExpression,
    left: Value,
) -> Value | None:
    """Guards written as comparisons: ``device.type == "cuda"``, ``device_count() > 0``."""
    equal = isinstance(operator, cst.Equal | cst.Is)
    unequal = isinstance(operator, cst.NotEqual | cst.IsNot)
    if isinstance(operator, cst.In | cst.NotIn) and isinstance(right_node, cst.Tuple | cst.List):
        # ``device.type in ("cpu", "mps")``: the other devices exclude CUDA.
        kinds = {(_string_value(e.value) or "").split(":", 1)[0] for e in right_node.elements}
        inside = isinstance(operator, cst.In)
        if kinds == {"cuda"}:
            return Value(Kind.GUARD, polarity=+1 if inside else -1, qualname="cuda")
        if (
            kinds
            and "cuda" not in kinds
            and kinds <= {"cpu", "mps", "xpu", "meta"}
            and "cpu" in kinds
        ):
            return Value(Kind.GUARD, polarity=-1 if inside else +1, qualname="cuda")
    if equal or unequal:
        # ``backend == Backend.CUDA``, ``distributed_type == DistributedType.MULTI_GPU``
        for side in (left_node, right_node):
            name = dotted_name(side)
            leaf = name.rsplit(".", 1)[-1] if name else ""
            if (
                name
                and re.search(r"cuda|gpu", leaf, re.IGNORECASE)
                and ("." in name or name.isupper())
            ):
                return Value(Kind.GUARD, polarity=+1 if equal else -1, qualname="cuda")
    for device_side in (right_node, left_node):
        text = _string_value(device_side)
        if text is None:
            continue
        kind = text.split(":", 1)[0]
        if isinstance(operator, cst.In) and device_side is left_node and kind == "cuda":
            return Value(Kind.GUARD, polarity=+1, qualname="cuda")
        if kind == "cuda" and (equal or unequal):
            return Value(Kind.GUARD, polarity=+1 if equal else -1, qualname="cuda")
        if kind == "cpu" and (equal or unequal):
            # ``device.type != "cpu"`` may still mean MPS: not a CUDA guard.
            return Value(Kind.GUARD, polarity=0, qualname="cpu")
        if kind == "mps" and (equal or unequal):
            return Value(Kind.GUARD, polarity=0, qualname="mps")
    if left.kind is Kind.GUARD:
        number = int(right_node.evaluated_value) if isinstance(right_node, cst.Integer) else None
        if isinstance(operator, cst.GreaterThan) or (
            isinstance(operator, cst.GreaterThanEqual) and number != 0
        ):
            return left
        if unequal and number == 0:
            return left
        if (equal and number == 0) or isinstance(operator, cst.LessThan):
            return replace(left, polarity=-left.polarity)
    return None


def _catches_device_errors(handler: cst.ExceptHandler | cst.ExceptStarHandler) -> bool:
    """A handler for the errors that CUDA placement raises where CUDA is absent: the
    ``AssertionError`` of a build without CUDA (macOS, CPU wheels) included, which a bare
    ``except RuntimeError`` (a CUDA build on a machine without a GPU) lets through."""
    if handler.type is None:
        return True
    if isinstance(handler.type, cst.Tuple):
        types = [element.value for element in handler.type.elements]
    else:
        types = [handler.type]
    names = {dotted_name(t) for t in types}
    return bool(names & {"AssertionError", "Exception", "BaseException"})


def _unwrap_iteration(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``enumerate(x)``, ``tqdm(x)``, ``iter(x)`` -> ``x`` (zip is handled by the caller)."""
    if isinstance(expr, cst.Call) and expr.args and expr.args[0].keyword is None:
        name = dotted_name(expr.func)
        if name is not None and name.rsplit(".", 1)[-1] in torch_api.ITERATION_WRAPPERS:
            return expr.args[0].value
    return expr


def _iterates_devices(iterable: cst.BaseExpression, values: dict[int, Value]) -> bool:
    """``for i in range(torch.cuda.device_count())`` only runs where CUDA is available
    (also over ``visible = list(range(...))``: the sequence is empty without CUDA)."""
    return _is_cuda_guard(values.get(id(iterable), UNKNOWN), +1)


def _is_exit_call(expr: cst.BaseExpression) -> bool:
    if not isinstance(expr, cst.Call):
        return False
    name = dotted_name(expr.func)
    return name is not None and name in torch_api.EXIT_CALLS


# Methods that add a part to a module container (``nn.Sequential``, ``nn.ModuleList``).
_ADDS_MODULES = frozenset({"add_module", "register_module", "append", "extend", "insert"})
# Keyword arguments of torch functions that are operands like the positional ones.
_TENSOR_KEYWORDS = frozenset(
    {"input", "target", "other", "weight", "bias", "pos_weight", "weights"}
)
# Builtins whose result is empty (falsy) exactly when their last argument, a count, is 0.
_GUARD_PRESERVING = frozenset({"len", "range", "list", "tuple", "sorted"})
_NAMES_CUDA = re.compile(r"\b(?:cuda|gpu)\b", re.IGNORECASE)


def _refusal_names_cuda(statement: cst.BaseStatement) -> bool:
    """``if not cuda: raise/return ...`` whose body says, in a string, that CUDA is needed."""
    return type(statement) is cst.If and any(
        _NAMES_CUDA.search(string.value) for string in _strings_in(statement.body)
    )


def _strings_in(node: cst.CSTNode) -> list[cst.SimpleString | cst.FormattedStringText]:
    if isinstance(node, cst.SimpleString | cst.FormattedStringText):
        return [node]
    return [found for child in node.children for found in _strings_in(child)]


def _is_library_module(module: cst.Module) -> bool:
    """No work at the top level: only imports, definitions, assignments and docstrings."""
    for statement in module.body:
        if isinstance(statement, cst.If) and _is_main_test(statement.test):
            return False
        if isinstance(statement, cst.For | cst.While | cst.With):
            return False
        if isinstance(statement, cst.SimpleStatementLine) and any(
            type(small) is cst.Expr and type(small.value) is not cst.SimpleString
            for small in statement.body
        ):
            return False
    return True


def _is_main_test(test: cst.BaseExpression) -> bool:
    if type(test) is not cst.Comparison:
        return False
    sides = {dotted_name(test.left), _string_value(test.comparisons[0].comparator)}
    return sides == {"__name__", "__main__"}


def _always_exits(body: cst.BaseSuite) -> bool:
    statements: Sequence[cst.CSTNode] = body.body
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1]
    if isinstance(last, cst.Return | cst.Raise | cst.Continue | cst.Break):
        return True
    if isinstance(last, cst.Expr):
        return _is_exit_call(last.value)
    if isinstance(last, cst.If) and last.orelse is not None:
        orelse = last.orelse
        other = orelse.body if isinstance(orelse, cst.Else) else cst.IndentedBlock(body=[orelse])
        return _always_exits(last.body) and _always_exits(other)
    return False


def analyze(module: cst.Module, guard_functions: Iterable[str] = ()) -> FileFacts:
    """Run the device-flow analysis over a parsed module."""
    return Analyzer(guard_functions).analyze(module)
