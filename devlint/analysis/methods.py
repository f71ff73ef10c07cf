"""The interpreter's method calls: ``receiver.method(...)`` on tensors, modules, objects of
this file's classes and values of unknown kind.

``.to``/``.cuda``/``.cpu``/``.type`` move or cast (``move_or_cast``); other methods
follow ``torch_api``'s method tables: a tensor method computes on its operands' devices,
a module's computing method on the module's, a method of this file's class is re-run with
its arguments (bounded inlining: ``inlining.py``). Calls of functions, classes and torch
APIs are ``calls.py``'s, which hands methods here.
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from devlint.analysis import guards, name_guesses, torch_api
from devlint.analysis.effects import is_float64
from devlint.analysis.interpreter import Interpreter
from devlint.analysis.syntax import (
    changes_binding,
    computes_on_parameters,
    dotted_name,
    string_value,
)
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
    join_placement,
    join_placements,
    may_be_accelerator,
    placement_words,
)

# NumPy array methods that leave NumPy (``tolist``, ``item``): not arrays.
_ARRAY_TO_HOST = frozenset({"tolist", "item", "tobytes"})


class Methods:
    """Method call handlers (see the module docstring)."""

    def __init__(self, core: Interpreter) -> None:
        self.core = core
        self.compute_methods: dict[tuple[str, str], bool] = {}

    def device_appended(self, node: cst.Call, devices: Value, device: Value) -> None:
        """``devices.append("cuda")`` on a literal list of devices (``devices = ["cpu"]``,
        ``expressions.container``): one of them may now be that device too."""
        name = node.func.value if isinstance(node.func, cst.Attribute) else None
        if device.kind is Kind.DEVICE and type(name) is cst.Name and devices.constant is None:
            where = join_placement(devices.where, device.where)
            defaults = (*devices.cuda_defaults, *device.cuda_defaults)
            self.core.bind(name, Value(Kind.DEVICE, where, cuda_defaults=defaults))

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

    def inferred_method_call(
        self,
        node: cst.Call,
        receiver: Value,
        method: str,
        args: list[Value],
        keywords: dict[str, Value],
    ) -> Value:
        """A method of what an unseen function returned (``loss_fn(out, y).mean()``):
        computed where it is, and still inferred (``Value.computed_from``)."""
        result = self.method_call(
            node, replace(receiver, computed_from=None), method, args, keywords
        )
        if result.kind is Kind.UNKNOWN and result.where is None:
            return Value(Kind.UNKNOWN, receiver.where, computed_from=receiver.computed_from)
        if result.where == receiver.where and not result.computed_from:
            return replace(result, computed_from=receiver.computed_from)
        return result

    def method_call(
        self,
        node: cst.Call,
        receiver: Value,
        method: str,
        args: list[Value],
        keywords: dict[str, Value],
    ) -> Value:
        if receiver.computed_from is not None and receiver.kind is Kind.UNKNOWN:
            return self.inferred_method_call(node, receiver, method, args, keywords)
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
        special = self.special_method(node, receiver, method, args, keywords)
        if special is not None:
            return special
        configured = self.configured_device(node, receiver, args) if method == "get" else None
        if configured is not None:
            return configured
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

    def special_method(
        self,
        node: cst.Call,
        receiver: Value,
        method: str,
        args: list[Value],
        keywords: dict[str, Value],
    ) -> Value | None:
        """The methods that mean the same on any receiver: an argparse parser's, a device
        template's ``format``, ``type_as``, a device-string test, ``forward``, a module's
        tensors, ``detach``; None for the others."""
        parsed = self.command_line_method(node, method, keywords)
        if parsed is not None:
            return parsed
        if method == "format" and _is_cuda_template(receiver):
            # ``"cuda:{}".format(rank)``: a CUDA device, like ``f"cuda:{rank}"``.
            template = node.func.value if isinstance(node.func, cst.Attribute) else node
            return Value(
                Kind.DEVICE, CUDA, cuda_defaults=self.core.expressions.unguarded(template, CUDA)
            )
        if method == "type_as" and args:
            return receiver.moved(args[0].where, _move_steps(node, args[0], args[0].where))
        if (
            method in ("startswith", "__contains__")
            and args
            and args[0].kind is Kind.DEVICE
            and args[0].where == CUDA
        ):
            # ``str(device).startswith("cuda")`` (``.__contains__("cuda")``) classifies
            return guards.ON_CUDA
        if method == "forward" and receiver.kind is Kind.MODULE:
            return self.core.calls.value_call(node, receiver, args, keywords, [])
        if method == "append" and receiver.kind is Kind.DEVICE and args:
            self.device_appended(node, receiver, args[0])
        if (
            receiver.kind is Kind.UNKNOWN
            and receiver.where is None
            and (method == "forward" or name_guesses.is_loss_like_name(method))
        ):
            # ``model.forward(x)`` is the call ``model(x)``; ``model.loss(out, y)`` combines
            # its inputs, as an unknown callable named like a loss does
            return self.core.calls.module_call(node, receiver)
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
        return None

    def command_line_method(
        self, node: cst.Call, method: str, keywords: dict[str, Value]
    ) -> Value | None:
        """``parser.add_argument(...)`` (None: the call goes on as any other),
        ``parser.parse_args()`` and ``parse_known_args()``: the options' namespace."""
        if method == "add_argument":
            self.note_option(node, keywords)
        elif method == "parse_args":
            self.core.parses_command_line = True
            return Value(qualname=NAMESPACE)  # ``ns = parser.parse_args()``: ``ns.device``
        elif method == "parse_known_args":
            self.core.parses_command_line = True
            return Value(elements=(Value(qualname=NAMESPACE), UNKNOWN))
        return None

    def configured_device(self, node: cst.Call, receiver: Value, args: list[Value]) -> Value | None:
        """``config.get("device", "cuda")``: the configuration's device, or the CUDA literal
        where it names none, as a parameter's default is for the callers that omit it; a
        key this function has set (``kwargs["device"] = device``) is there."""
        if len(args) != 2 or receiver.kind is not Kind.UNKNOWN:
            return None
        if args[1].kind is not Kind.DEVICE or not args[1].cuda_defaults:
            return None
        assigned = _assigned_key(node, self.core)
        if assigned is not None:
            return assigned
        return Value(
            Kind.DEVICE, ANY_DEVICE, cuda_defaults=args[1].cuda_defaults, chosen=frozenset()
        )

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
        if method == "type" and target is None and receiver.kind is Kind.TENSOR:
            # ``x.type()``: the name of x's type, which says its device; ``eye.type(
            # f_cov.type())`` puts ``eye`` there (solo-learn's whitening, eval/blind140)
            return Value(Kind.TENSOR_TYPE, receiver.where, placed=receiver.placed)
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
            value = Value(
                Kind.DEVICE, ANY_DEVICE, cuda_defaults=default.cuda_defaults, chosen=frozenset()
            )
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
            return self.core.calls.value_call(node, receiver, args, keywords, [])
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
        if receiver.whole_batch and any(arg.kind is Kind.TENSOR for arg in args):
            # what the loader yields, whole, handed a tensor by a method of its own: a batch
            # object's (XMem's video readers: ``vid_reader.resize_mask(mask)``), not a
            # tensor operation (``batch.pop("labels")`` still gives a batch element)
            return UNKNOWN
        operands = [(node.func, receiver)] + [
            (arg.value, value) for arg, value in zip(positional, args, strict=False)
        ]
        return self.core.operators.combine(node, operands)

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


