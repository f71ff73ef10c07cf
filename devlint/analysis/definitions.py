"""The interpreter's definitions: functions, classes, ``self`` and parameter values.

A ``def`` queues its body (``PendingBody``) with the context it was defined in; bodies run
after the module's code. A function body starts from its parameters: device-like names
are devices, ``forward``'s inputs are tensors, ``self`` of an ``nn.Module`` class is a
module, and a module-level function called in this file receives the join of what every
call passes (``parameter_seeds``). A class remembers the module classes it derives from,
and what its methods store on ``self`` (seen by the other methods).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import replace

import libcst as cst

from devlint.analysis import guards, library_api, name_guesses, requirements, torch_api
from devlint.analysis.interpreter import Context, Env, Interpreter, PendingBody
from devlint.analysis.loops import steps
from devlint.analysis.syntax import decorator_name, dotted_name, parameters, string_value
from devlint.analysis.values import (
    ANY_DEVICE,
    CPU,
    ELSEWHERE,
    FROM_CALLER,
    UNKNOWN,
    Kind,
    Placement,
    Value,
    is_index,
    join,
    may_be_accelerator,
)

_SEEDED_KINDS = (Kind.TENSOR, Kind.MODULE, Kind.LOADER, Kind.DEVICE)


def _seeded(value: Value) -> bool:
    """A value a parameter starts with: a tensor, module, loader or device of known
    placement, an availability test, or a value of unknown kind that was moved to an accelerator (a model of a
    class from another file, ``GAT(...).to(device)``) by every call; not one of unknown
    kind that only sits on the CPU (a batch element may be text), nor one that only some
    calls moved (``ELSEWHERE``)."""
    if value.kind is Kind.UNKNOWN:
        where = value.where
        return where is not None and may_be_accelerator(where) and ELSEWHERE not in where
    if value.kind is Kind.GUARD:  # every call passes an availability test: ``run(x, avail)``
        return value.polarity != 0
    if is_index(value):  # ``demo(rank)``, ``main(0)``: placed with, a device index
        return True
    if guards.requires_cuda(value):  # ``train(fabric)`` with a CUDA-only ``Fabric``
        return True
    if value.kind is Kind.IMPORTED and value.qualname in library_api.PLACING_OBJECTS:
        return True  # ``main(fabric)``, ``train(accelerator)``: they place what they set up
    return value.kind in _SEEDED_KINDS and bool(value.where)


def _joined(values: list[Value]) -> Value:
    """What a parameter holds over every call: the join of what each passes."""
    joined = values[0]
    for value in values[1:]:
        joined = join(joined, value)
    return joined


def _unseen_base(value: Value, unseen: set[str]) -> bool:
    """A base class whose attributes this file cannot see: one imported from a module
    other than torch's and the standard library's, or a class of this file that has one."""
    if value.kind is Kind.CLASS:
        return value.qualname in unseen
    if value.kind is not Kind.IMPORTED or not value.qualname:
        return False
    root = value.qualname.split(".", 1)[0]
    return root != "torch" and root not in sys.stdlib_module_names


def _seed(value: Value) -> Value:
    """The value a seeded parameter starts with (one of unknown kind marked as the
    caller's: ``Value.from_caller``)."""
    return replace(value, origins=(), from_caller=value.kind is Kind.UNKNOWN)


def _arguments(
    node: cst.FunctionDef,
    calls: Iterable[tuple[tuple[Value, ...], dict[str, Value]]],
    bound: int = 0,
) -> dict[str, list[Value]]:
    """Each parameter (after ``bound`` leading ones) that every call passes: what each
    call passes."""
    calls = list(calls)
    positional = [*node.params.posonly_params, *node.params.params][bound:]
    found: dict[str, list[Value]] = {}
    for index, param in enumerate([*positional, *node.params.kwonly_params]):
        passed: list[Value] = []
        for args, keywords in calls:
            if index < len(positional) and index < len(args):
                passed.append(args[index])
            elif param.name.value in keywords:
                passed.append(keywords[param.name.value])
            else:
                break  # the default: not seen here
        else:
            if passed:
                found[param.name.value] = passed
    return found


class Definitions:
    """Function and class definitions (see the module docstring)."""

    def __init__(self, core: Interpreter) -> None:
        self.core = core
        self.module_classes: set[str] = set()
        # Module classes' bases among this file's module classes, and the classes that
        # derive from a torch layer with parameters (``class Conv(nn.Conv2d)``).
        self.module_bases: dict[str, tuple[str, ...]] = {}
        self.class_parents: dict[str, tuple[str, ...]] = {}  # every class's bases, as written
        self.layer_classes: set[str] = set()
        # module classes that subclass a wrapper scattering its inputs (``class
        # CustomDataParallel(nn.DataParallel)``): that wrapper's name
        self.scattering_classes: dict[str, str] = {}
        self.stateless_classes: set[str] = set()  # module classes without parameters
        self.cuda_classes: set[str] = set()  # classes whose ``__init__`` requires CUDA
        # The methods of the module classes, and which compute on the module's device
        # (``decode``; decided at the first call, see ``methods.computes_like_forward``).
        self.module_methods: dict[str, dict[str, cst.FunctionDef]] = {}
        # Every class's own methods (plain classes too): ``self.method(x)`` inside the
        # class is re-run with its arguments (``methods.own_method``).
        self.class_methods: dict[str, dict[str, cst.FunctionDef]] = {}
        # A class's fields with defaults (``device: str = "cuda"`` in a dataclass of
        # options): what its instances' attributes are where nothing else sets them.
        self.class_fields: dict[str, Env] = {}
        self.class_attributes: dict[str, Env] = {}
        # This file's ``torch.utils.data.Dataset`` classes and their methods (own and those
        # of this file's dataset classes they derive from): ``datasets.py`` runs them.
        self.dataset_classes: dict[str, dict[str, cst.FunctionDef]] = {}
        # Star-imported project modules (project_imports.py): what their functions return,
        # where their datasets' items are.
        self.imported_returns: dict[str, Value] = {}
        self.imported_items: dict[str, Placement] = {}
        self.function_defs: dict[str, cst.FunctionDef] = {}  # module-level functions
        # function id -> its parameters ``pytest.mark.parametrize`` fills with devices
        self.parametrized: dict[int, Env] = {}
        self._steps: dict[tuple[str, str | None], bool] = {}  # ``steps``, by name and class
        # The arguments of each call of this file's classes (``VAE(use_cuda=args.cuda)``),
        # the method bodies of each class, and the parameters each ``__init__`` ran with.
        self.constructor_args: dict[str, list[tuple[tuple[Value, ...], dict[str, Value]]]] = {}
        self.class_bodies: dict[str, list[PendingBody]] = {}
        self.constructor_seeded: dict[str, dict[str, Value]] = {}
        self.base_names: set[str] = set()  # names this file's classes derive from
        # Classes deriving from a class this file does not define and torch does not
        # provide (``class RankerAgent(TorchAgent)`` of another module): an attribute of
        # ``self`` they read but never set is the unseen base's, not unknown-and-absent.
        self.unseen_bases: set[str] = set()
        # The arguments of each call of a module-level function, and the parameter values
        # each body was analysed with.
        self.call_args: dict[str, list[tuple[tuple[Value, ...], dict[str, Value]]]] = {}
        self.seeded: dict[str, dict[str, Value]] = {}
        self.bodies: dict[str, PendingBody] = {}
        self.cuda_module = False  # the whole module requires CUDA (requirements.py)
        # ``pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), ...)``: the
        # module's tests, and the functions defined after it, run only where CUDA is
        self.tests_need_cuda = False
        # Function bodies analysed so far, and those that call ``.to()``/``.cuda()``.
        self.analysed_functions: set[int] = set()
        self.placing_functions: set[int] = set()

    def used_as_value(self, name: str) -> bool:
        """A module-level function read here other than to call it (a callback, a
        ``map(f, ...)`` argument): it is also called from places this file does not show."""
        return self.core.name_reads[name] > self.core.name_calls[name]

    def function_def(self, node: cst.FunctionDef, class_name: str | None) -> None:
        ctx = self.core.ctx
        guarded = ctx.guarded or self.tests_need_cuda
        for decorator in node.decorators:
            value = self.core.expressions.expr(decorator.decorator)
            if guards.is_cuda_guard(value, +1) or self.is_guard_callable(decorator.decorator):
                guarded = True
            self.note_parametrized(node, decorator.decorator)
        at_module = class_name is None and self.core.env is self.core.module_env
        self.core.env[node.name.value] = Value(Kind.FUNCTION, qualname=node.name.value)
        if at_module:
            self.function_defs[node.name.value] = node
        owner = self.core.owner
        if ctx.function is None:
            owner = (
                node.name.value
                if at_module
                else requirements.method_owner(class_name, node.name.value)
            )
        context = Context(guarded=guarded, class_name=class_name, branches=ctx.branches)
        closure = dict(self.core.env) if ctx.function is not None else None
        item = PendingBody(node, context, self.core.cuda_required, owner, closure)
        self.core.pending.append(item)
        if class_name is not None and closure is None:
            self.class_bodies.setdefault(class_name, []).append(item)

    def note_parametrized(self, node: cst.FunctionDef, decorator: cst.BaseExpression) -> None:
        """``@pytest.mark.parametrize("device", devices)`` over a list of devices: the
        parameter is one of them (its CUDA defaults stay where the list was written)."""
        if type(decorator) is not cst.Call or len(decorator.args) < 2:
            return
        callee = self.core.rec.values.get(id(decorator.func), UNKNOWN)
        name = string_value(decorator.args[0].value)
        values = self.core.rec.values.get(id(decorator.args[1].value), UNKNOWN)
        if (
            callee.kind is Kind.IMPORTED
            and callee.qualname == "pytest.mark.parametrize"
            and name is not None
            and name.isidentifier()
            and values.kind is Kind.DEVICE
        ):
            seeds = self.parametrized.setdefault(id(node), {})
            seeds[name] = Value(Kind.DEVICE, values.where)

    def is_guard_callable(self, expr: cst.BaseExpression) -> bool:
        """A configured ``guard-functions`` entry (``@requires_gpu``), or a test library's
        CUDA-only decorator (``@require_torch_gpu``), through imports."""
        target = expr.func if type(expr) is cst.Call else expr
        name = dotted_name(target)
        if name is None:
            return False
        head = name.split(".", 1)[0]
        value = self.core.lookup(head)
        qualname = name
        if value is not None and value.kind is Kind.IMPORTED and value.qualname:
            qualname = value.qualname + name[len(head) :]
        return (
            qualname in self.core.guard_functions
            or name in self.core.guard_functions
            or qualname in library_api.CUDA_TEST_DECORATORS
        )

    def class_def(self, node: cst.ClassDef) -> None:
        guarded = False  # ``@unittest.skipUnless(torch.cuda.is_available(), ...)``
        for decorator in node.decorators:
            value = self.core.expressions.expr(decorator.decorator)
            if guards.is_cuda_guard(value, +1) or self.is_guard_callable(decorator.decorator):
                guarded = True
        if guarded and not self.core.ctx.guarded:
            with self.core.scope(guarded=True):  # every method runs only where CUDA is
                self.class_def_body(node)
        else:
            self.class_def_body(node)

    def class_def_body(self, node: cst.ClassDef) -> None:
        name = node.name.value
        is_module, dataset_bases = self.class_bases(node)
        if is_module:
            self.module_classes.add(name)
            if name_guesses.is_loss_class_name(name) or any(
                torch_api.is_stateless_module(dotted_name(b.value) or "") for b in node.bases
            ):
                self.stateless_classes.add(name)
        saved_env = self.core.env
        self.core.env = (
            dict(self.core.module_env) if saved_env is self.core.module_env else dict(saved_env)
        )
        methods: list[cst.FunctionDef] = []
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        for statement in body:
            if isinstance(statement, cst.FunctionDef):
                methods.append(statement)
            else:
                self.core.statements.statement(statement, None)
        fields = {
            field: self.core.env[field]
            for field in _field_names(body)
            if self.core.env.get(field) is not None
        }
        if fields:
            self.class_fields[name] = fields
        self.core.env = saved_env
        own = {method.name.value: method for method in methods}
        self.class_methods[name] = own
        if is_module:
            self.module_methods[name] = own
        if dataset_bases is not None:
            self.dataset_classes[name] = {**dataset_bases, **own}
        methods.sort(key=lambda method: method.name.value != "__init__")
        for method in methods:
            self.function_def(method, class_name=name)
        self.core.env[name] = Value(Kind.CLASS, qualname=name)

    def class_bases(self, node: cst.ClassDef) -> tuple[bool, dict[str, cst.FunctionDef] | None]:
        """Whether a class is an ``nn.Module``; for a ``Dataset``, the methods it inherits
        from this file's dataset classes (None: not a dataset)."""
        is_module = False
        inherited: dict[str, cst.FunctionDef] | None = None
        local_bases: list[str] = []
        for base in node.bases:
            value = self.core.expressions.expr(base.value)
            self.base_names.add(dotted_name(base.value) or "")
            if type(base.value) is cst.Subscript:  # ``Dataset[Tensor]``
                value = self.core.rec.values.get(id(base.value.value), UNKNOWN)
            if value.kind is Kind.IMPORTED and torch_api.is_module_class(value.qualname):
                is_module = True
                if torch_api.is_layer_class(value.qualname or ""):
                    self.layer_classes.add(node.name.value)
                if value.qualname in torch_api.SCATTERING_WRAPPERS:
                    self.scattering_classes[node.name.value] = value.qualname or ""
            elif value.kind is Kind.CLASS and value.qualname in self.module_classes:
                is_module = True
                local_bases.append(value.qualname or "")
                if value.qualname in self.scattering_classes:
                    wrapper = self.scattering_classes[value.qualname or ""]
                    self.scattering_classes[node.name.value] = wrapper
            if _unseen_base(value, self.unseen_bases):
                self.unseen_bases.add(node.name.value)
            if value.kind is Kind.IMPORTED and value.qualname:
                self.inherit_flags(value.qualname)
            if value.kind is Kind.IMPORTED and value.qualname in torch_api.DATASET_CLASSES:
                inherited = inherited or {}
            elif value.kind is Kind.CLASS and value.qualname in self.dataset_classes:
                inherited = {**self.dataset_classes[value.qualname], **(inherited or {})}
        self.module_bases[node.name.value] = tuple(local_bases)
        self.class_parents[node.name.value] = tuple(
            dotted_name(base.value) or "" for base in node.bases
        )
        return is_module, inherited

    def inherit_flags(self, base: str) -> None:
        """The availability flags a project module's base class sets on its instances
        (``self.use_gpu``, deep-person-reid's ``Engine``): what the subclass's methods
        read as guards."""
        found = self.core.imports.project_summary(base)
        flags = found[0].class_flags.get(found[1], {}) if found is not None else {}
        for attribute, flag in flags.items():
            self.core.guard_attributes.setdefault(f"self.{attribute}", flag)

    def steps(self, name: str, class_name: str | None = None) -> bool:
        """Whether this file's module-level function ``name`` steps an optimizer or runs
        ``backward()`` in its own body (``loops.steps``), once per function. For
        ``self.name`` in a method of ``class_name``: that method of the class, of a base
        or of a subclass in this file (a base's loop calling the hook a subclass
        overrides: ``self.batch_update(x, y)``)."""
        key = (name, class_name)
        found = self._steps.get(key)
        if found is None:
            if name.startswith("self."):
                method = name[len("self.") :]
                related = self._related_classes(class_name) if class_name else set()
                methods = [self.class_methods.get(c, {}) for c in related]
                nodes = [own[method] for own in methods if method in own]
            else:
                nodes = [self.function_defs[name]] if name in self.function_defs else []
            found = self._steps[key] = any(steps(node) for node in nodes)
        return found

    def _related_classes(self, class_name: str) -> set[str]:
        """A class of this file with its ancestors and its descendants in this file (not
        its siblings: another subclass of its base is another object)."""
        ancestors, descendants = {class_name}, {class_name}
        for _ in range(len(self.class_parents)):  # one level a pass, to a fixpoint
            up = {p for c in ancestors for p in self.class_parents.get(c, ())}
            down = {c for c, parents in self.class_parents.items() if descendants & set(parents)}
            if up <= ancestors and down <= descendants:
                break
            ancestors, descendants = ancestors | up, descendants | down
        return ancestors | descendants

    def run_pending(self) -> None:
        while self.core.pending:
            batch, self.core.pending = self.core.pending, []
            for item in batch:
                self.function_body(item)

    def function_body(self, item: PendingBody) -> None:
        node, class_name = item.node, item.context.class_name
        saved_env, saved_flow = (
            self.core.env,
            (self.core.cuda_required, self.core.owner, self.core.exits_without_cuda),
        )
        self.core.cuda_required = (
            item.cuda_required
            or self.cuda_module
            or class_name in self.cuda_classes  # its ``__init__`` required CUDA
            or (class_name is not None and node.name.value in requirements.CUDA_PROTOCOL_METHODS)
        )
        self.core.owner, self.core.exits_without_cuda = item.owner, False
        self.core.assigned_keys.pop(id(node), None)  # a new run of the body
        saved_ctx, self.core.ctx = self.core.ctx, replace(item.context, function=node)
        try:
            self.core.env = self.entry_environment(item)
            if any(
                guards.requires_cuda(self.core.env[p.name.value]) for p in parameters(node.params)
            ):
                # handed an object that exists only with CUDA (``get_batch(fabric, data)``)
                self.core.ctx = replace(self.core.ctx, guarded=True)
            self.core.statements.suite(node.body)
            self.analysed_functions.add(id(node))
            self.note_mps_at_end(id(node))
            if class_name is not None and node.name.value == "__init__":
                self.note_cuda_class(node, class_name)
            if class_name is not None:
                attributes = self.class_attributes.setdefault(class_name, {})
                for key, value in self.core.env.items():
                    if key.startswith("self."):
                        known = attributes.get(key)
                        attributes[key] = join(known, value) if known is not None else value
        finally:
            self.core.ctx, self.core.env = saved_ctx, saved_env
            self.core.cuda_required, self.core.owner, self.core.exits_without_cuda = saved_flow

    def note_mps_at_end(self, scope: int) -> None:
        """The names assigned an MPS device in this scope (id of its function, 0 for the
        module) that may still hold it where its code ends."""
        self.core.rec.mps_at_end.update(
            key
            for key in self.core.rec.mps_assigned
            if key[0] == scope
            and (value := self.core.env.get(key[1])) is not None
            and value.kind is Kind.DEVICE
            and "mps" in (value.where or ())
        )

    def note_cuda_class(self, node: cst.FunctionDef, class_name: str) -> None:
        """An ``__init__`` that requires CUDA on every path that returns (or refuses to run
        without it): no instance exists without CUDA."""
        if self.core.exits_without_cuda:
            return
        refuses = isinstance(node.body, cst.IndentedBlock) and any(
            self.core.statements.guards_rest_of_block(line) for line in node.body.body
        )
        if self.core.cuda_required or refuses:
            self.cuda_classes.add(class_name)

    def annotated_instance(self, annotation: cst.Annotation) -> Value | None:
        """An object of this file's class (not a module) that an annotation names
        (``PerfStats``, ``"PerfStats"``), whose methods calls on it run."""
        node = annotation.annotation
        name = string_value(node) if isinstance(node, cst.SimpleString) else dotted_name(node)
        if name is None or name not in self.class_methods or name in self.module_classes:
            return None
        return Value(Kind.INSTANCE, qualname=name)

    def entry_environment(self, item: PendingBody) -> Env:
        """The names a function body starts with: closure, ``self`` attributes, parameters."""
        node, class_name = item.node, item.context.class_name
        env: Env = dict(item.closure) if item.closure else {}
        if class_name is not None:
            owner_is_module = class_name in self.module_classes
            for key, value in self.class_attributes.get(class_name, {}).items():
                if value.kind is Kind.MODULE and (owner_is_module or value.where == CPU):
                    # Submodules move with the module that owns them (whose base class may be
                    # one we cannot see): only an explicit move of the attribute is kept.
                    value = Value(Kind.MODULE, qualname=value.qualname, stateless=value.stateless)
                env[key] = value
                self.core.remember(key)
        self.core.env = env
        for param in parameters(node.params):
            env[param.name.value] = self.parameter_value(param, class_name is not None)
        env.update(self.parametrized.get(id(node), {}))
        if class_name is None and item.closure is None:
            self.bodies[node.name.value] = item
            seeds = self.parameter_seeds(node)
            self.seeded[node.name.value] = seeds
            public = not name_guesses.is_private_name(node.name.value)
            for name, seed in seeds.items():
                # Callers elsewhere that omit the argument get the default: a public
                # function's ``device="cuda"`` default still reaches what the body places
                # (DEV003 at the definition); a private one has no callers elsewhere.
                own = env.get(name, UNKNOWN).cuda_defaults if public else ()
                env[name] = replace(seed, cuda_defaults=(*seed.cuda_defaults, *own))
            for key, flag in self.caller_flags(node).items():
                env[key] = flag
                self.core.remember(key)
        if class_name is not None and node.name.value == "__init__" and item.closure is None:
            seeds = self.constructor_seeds(class_name, node)
            self.constructor_seeded[class_name] = seeds
            public = not name_guesses.is_private_name(class_name)
            for name, seed in seeds.items():
                if seed is not UNKNOWN or env.get(name, UNKNOWN).from_caller:
                    # A plain value replaces only the caller's unseen flag; a public
                    # class's ``device="cuda"`` default still reaches what it places for
                    # the constructions elsewhere that omit it (as for functions).
                    own = env.get(name, UNKNOWN).cuda_defaults if public else ()
                    env[name] = replace(seed, cuda_defaults=(*seed.cuda_defaults, *own))
        if any(library_api.parses_command_line(decorator_name(d)) for d in node.decorators):
            # ``@pyrallis.wrap()`` fills ``config: TrainConfig`` from the command line: a
            # field it does not name keeps its default (``device: str = "cuda"``)
            for param in parameters(node.params):
                annotation = param.annotation
                instance = self.annotated_instance(annotation) if annotation else None
                if instance is not None and instance.qualname in self.class_fields:
                    env[param.name.value] = instance
        if class_name in self.module_classes and node.params.params:
            env[node.params.params[0].name.value] = Value(Kind.MODULE)
            if node.name.value == "forward":  # the inputs of a module are tensors
                for param in node.params.params[1:]:
                    if env[param.name.value].kind is Kind.UNKNOWN:
                        env[param.name.value] = Value(Kind.TENSOR)
        return env

    def parameter_value(self, param: cst.Param, in_method: bool) -> Value:
        """A parameter: a device by its name, a guard by its default, else unknown; a
        method's parameter without a default, or off by default (``False``, ``None``), is
        the caller's (``FROM_CALLER``): calls through instances are not followed (a
        module-level function's calls may be)."""
        value = UNKNOWN
        if param.default is not None:
            value = self.core.expressions.expr(param.default)
            self.core.mark_reference(param.default)
        if name_guesses.is_device_like_name(param.name.value):
            # ``def f(x, device="cuda")``: callers may pass any device; the default is CUDA.
            defaults = value.cuda_defaults if value.kind is Kind.DEVICE else ()
            if any(default is param.default for default in defaults):
                self.core.rec.definition_literals.add(id(param.default))  # ``device="cuda"``
            return Value(Kind.DEVICE, ANY_DEVICE, cuda_defaults=defaults, chosen=frozenset())
        if value.kind is Kind.GUARD:
            return value
        annotation = param.annotation.annotation if param.annotation is not None else None
        if type(annotation) is cst.Name and annotation.value == "int":
            return Value(Kind.INTEGER)  # ``gpu_id: int``: placed with, a device index
        if annotation is not None and name_guesses.names_a_pipeline(dotted_name(annotation) or ""):
            # ``model: MarigoldDepthPipeline``: it moves what it is given (calls.py)
            return Value(Kind.MODULE, qualname=torch_api.NAMED_PIPELINE)
        unset = param.default is None or (
            value.kind is Kind.CONSTANT and (value.constant is False or value.constant is None)
        )
        if in_method and unset:
            return FROM_CALLER  # ``def __init__(self, cuda=False)``: the caller decides
        return UNKNOWN

    def called_here(self, node: cst.FunctionDef) -> bool:
        """Whether every call of a module-level function is in this file: it is called
        here and never used as a value (a callback is called from places unseen)."""
        name = node.name.value
        return (
            bool(self.call_args.get(name) or self.core.imports.caller_calls.get(name))
            and self.function_defs.get(name) is node
            and not self.used_as_value(name)
        )

    def caller_flags(self, node: cst.FunctionDef) -> Env:
        """``args.cuda`` for a parameter ``args`` of a function that only entry scripts
        call here, each passing a namespace with that availability flag set (joined)."""
        name = node.name.value
        calls = self.core.imports.caller_calls.get(name)
        if not calls or self.call_args.get(name) or not self.called_here(node):
            return {}
        positional = [*node.params.posonly_params, *node.params.params]
        flags: Env = {}
        for index, param in enumerate([*positional, *node.params.kwonly_params]):
            keys: list[int | str] = [param.name.value]
            if index < len(positional):
                keys.insert(0, index)
            passed = [next((c.flags[k] for k in keys if k in c.flags), {}) for c in calls]
            for attribute in set.intersection(*(set(given) for given in passed)):
                joined = _joined([given[attribute] for given in passed])
                if joined.kind is Kind.GUARD:
                    flags[f"{param.name.value}.{attribute}"] = joined
        return flags

    def constructor_seeds(self, class_name: str, init: cst.FunctionDef) -> dict[str, Value]:
        """What ``__init__``'s parameters hold at every call of the class in this file
        (a class no class here derives from, never used as a value): as for a function's
        (``parameter_seeds``); besides, a flag every call passes a value that is no
        availability test (``VAE(use_cuda=args.cuda)`` with a ``--cuda`` option) is the
        user's setting, not the caller's unseen test (``FROM_CALLER``)."""
        calls = [
            *self.constructor_args.get(class_name, ()),
            *(
                (call.args, call.keywords)
                for call in self.core.imports.caller_calls.get(class_name, ())
            ),
        ]
        if not calls or class_name in self.base_names or self.used_as_value(class_name):
            return {}
        found: dict[str, Value] = {}
        for name, passed in _arguments(init, calls, bound=1).items():
            joined = _joined(passed)
            if _seeded(joined):
                found[name] = _seed(joined)
            elif all(value.kind is not Kind.GUARD and not value.from_caller for value in passed):
                found[name] = UNKNOWN
        return found

    def parameter_seeds(self, node: cst.FunctionDef) -> dict[str, Value]:
        """What a module-level function's parameters hold at every call in this file.

        Only a tensor, module, loader or device that every call passes (joined) counts,
        and only for a function that is called here and never used as a value (a callback
        is called from places unseen).
        """
        if not self.called_here(node):
            return {}
        calls = [
            *self.call_args.get(node.name.value, ()),
            *(
                (call.args, call.keywords)
                for call in self.core.imports.caller_calls.get(node.name.value, ())
            ),
        ]
        found: dict[str, Value] = {}
        for name, passed in _arguments(node, calls).items():
            joined = _joined(passed)
            if _seeded(joined):
                found[name] = _seed(joined)
        return found


def _field_names(body: Iterable[cst.BaseStatement | cst.BaseSmallStatement]) -> list[str]:
    """The names a class body binds with a default: ``device: str = "cuda"``, ``lr = 0.1``."""
    names = []
    for statement in body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.AnnAssign) and small.value is not None:
                target = small.target
            elif isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
            else:
                continue
            if isinstance(target, cst.Name):
                names.append(target.value)
    return names
