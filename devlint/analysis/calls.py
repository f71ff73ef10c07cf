"""The interpreter's calls: torch APIs, tensor and module methods, this file's code.

A call is recorded (``CallRecord``: callee, receiver, argument values, site) and given a
value. Torch APIs go through the semantics table (``torch_api.call_effect``): one handler
per effect, no API names here. Methods of tensors and modules (``.to``, ``.cuda``,
``.type``...) follow ``torch_api``'s method tables. A module-level function of this file
is re-run at the call with the caller's arguments (bounded inlining: ``inlining.py``) to
learn what it returns; calling a module compares its inputs with its device (a ``Mix``).
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from devlint.analysis import guards, name_guesses, torch_api
from devlint.analysis.effects import is_float64
from devlint.analysis.facts import CallRecord, Mix, Operand
from devlint.analysis.interpreter import Interpreter, batch_of
from devlint.analysis.project_imports import CallerCall
from devlint.analysis.requirements import private_method
from devlint.analysis.syntax import (
    changes_binding,
    computes_on_parameters,
    dotted_name,
    is_main_test,
    string_value,
)
from devlint.analysis.torch_api import Effect
from devlint.analysis.values import (
    ANY_DEVICE,
    CPU,
    CUDA,
    NAMESPACE,
    UNKNOWN,
    Kind,
    Placement,
    Step,
    Value,
    chain,
    follow_operands,
    is_index,
    join_placements,
    may_be_accelerator,
    placement_words,
)

# NumPy array methods that leave NumPy (``tolist``, ``item``): not arrays.
_ARRAY_TO_HOST = frozenset({"tolist", "item", "tobytes"})


# Builtins whose result is falsy exactly when their last argument, a count or flag, is.
_GUARD_PRESERVING = frozenset({"len", "range", "list", "tuple", "sorted", "bool"})


class Calls:
    """Call handlers (see the module docstring)."""

    def __init__(self, core: Interpreter) -> None:
        self.core = core
        self.compute_methods: dict[tuple[str, str], bool] = {}

    def call(self, node: cst.Call) -> Value:
        func = node.func
        receiver: Value | None = None
        method: str | None = None
        callee_value = self.core.expressions.expr(func) if type(func) is not cst.Attribute else None
        if type(func) is cst.Attribute:
            assert isinstance(func, cst.Attribute)
            key = dotted_name(func)
            known = self.core.lookup(key) if key is not None else None
            if known is not None:
                callee_value = known
            else:
                receiver = self.core.expressions.expr(func.value)
                if receiver.kind is Kind.IMPORTED and receiver.qualname:
                    qualname = f"{receiver.qualname}.{func.attr.value}"
                    callee_value, receiver = Value(Kind.IMPORTED, qualname=qualname), None
                else:
                    method = func.attr.value
            if callee_value is not None:
                self.core.rec.values[id(func)] = callee_value
        args: list[Value] = []
        keywords: dict[str, Value] = {}
        starred: list[Value] = []
        # ``torch.cuda.set_device(device)``, ``dist.init_process_group(device_id=device)``:
        # a torch API that computes nothing places nothing with the device it is given.
        reading, places_nothing = (
            self.core.comparing,
            (
                callee_value is not None
                and callee_value.kind is Kind.IMPORTED
                and callee_value.qualname is not None
                and not torch_api.places_by_keyword(callee_value.qualname)
            ),
        )
        self.core.comparing = reading or places_nothing
        marks = self.test_marks(node)  # evaluated first: they decide where the rest runs
        skipped = marks is not None and guards.is_cuda_guard(marks[1], +1)
        # No change, no new context: the site of every call in a block stays one object.
        changes = {"guarded": True} if skipped and not self.core.ctx.guarded else {}
        with self.core.scope(**changes):
            for arg in node.args:
                value = marks[1] if marks is not None and arg is marks[0] else None
                self.argument(arg, value, callee_value, args, keywords, starred)
        self.core.comparing = reading
        imported = callee_value is not None and callee_value.kind is Kind.IMPORTED
        callee = callee_value.qualname if imported and callee_value is not None else None
        named = callee
        if (
            callee is None
            and type(func) is cst.Name
            and func.value in _RECORDED_BUILTINS
            and self.core.lookup(func.value) is None
        ):
            named = f"builtins.{func.value}"  # ``dict(device="cuda")``: a record
        record = CallRecord(node, named, method, receiver, tuple(args), keywords, self.core.site())
        if starred and self.core.rec.pinning_dicts:
            record.pinned_by = self.unpacked_pin(node)
        self.core.rec.calls[id(node)] = record
        self.note_call(record, func)
        if method is not None and receiver is not None:
            own = self.own_method(func, method)
            if own is not None and not starred:
                inlined = self.core.inlining.call(own, args, keywords, bound=1)
                if inlined is not UNKNOWN:
                    return inlined
            return self.method_call(node, receiver, method, args, keywords)
        if callee is not None:
            if self.core.imports.is_project_name(callee):
                self.note_project_call(callee, node, args, keywords)
                returned = self.project_call(callee, args)
                if returned is not None:
                    return returned
            return self.library_call(node, callee, args, keywords, starred)
        if callee_value is None:
            return UNKNOWN
        return self.value_call(node, callee_value, args, keywords, starred)

    def argument(
        self,
        arg: cst.Arg,
        value: Value | None,
        callee_value: Value | None,
        args: list[Value],
        keywords: dict[str, Value],
        starred: list[Value],
    ) -> None:
        """One argument of a call (evaluated here unless ``value`` is given) into
        ``args``, ``keywords`` or ``starred``."""
        if value is None:
            value = self.core.expressions.expr(arg.value)
        if (
            callee_value is None
            or callee_value.qualname is None
            or not (callee_value.qualname.startswith("torch."))
        ):
            self.core.note_read(value)  # ``attr.ib(default=torch.device("cuda"))``
        if arg.keyword is not None:
            keywords[arg.keyword.value] = value
        elif arg.star:
            starred.append(value)
        else:
            args.append(value)

    def test_marks(self, node: cst.Call) -> tuple[cst.Arg, Value] | None:
        """``marks=`` of ``pytest.param(torch.device("cuda"), marks=pytest.mark.skipif(not
        available))`` and its value: a guard where the case runs only with CUDA."""
        func = node.func
        name: str | None = None
        if type(func) is cst.Attribute:
            name = func.attr.value
        elif type(func) is cst.Name:
            name = func.value
        if name != "param" or dotted_name(func) not in ("pytest.param", "param"):
            return None
        arg = next((a for a in node.args if a.keyword and a.keyword.value == "marks"), None)
        if arg is None:
            return None
        marks = arg.value
        if isinstance(marks, cst.List | cst.Tuple):
            values = [self.core.expressions.expr(element.value) for element in marks.elements]
            guard = next((v for v in values if guards.is_cuda_guard(v, +1)), UNKNOWN)
            return arg, guard
        return arg, self.core.expressions.expr(marks)

    def unpacked_pin(self, node: cst.Call) -> cst.DictElement | None:
        """The ``"pin_memory": True`` entry of a dict this call unpacks (``**kwargs``),
        bound in this function or at module level."""
        for arg in node.args:
            name = dotted_name(arg.value) if arg.star == "**" else None
            if name is not None:
                pins = self.core.rec.pinning_dicts
                entry = pins.get((id(self.core.ctx.function), name)) or pins.get((id(None), name))
                if entry is not None:
                    return entry
        return None

    def project_call(self, callee: str, args: list[Value]) -> Value | None:
        """A function of a project module (``from utils import reduce_dict``): what it
        returns for any arguments, or on the device of the tensors it is given."""
        on_inputs = _on_devices_of(args)
        found = self.core.imports.project_summary(callee, may_be_accelerator(on_inputs.where))
        if found is None:
            return None
        summary, name = found
        returned = summary.returns.get(name)
        if returned is not None and returned != UNKNOWN:
            return returned
        if name in summary.follows_inputs and on_inputs.kind is Kind.TENSOR:
            return on_inputs
        return None

    def note_project_call(
        self, callee: str, node: cst.Call, args: list[Value], keywords: dict[str, Value]
    ) -> None:
        """In an entry script's caller analysis (``analyzer.caller_summary``): what this
        call of a project module's function passes, with the availability flags set on
        each argument that is a name (``args.cuda``). Not while inlining."""
        if self.core.imports.project_calls is None or self.core.returns is not None:
            return
        flags: dict[int | str, dict[str, Value]] = {}
        positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
        named = {arg.keyword.value: arg for arg in node.args if arg.keyword is not None}
        keyed: list[tuple[int | str, cst.Arg]] = [*enumerate(positional), *named.items()]
        for key, arg in keyed:
            holder = dotted_name(arg.value)
            prefix = f"{holder}."
            found = {
                name[len(prefix) :]: value
                for name, value in [*self.core.module_env.items(), *self.core.env.items()]
                if holder and name.startswith(prefix) and value.kind is Kind.GUARD
            }
            if found:
                flags[key] = found
        self.core.imports.project_calls.append(
            (callee, CallerCall(tuple(args), dict(keywords), flags))
        )

    def note_call(self, record: CallRecord, func: cst.BaseExpression) -> None:
        """Remember calls of this file's functions, and the DEV011 candidates in them, for
        *CUDA required* (requirements.py). Not while inlining: those records are dropped."""
        if self.core.returns is not None:
            return
        function = record.site.function
        if record.method in torch_api.PLACING_METHODS and function is not None:
            self.core.definitions.placing_functions.add(id(function))
        if type(func) is cst.Name and func.value in self.core.definitions.function_defs:
            self.core.local_calls.append((func.value, record.site, self.core.owner))
        elif record.method is not None and _calls_on_self(func):
            # ``self._helper(...)``: a call of the class's private method
            method = private_method(record.site.class_name, record.method)
            if method is not None:
                self.core.local_calls.append((method, record.site, self.core.owner))
        site = record.site
        if (
            record.callee in torch_api.CUDA_ONLY_CALLS
            and self.core.owner is not None
            and not (site.guarded or site.cuda_required)
        ):
            self.core.owned_records.append((record, self.core.owner))

    # -- methods of tensors and modules

    def target_placement(self, target: Value | None, node: cst.Call) -> tuple[Placement, bool]:
        """Where ``.to(target)`` sends a value; the bool says whether it moves at all."""
        if target is None:
            return None, False
        if target.kind in (Kind.DEVICE, Kind.TENSOR, Kind.TENSOR_TYPE):
            return target.where, True
        if is_index(target):  # ``.to(0)``, ``.to(rank)``: an accelerator by its index
            return CUDA, True
        if target.kind is Kind.IMPORTED and target.qualname in torch_api.DTYPES:
            return None, False
        first = node.args[0].value if node.args else None
        if type(first) is cst.Call:  # ``x.to(torch.get_default_dtype())``
            first = first.func
        name = dotted_name(first) if first is not None else None
        if name is not None and name_guesses.is_device_like_name(name):
            return ANY_DEVICE, True
        names_device = any(arg.keyword and arg.keyword.value == "device" for arg in node.args)
        if name is not None and name_guesses.names_a_dtype(name) and not names_device:
            return None, False
        return None, True

    def method_call(
        self,
        node: cst.Call,
        receiver: Value,
        method: str,
        args: list[Value],
        keywords: dict[str, Value],
    ) -> Value:
        if receiver.kind is Kind.INSTANCE:
            # An object of this file's own class: ``meter.cuda()`` is its own method (which
            # mimics torch's and returns the object), not a placement.
            if method in torch_api.MOVE_METHODS:
                return receiver
            return self.instance_method(receiver, method, args, keywords)
        if method == "cuda":
            return receiver.moved(CUDA, (Step(node, "moved to cuda here"),))
        if method == "cpu":
            return receiver.moved(CPU, (Step(node, "moved to the CPU here"),))
        if method in ("to", "type"):
            return self.move_or_cast(node, receiver, method, args, keywords)
        if method == "add_argument":
            self.note_option(node, keywords)
        if method == "parse_args":
            return Value(qualname=NAMESPACE)  # ``ns = parser.parse_args()``: ``ns.device``
        if method == "parse_known_args":
            return Value(elements=(Value(qualname=NAMESPACE), UNKNOWN))
        if method == "format" and _is_cuda_template(receiver):
            # ``"cuda:{}".format(rank)``: a CUDA device, like ``f"cuda:{rank}"``.
            template = node.func.value if isinstance(node.func, cst.Attribute) else node
            return Value(
                Kind.DEVICE, CUDA, cuda_defaults=self.core.expressions.unguarded(template, CUDA)
            )
        if method == "type_as" and args:
            return receiver.moved(args[0].where, _move_steps(node, args[0], args[0].where))
        if (
            method == "startswith"
            and args
            and args[0].kind is Kind.DEVICE
            and args[0].where == CUDA
        ):
            return guards.ON_CUDA  # ``str(device).startswith("cuda")`` classifies
        if method == "forward" and receiver.kind is Kind.MODULE:
            return self.value_call(node, receiver, args, keywords, [])
        if (
            receiver.kind is Kind.UNKNOWN
            and receiver.where is None
            and (method == "forward" or name_guesses.is_loss_like_name(method))
        ):
            # ``model.forward(x)`` is the call ``model(x)``; ``model.loss(out, y)`` combines
            # its inputs, as an unknown callable named like a loss does
            return self.module_call(node, receiver)
        if (
            method in torch_api.MODULE_TENSOR_ITERATORS
            and receiver.kind in (Kind.MODULE, Kind.UNKNOWN)
            and receiver.where
        ):
            # a moved module's tensors are there
            return Value(Kind.TENSOR, receiver.where, placed=receiver.placed)
        if method == "detach" and receiver.kind is Kind.UNKNOWN:
            # only tensors have ``.detach()``
            return Value(Kind.TENSOR, receiver.where, placed=receiver.placed)
        if receiver.kind is Kind.MODULE:
            return self.module_method(node, receiver, method, args, keywords)
        if receiver.kind is Kind.TENSOR:
            return self.tensor_method(node, receiver, method, args)
        if receiver.kind is Kind.UNKNOWN and may_be_accelerator(receiver.where):
            return _computed_by_moved(receiver, method, args)
        if receiver.kind is Kind.ARRAY:  # ``a.astype(np.float32)``, ``a.reshape(...)``
            if method == "astype" and args:
                return Value(Kind.ARRAY, float64="numpy" if is_float64(args[0]) else "")
            return receiver if method not in _ARRAY_TO_HOST else UNKNOWN
        return UNKNOWN

    def move_or_cast(
        self,
        node: cst.Call,
        receiver: Value,
        method: str,
        args: list[Value],
        keywords: dict[str, Value],
    ) -> Value:
        """``x.to(device)``, ``x.to(torch.float64)``, ``x.type(torch.cuda.FloatTensor)``."""
        target = keywords.get("device") or (args[0] if args else None)
        if method == "type" and (target is None or target.kind is not Kind.TENSOR_TYPE):
            return receiver.derived() if receiver.kind is Kind.TENSOR and args else UNKNOWN
        where, moves = self.target_placement(target, node)
        moves = moves or any(arg.star for arg in node.args)  # ``x.to(*args)``
        self.core.rec.calls[id(node)].casts_only = not moves
        if moves and method == "to" and type(node.func) is cst.Attribute:
            self.core.rec.moved_receivers.add(id(node.func.value))  # ``self.mask.to(x.device)``
        result = receiver.moved(where, _move_steps(node, target, where)) if moves else receiver
        if result.kind is Kind.TENSOR and not moves:
            result = receiver.derived()
        dtype = keywords.get("dtype") or next(
            (a for a in args if a.kind is Kind.IMPORTED and a.qualname in torch_api.DTYPES),
            None,
        )
        if dtype is not None and result.kind is Kind.TENSOR:
            result = replace(result, float64="explicit" if is_float64(dtype) else "")
        return result

    def note_option(self, node: cst.Call, keywords: dict[str, Value]) -> None:
        """``parser.add_argument("--device", default="cuda")``: ``args.device`` is CUDA by
        default (reported once, at the default: DEV003)."""
        default = keywords.get("default")
        if default is None or default.kind is not Kind.DEVICE or not default.cuda_defaults:
            return
        dest = keywords.get("dest", UNKNOWN).constant
        flags = [string_value(arg.value) or "" for arg in node.args if arg.keyword is None]
        names = [flag.lstrip("-").replace("-", "_") for flag in flags if flag.startswith("--")]
        name = dest if isinstance(dest, str) else next(iter(names), None)
        if name is not None:
            value = Value(Kind.DEVICE, ANY_DEVICE, cuda_defaults=default.cuda_defaults)
            self.core.option_defaults[name] = value
            self.core.rec.definition_literals.update(map(id, default.cuda_defaults))

    def module_method(
        self,
        node: cst.Call,
        receiver: Value,
        method: str,
        args: list[Value],
        keywords: dict[str, Value],
    ) -> Value:
        if method in torch_api.MODULE_SELF_METHODS:
            return receiver
        if receiver.qualname and self.computes_like_forward(receiver.qualname, method):
            # ``vae.decode(z)``: computes with the module's parameters, like ``forward``.
            return self.value_call(node, receiver, args, keywords, [])
        own_class = receiver.qualname in self.core.definitions.module_methods
        if not own_class and may_be_accelerator(receiver.where):
            return _computed_by_moved(receiver, method, args)  # a class from another file
        return UNKNOWN

    def tensor_method(
        self, node: cst.Call, receiver: Value, method: str, args: list[Value]
    ) -> Value:
        if method in torch_api.NON_TENSOR_METHODS or method in torch_api.MODULE_ONLY_METHODS:
            return UNKNOWN
        if method in torch_api.DTYPE_METHODS:
            float64 = "explicit" if torch_api.DTYPE_METHODS[method] else ""
            return replace(receiver.derived(), float64=float64)
        if method in torch_api.DEVICE_FREE_METHODS:
            return receiver.derived()
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if method in torch_api.FILL_METHODS:
            # ``x.masked_fill_(mask, value)``: the value may be a 0-dim tensor anywhere; only
            # the mask (or index) must share the device.
            positional = positional[: torch_api.FILL_METHODS[method]]
        operands = [(node.func, receiver)] + [
            (arg.value, value) for arg, value in zip(positional, args, strict=False)
        ]
        return self.core.expressions.combine(node, operands)

    def computes_like_forward(self, class_name: str, method: str) -> bool:
        """Whether ``method`` of this file's module class reads ``self`` and neither moves
        nor converts anything (``syntax.computes_on_parameters``); a plain method only."""
        key = (class_name, method)
        if key not in self.compute_methods:
            node = self.core.definitions.module_methods.get(class_name, {}).get(method)
            self.compute_methods[key] = (
                node is not None
                and method not in ("__init__", "forward")
                and not any(changes_binding(decorator) for decorator in node.decorators)
                and computes_on_parameters(node)
            )
        return self.compute_methods[key]

    # -- torch APIs, through the semantics table

    def library_call(
        self,
        node: cst.Call,
        callee: str,
        args: list[Value],
        keywords: dict[str, Value],
        starred: list[Value],
    ) -> Value:
        effect = torch_api.call_effect(callee)
        leaf = callee.rsplit(".", 1)[-1]
        if effect is not Effect.AVAILABILITY and (
            callee in self.core.guard_functions
            or leaf in self.core.guard_leaf_names
            or name_guesses.GUARD_FUNCTION_NAME.match(leaf)
        ):
            return guards.CUDA_AVAILABLE
        if effect is None and name_guesses.MPS_GUARD_FUNCTION_NAME.match(leaf):
            return guards.availability("mps")
        if effect is None:
            return UNKNOWN
        return self.core.effects.apply(effect, node, callee, args, keywords)

    # -- this file's functions, classes and callable values

    def value_call(
        self,
        node: cst.Call,
        callee: Value,
        args: list[Value],
        keywords: dict[str, Value],
        starred: list[Value],
    ) -> Value:
        function = node.func.value if type(node.func) is cst.Name else None
        if function in ("all", "any") and callee.kind is Kind.UNKNOWN and len(node.args) == 1:
            tested = node.args[0].value
            if isinstance(tested, cst.GeneratorExp | cst.ListComp):
                # ``all(d.type == "cuda" for d in devices)``: each element a device test, so
                # where it holds, CUDA is (one element of ``any``; all of ``all``)
                element = self.core.rec.values.get(id(tested.elt), UNKNOWN)
                if element.kind is Kind.GUARD:
                    return element
        if function in _GUARD_PRESERVING and args and args[-1].kind is Kind.GUARD:
            # ``len(torch.cuda.default_generators) > 0``; ``list(range(device_count()))``
            # is empty exactly where CUDA is absent, so it tests and iterates like the count.
            return args[-1]
        if callee.kind is Kind.CLASS:
            if function is not None:
                self.core.name_calls[function] += 1
            return self.instantiate(callee, args, keywords)
        if callee.kind is Kind.TENSOR_TYPE:
            return Value(Kind.TENSOR, callee.where)  # ``Tensor(3, 4)`` of a legacy type
        leaf = (dotted_name(node.func) or "").rsplit(".", 1)[-1]
        if leaf in name_guesses.LOADER_WRAPPERS and node.args and callee.kind is not Kind.MODULE:
            return self.core.effects.wrapped_loader(node)  # a local ``tqdm`` stand-in, say
        if leaf == "next" and args and args[0].kind is Kind.LOADER:
            return batch_of(args[0], node)  # ``images, labels = next(iter(loader))``
        if leaf == "enumerate" and args and args[0].kind is Kind.LOADER:
            return args[0]  # ``_, (x, y) = next(enumerate(loader))``: the index goes along
        if callee.kind is Kind.FUNCTION:
            return self.function_call(node, callee, args, keywords, starred)
        if callee.kind is Kind.IMPORTED:
            # one of several imported callables (``F.cross_entropy if raw else mix_loss``):
            # what an unknown callable would return; a single one is a library's
            return self.module_call(node, callee) if callee.qualname is None else UNKNOWN
        if function == "isinstance" and guards.cuda_type_test(node) is not None:
            return guards.ON_CUDA  # ``isinstance(x, torch.cuda.FloatTensor)``: ``x.is_cuda``
        if function == "int" and callee.kind is Kind.UNKNOWN:
            return Value(Kind.INTEGER)  # ``int(os.environ["LOCAL_RANK"])``
        if function == "str" and args and args[0].kind is Kind.DEVICE:
            return args[0]  # ``str(device)``: the same device, as a string
        if function in torch_api.NON_TENSOR_BUILTINS and callee.kind is Kind.UNKNOWN:
            return UNKNOWN  # ``len(batch)``: an int, not a result on the batch's device
        return self.module_call(node, callee)

    def instantiate(self, callee: Value, args: list[Value], keywords: dict[str, Value]) -> Value:
        """An instance of a class defined in this file: a module (on the default device
        where ``module_classes.py`` sees it built there), or an object (a dataset's
        placement is where its items are: ``datasets.py``). An object whose class has a
        base this file cannot see (``class G(models.Generator):``) is of unknown kind."""
        core = self.core
        if callee.qualname is None:
            return UNKNOWN  # ``Model = GPT if fine else FineGPT``: one of several classes
        if core.returns is None and not self.in_self_test():
            constructed = core.definitions.constructor_args.setdefault(callee.qualname, [])
            constructed.append((tuple(args), dict(keywords)))
        if callee.qualname in core.definitions.module_classes:
            stateless = callee.qualname in core.definitions.stateless_classes
            where = core.default_device
            module = Value(Kind.MODULE, where, qualname=callee.qualname, stateless=stateless)
            return core.module_classes.instance(module, args, keywords)
        instance = core.datasets.instance(
            Value(Kind.INSTANCE, qualname=callee.qualname), args, keywords
        )
        if instance.kind is Kind.INSTANCE and callee.qualname in core.definitions.unseen_bases:
            return UNKNOWN  # a base this file cannot see may make it a module (or a tensor)
        return instance

    def in_self_test(self) -> bool:
        """Module-level code under ``if __name__ == "__main__":``: a library module's own
        demonstration (``SegmentationLosses(cuda=True)``), not how the code that imports
        it constructs its classes (not while inlining either)."""
        ctx = self.core.ctx
        return ctx.function is None and any(
            type(branch.node) is cst.If and is_main_test(branch.node.test)
            for branch in ctx.branches
        )

    def function_call(
        self,
        node: cst.Call,
        callee: Value,
        args: list[Value],
        keywords: dict[str, Value],
        starred: list[Value],
    ) -> Value:
        core, definitions = self.core, self.core.definitions
        name = callee.qualname or ""
        if name in core.guard_leaf_names or name_guesses.GUARD_FUNCTION_NAME.match(name):
            return guards.CUDA_AVAILABLE
        if type(node.func) is cst.Name:
            core.name_calls[node.func.value] += 1
        if starred:
            return UNKNOWN
        if name not in definitions.function_defs and name in definitions.imported_returns:
            return definitions.imported_returns[name]  # a star-imported project module's function
        if core.returns is None:  # not while inlining
            definitions.call_args.setdefault(name, []).append((tuple(args), dict(keywords)))
        return self.core.inlining.call(definitions.function_defs.get(name), args, keywords)

    def module_call(self, node: cst.Call, callee: Value) -> Value:
        """Calling a module (or a value of unknown kind): its inputs meet its device."""
        inputs = [
            (arg.value, self.core.rec.values.get(id(arg.value), UNKNOWN)) for arg in node.args
        ]
        imported = callee.kind is Kind.IMPORTED  # one of several functions from elsewhere
        if (callee.kind is Kind.UNKNOWN or imported) and callee.where is None:
            # An unknown callable (a parameter ``model``, ``self.net``): a loss-like name
            # combines its inputs; anything else returns a result on their device.
            callee_name = dotted_name(node.func) or ""
            if name_guesses.names_a_class(callee_name):
                return UNKNOWN  # ``cls(config)``, ``ModelClass(checkpoint["args"])``: an object
            if name_guesses.is_loss_like_name(callee_name):
                return self.core.expressions.combine(node, inputs)
            if not name_guesses.follows_its_inputs(callee_name):
                return UNKNOWN  # ``convert2cpu(x)``
            known = [  # a value of unknown kind moved with ``.to(device)`` counts too, but
                # a function from elsewhere given a moved model is no model computing there
                v.where
                for _, v in inputs
                if (v.kind is Kind.TENSOR or (v.kind is Kind.UNKNOWN and not imported)) and v.where
            ]
            where = frozenset().union(*known)
            # Given only CPU tensors, its result is where the callable is, which is not
            # known (a model on the GPU wrapped in ``DataParallel`` takes CPU batches).
            if not may_be_accelerator(where):
                return UNKNOWN
            followed = [v for _, v in inputs if v.kind in (Kind.TENSOR, Kind.UNKNOWN)]
            placed = chain(*(v.placed for v in followed if may_be_accelerator(v.where)))
            computed = (Step(node, "computed from them here"),) if placed else ()
            return follow_operands(
                Value(Kind.TENSOR, where, placed=chain(placed, computed)), followed
            )
        if callee.kind not in (Kind.MODULE, Kind.UNKNOWN, Kind.TENSOR):
            return UNKNOWN
        if callee.qualname in torch_api.HOST_ARGUMENT_CALLS:  # ``nn.CTCLoss()(log_probs, ...)``
            inputs = inputs[: torch_api.HOST_ARGUMENT_CALLS[callee.qualname]]
        if callee.stateless or callee.where is None:
            return self.core.expressions.combine(node, inputs)
        if callee.qualname in torch_api.INPUT_MOVING_WRAPPERS and "mps" not in callee.where:
            return Value(Kind.TENSOR, callee.where)  # scattered from any device to CUDA
        tensors = [(n, v) for n, v in inputs if v.kind is Kind.TENSOR]
        if callee.from_caller and any(may_be_accelerator(v.where) for _, v in tensors):
            # An object of unknown kind that the caller moved and passed (a model of a class
            # from elsewhere), given batch elements moved to the device and others left: it
            # takes those as they are (captions it tokenizes itself, BLIP's
            # ``model(image, caption)``).
            tensors = [(n, v) for n, v in tensors if not (v.from_batch and v.where == CPU)]
        if tensors:
            operands = (
                Operand(None, Value(Kind.MODULE, callee.where, placed=callee.placed)),
                *(Operand(n, v) for n, v in tensors),
            )
            self.core.rec.mixes[id(node)] = Mix(node, operands, self.core.site())
        computed = (Step(node, "computed by the model here"),) if callee.placed else ()
        result = Value(Kind.TENSOR, callee.where, placed=chain(callee.placed, computed))
        return follow_operands(result, [callee])  # where the module is

    def instance_method(
        self, receiver: Value, method: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        """``stats.use_cuda_events()`` of an object of this file's class: what its plain
        method returns, with the attributes its class sets (a guard, say)."""
        definitions = self.core.definitions
        node = definitions.class_methods.get(receiver.qualname or "", {}).get(method)
        if node is None or node.decorators or not node.params.params:
            return UNKNOWN
        attributes = definitions.class_attributes.get(receiver.qualname or "", {})
        return self.core.inlining.call(node, args, keywords, bound=1, attributes=attributes)

    def own_method(self, func: cst.BaseExpression, method: str) -> cst.FunctionDef | None:
        """The method of this class that ``self.method(...)`` calls inside one of its
        methods (a plain method: not a static, class or property one, nor torch's)."""
        ctx = self.core.ctx
        if (
            ctx.class_name is None
            or ctx.function is None
            or type(func) is not cst.Attribute
            or method in torch_api.MOVE_METHODS
            or method in torch_api.MODULE_SELF_METHODS
        ):
            return None
        assert isinstance(func, cst.Attribute)
        own_params = ctx.function.params.params
        receiver = func.value
        if not own_params or type(receiver) is not cst.Name:
            return None
        assert isinstance(receiver, cst.Name)
        if own_params[0].name.value != receiver.value:
            return None
        node = self.core.definitions.class_methods.get(ctx.class_name, {}).get(method)
        if node is None or node is ctx.function or node.decorators or not node.params.params:
            return None
        return node


def _calls_on_self(func: cst.BaseExpression) -> bool:
    """``self.m`` as the function of a call."""
    return (
        type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self"
    )


def _computed_by_moved(receiver: Value, method: str, args: list[Value]) -> Value:
    """``g_ema.style(z)`` of a moved module whose class is not in this file: like calling
    it, a result on the device of the tensors it is given (unknown without any)."""
    if method in torch_api.MODULE_SELF_METHODS or method in torch_api.MODULE_ONLY_METHODS:
        return UNKNOWN  # ``model.load_state_dict(cpu_state)`` computes nothing on them
    result = _on_devices_of(args)
    if not may_be_accelerator(result.where):
        # Given CPU tensors only, the method of a module on the device may compute with
        # its parameters there or move them itself (``x, y = model.parse_batch(batch)``).
        return UNKNOWN
    return follow_operands(result, [a for a in args if a.kind is Kind.TENSOR])


def _on_devices_of(args: list[Value]) -> Value:
    """A tensor wherever the tensors among ``args`` with a known placement may be
    (unknown without any): what a computation on them returns."""
    placed = [arg for arg in args if arg.kind is Kind.TENSOR and arg.where]
    if not placed:
        return UNKNOWN
    where = join_placements(arg.where for arg in placed)
    return Value(Kind.TENSOR, where, placed=chain(*(arg.placed for arg in placed)))


def _move_steps(node: cst.Call, target: Value | None, where: Placement) -> tuple[Step, ...]:
    """The steps of a move to ``where`` by ``target``: how it was chosen, then the move."""
    before = target.placed if target is not None else ()
    return chain(before, (Step(node, f"moved to {placement_words(where)} here"),))


def _is_cuda_template(value: Value) -> bool:
    """A string constant that formats into a CUDA device name: ``"cuda:{}"``."""
    text = value.constant
    return (
        value.kind in (Kind.CONSTANT, Kind.DEVICE)
        and isinstance(text, str)
        and text.startswith("cuda:")
    )


_RECORDED_BUILTINS = frozenset({"dict"})