def _computed_by_moved(receiver: Value, method: str, args: list[Value]) -> Value:
    """``g_ema.style(z)`` of a moved module whose class is not in this file: like calling
    it, a result on the device of the tensors it is given (unknown without any), as an
    inference (``Value.computed_from``): the class may return it elsewhere
    (``predict_label`` ending in ``.cpu()``, InternVideo2, eval/blind117)."""
    if method in torch_api.MODULE_SELF_METHODS or method in torch_api.MODULE_ONLY_METHODS:
        return UNKNOWN  # ``model.load_state_dict(cpu_state)`` computes nothing on them
    result = on_devices_of(args)
    if not may_be_accelerator(result.where):
        # Given CPU tensors only, the method of a module on the device may compute with
        # its parameters there or move them itself (``x, y = model.parse_batch(batch)``).
        return UNKNOWN
    result = replace(result, computed_from=result.where)
    return follow_operands(result, [a for a in args if a.kind is Kind.TENSOR])


def on_devices_of(args: list[Value]) -> Value:
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


def _assigned_key(node: cst.Call, core: Interpreter) -> Value | None:
    """For ``mapping.get("key", ...)``: what this function has set as ``mapping["key"]``."""
    func = node.func
    base = dotted_name(func.value) if isinstance(func, cst.Attribute) else None
    key = string_value(node.args[0].value) if node.args else None
    return core.assigned_keys.get(id(core.ctx.function), {}).get(f"{base}.[{key}]")
