"""The interpreter's torch API effects: one handler per ``torch_api.Effect``.

``calls.py`` resolves a call to a torch (or NumPy, torchvision) API and asks the semantics
table what it does (``torch_api.call_effect``); the effect's handler (``HANDLERS``:
``Effects.factory`` for ``Effect.FACTORY``...) gives the call's value: a device, a
loader, a module on the CPU, a tensor where its ``device=`` says, a guard.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

import libcst as cst

from devlint.analysis import guards, library_api, name_guesses, torch_api
from devlint.analysis.interpreter import Interpreter
from devlint.analysis.syntax import dotted_name, moves_to_a_device, string_value, strings_in
from devlint.analysis.torch_api import Effect
from devlint.analysis.values import (
    ANY_DEVICE,
    CPU,
    CUDA,
    UNKNOWN,
    Kind,
    Placement,
    Step,
    Value,
    chain,
    is_index,
    join_placements,
    placement_words,
)

# Keyword arguments of torch functions that are operands like the positional ones.
_TENSOR_KEYWORDS = frozenset(
    {
        "input", "target", "other", "weight", "bias", "pos_weight", "weights",
        "outputs", "inputs", "grad_outputs",  # ``torch.autograd.grad``
    }
)  # fmt: skip


def is_float64(dtype: Value) -> bool:
    """A dtype value (``torch.float64``, ``np.float64``, ``float``, ``"float64"``)."""
    name = dtype.qualname if dtype.kind in (Kind.IMPORTED, Kind.UNKNOWN) else None
    if dtype.kind is Kind.CONSTANT and isinstance(dtype.constant, str):
        name = dtype.constant
    return name in torch_api.FLOAT64_DTYPES


# Values whose placement says where a loader over them batches.
_DATASETS = (Kind.TENSOR, Kind.INSTANCE)


def _floating_by_default(node: cst.Call, callee: str) -> bool:
    """A factory whose dtype is the default floating dtype: ``torch.zeros(3)``, or
    ``torch.tensor([0.5, 1.5])`` of float literals."""
    leaf = callee.rsplit(".", 1)[-1]
    if leaf in torch_api.DEFAULT_DTYPE_FACTORIES:
        return True
    data = node.args[0].value if node.args else None
    return (
        leaf == "tensor"
        and isinstance(data, cst.List | cst.Tuple)
        and any(type(element.value) is cst.Float for element in data.elements)
    )


_DEVICE_KW = ("type", "device")  # ``torch.device(type=..., index=...)``


class Effects:
    """The effect handlers (see the module docstring)."""

    def __init__(self, core: Interpreter) -> None:
        self.core = core

    def apply(
        self,
        effect: Effect,
        node: cst.Call,
        callee: str,
        args: list[Value],
        keywords: dict[str, Value],
    ) -> Value:
        """The value of a call of a torch API with this effect (``HANDLERS``)."""
        return HANDLERS[effect](self, node, callee, args, keywords)

    def availability(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        backend = torch_api.CUDA_AVAILABILITY[callee]
        tested = (Step(node, f"{backend} availability tested here"),)
        return replace(guards.availability(backend), placed=tested)

    def skip_decorator(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        polarity = +1 if callee in torch_api.SKIP_UNLESS else -1
        return (
            guards.CUDA_AVAILABLE if args and guards.is_cuda_guard(args[0], polarity) else UNKNOWN
        )

    def device(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        first = keywords.get("type") or keywords.get("device") or (args[0] if args else None)
        if first is not None and first.kind is Kind.DEVICE:
            chosen = first.placed or (Step(node, "device chosen here"),)
            # ``torch.device("cuda")``: a CUDA default like the literal it converts, named
            # by the whole call (reported, and fixed, there if it reaches a placement).
            written = [arg.value for arg in node.args if arg.keyword is None][:1] + [
                arg.value for arg in node.args if arg.keyword and arg.keyword.value in _DEVICE_KW
            ]
            inside = {id(literal) for arg in written for literal in [arg, *strings_in(arg)]}
            defaults = tuple(d for d in first.cuda_defaults if id(d) not in inside)
            if len(defaults) < len(first.cuda_defaults):
                defaults = (node, *defaults)
            return Value(Kind.DEVICE, first.where, cuda_defaults=defaults, placed=chosen)
        if first is not None and first.kind is Kind.CONSTANT and isinstance(first.constant, str):
            return Value(Kind.DEVICE)  # ``torch.device("meta")``: none of cpu, cuda, mps
        if self.cuda_index_call(node):
            # ``torch.device(torch.cuda.current_device())``: the CUDA runtime's device (a bare
            # index, ``torch.device(0)``, is the current accelerator's since torch 2.5)
            return Value(Kind.DEVICE, CUDA, placed=(Step(node, "device chosen here"),))
        return Value(Kind.DEVICE, ANY_DEVICE)

    def cuda_index_call(self, node: cst.Call) -> bool:
        """Whether the first argument of ``node`` is ``torch.cuda.current_device()``."""
        first = node.args[0].value if node.args else None
        if type(first) is not cst.Call:
            return False
        called = self.core.rec.values.get(id(first.func), UNKNOWN)
        return called.kind is Kind.IMPORTED and called.qualname in torch_api.CUDA_INDEX_CALLS

    def accelerator(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        return Value(Kind.DEVICE, ANY_DEVICE)

    def loader(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        device = keywords.get("device")
        if device is not None and device.kind is Kind.DEVICE:
            return Value(Kind.LOADER, device.where)  # DGL: batches made on ``device``
        collated_on = self.collated_on(node)
        if collated_on is not None:
            return Value(Kind.LOADER, collated_on)
        dataset = args[0] if args else keywords.get("dataset") or keywords.get("data")
        moved = dataset is not None and dataset.kind is Kind.UNKNOWN  # ``data.to(device)``
        if dataset is not None and (dataset.kind in _DATASETS or moved) and dataset.where:
            # ``TensorDataset(x.to(device))``, this file's dataset of device tensors
            # (``datasets.py``): the batches are where the dataset's items are.
            return Value(Kind.LOADER, dataset.where, computed_from=dataset.computed_from)
        return Value(Kind.LOADER)

    def collated_on(self, node: cst.Call) -> Placement:
        """``collate_fn=batcher(device)``: a function of this file, given a device, whose
        body moves what it collates: the batches are on that device. ``collate_fn=collate``,
        a function of this file that moves what it collates: wherever it moves them."""
        collate = next(
            (a.value for a in node.args if a.keyword and a.keyword.value == "collate_fn"), None
        )
        if type(collate) is cst.Name:
            function = self.core.definitions.function_defs.get(collate.value)
            return ANY_DEVICE if function is not None and moves_to_a_device(function) else None
        if type(collate) is not cst.Call or type(collate.func) is not cst.Name:
            return None
        factory = self.core.definitions.function_defs.get(collate.func.value)
        values = self.core.rec.values
        devices = [
            value
            for arg in collate.args
            if (value := values.get(id(arg.value), UNKNOWN)).kind is Kind.DEVICE
        ]
        if factory is None or len(devices) != 1 or not moves_to_a_device(factory):
            return None
        return devices[0].where

    def tensor_dataset(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        if not args or any(not arg.where for arg in args):
            return UNKNOWN
        return Value(Kind.TENSOR, join_placements(arg.where for arg in args))

    def loader_wrapper(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        return self.wrapped_loader(node) if node.args else UNKNOWN

    def image_to_tensor(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        return Value(Kind.TENSOR, CPU)  # ``TF.to_tensor(image)``

    def transform(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        # ``T.Compose([..., T.ToTensor(), ...])`` returns CPU tensors, like a CPU module.
        if callee in torch_api.TRANSFORM_PIPELINES and not self.converts_images(node):
            return UNKNOWN
        return Value(Kind.MODULE, CPU)

    def load(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        location = keywords.get("map_location")
        if location is not None and location.kind is Kind.DEVICE:
            # whatever was saved (a state dict, numbers, settings), its tensors placed there
            return Value(Kind.UNKNOWN, location.where)
        return UNKNOWN

    def module(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        ids = keywords.get("device_ids")
        moves_inputs = callee in torch_api.DISTRIBUTED_WRAPPERS and ids is not None
        if (callee in torch_api.SCATTERING_WRAPPERS or moves_inputs) and args:
            return Value(Kind.MODULE, args[0].where, qualname=callee)
        if callee in torch_api.WRAPPERS and args:
            return Value(Kind.MODULE, args[0].where)
        if callee in torch_api.MODULE_CONTAINERS:  # ``nn.Sequential(a, b)``
            if any(arg.star for arg in node.args):
                return Value(Kind.MODULE)  # ``nn.Sequential(*layers)``: where its parts are
            parts = [*args, *keywords.values()]
            known = [part.where for part in parts if part.kind is Kind.MODULE]
            if not parts or len(known) < len(parts) or None in known:
                return Value(Kind.MODULE)  # where its parts are: unknown
            known = [p.where for p in parts if not p.stateless] or known  # ``nn.ReLU()``
            return Value(Kind.MODULE, join_placements(known), built_by=node)
        device = keywords.get("device")
        where = device.where if device is not None and device.kind is Kind.DEVICE else None
        if device is None:
            where = self.core.default_device
        stateless = torch_api.is_stateless_module(callee)
        # Named where calling it takes some inputs on the host (``nn.CTCLoss``).
        qualname = callee if callee in torch_api.HOST_ARGUMENT_CALLS else None
        return Value(Kind.MODULE, where, qualname=qualname, stateless=stateless, built_by=node)

    def parameter(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        return Value(Kind.TENSOR) if args else UNKNOWN  # lives wherever its module is moved

    def identity(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        return args[0] if args else UNKNOWN  # ``Variable(x)`` is x

    def accelerate(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        if callee in library_api.BOOSTER_CLASSES:
            return Value(Kind.IMPORTED, qualname=library_api.BOOSTER_OBJECT)
        return Value(Kind.IMPORTED, qualname=library_api.ACCELERATOR_OBJECT)

    def lightning(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        accelerator = keywords.get("accelerator", UNKNOWN).constant
        if isinstance(accelerator, str) and accelerator in library_api.CUDA_ACCELERATOR_NAMES:
            return Value(Kind.IMPORTED, qualname=library_api.LIGHTNING_CUDA_OBJECT)
        return Value(Kind.IMPORTED, qualname=library_api.LIGHTNING_OBJECT)

    def prepare(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        """Modules, loaders, tensors and values of unknown kind (a model of a class from
        another file) on the accelerator's device (any device); the rest as they were. One
        value for one argument, else the tuple (``boost``'s five, those not given ``None``)."""
        step = (Step(node, "placed on the accelerator's device here"),)
        given: list[Value | None] = list(args)
        if callee == library_api.BOOST:
            rest = library_api.BOOST_PARAMETERS[len(args) :]
            given += [keywords.get(name) for name in rest]
        prepared = tuple(
            UNKNOWN
            if value is None
            else Value(Kind.LOADER, ANY_DEVICE, placed=step)
            if value.kind is Kind.LOADER
            else value.moved(ANY_DEVICE, step)
            if value.kind in (Kind.MODULE, Kind.TENSOR, Kind.UNKNOWN)  # a model of another file
            else value
            for value in given
        )
        if len(prepared) == 1:
            return prepared[0]
        return Value(Kind.UNKNOWN, elements=prepared)

    def legacy_type(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        if callee == torch_api.DEFAULT_TENSOR_TYPE:
            # ``torch.Tensor(losses)`` copies into a new tensor of the default type, a CPU
            # one unless the code sets another (``set_default_tensor_type``); from a flat
            # list (``torch.Tensor([dy, dx])``) a vector, whose items are 0-dim
            data = node.args[0].value if node.args and node.args[0].keyword is None else None
            flat = type(data) in (cst.List, cst.Tuple) and not any(
                type(element.value) in (cst.List, cst.Tuple)
                for element in data.elements  # type: ignore[union-attr]
            )
            where = self.core.default_device
            origins = (node,) if where == CPU else ()  # DEV014's "another factory"
            return Value(Kind.TENSOR, where, vector=flat, origins=origins)
        if torch_api.legacy_tensor_type(callee) == "cuda":
            return Value(Kind.TENSOR, CUDA)
        return Value(Kind.TENSOR, CPU, origins=(node,))  # ``torch.FloatTensor(...)``: DEV014's too

    def factory(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        value = self.new_tensor(node, callee, args, keywords)
        if value.kind is not Kind.TENSOR:
            return value
        dtype = keywords.get("dtype")
        if dtype is not None:
            return replace(value, float64="explicit" if is_float64(dtype) else "")
        if self.core.default_float64 and _floating_by_default(node, callee):
            return replace(value, float64="explicit")  # after ``set_default_dtype(float64)``
        from_data = callee.endswith((".tensor", ".as_tensor", ".from_numpy", ".asarray"))
        data = args[0] if args else UNKNOWN
        if from_data and data.kind is Kind.ARRAY and data.float64:
            return replace(value, float64="numpy")  # ``torch.from_numpy(np.random.rand(3))``
        return replace(value, float64="")

    def default_device(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        self.core.default_device_set = True  # factories anywhere may land there (analyzer.py)
        return UNKNOWN

    def default_dtype(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        dtype = args[0] if args else keywords.get("d")
        self.core.default_float64 = dtype is not None and is_float64(dtype)
        return UNKNOWN

    def default_tensor_type(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        """``torch.set_default_tensor_type(torch.cuda.DoubleTensor)``: a device and a dtype."""
        text = (
            (dotted_name(node.args[0].value) or string_value(node.args[0].value) or "")
            if node.args
            else ""
        )
        self.core.default_float64 = text.endswith("DoubleTensor")
        if ".cuda." in text:
            self.core.default_device_set = True
        return UNKNOWN

    def numpy(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        """A NumPy array; float64 by NumPy's default unless ``dtype=`` says otherwise."""
        dtype = keywords.get("dtype")
        if dtype is not None:
            return Value(Kind.ARRAY, float64="numpy" if is_float64(dtype) else "")
        if callee in library_api.NUMPY_FLOAT64:
            return Value(Kind.ARRAY, float64="numpy")
        data = node.args[0].value if node.args else None
        if type(data) in (cst.List, cst.Tuple):  # ``np.array([0.5, 1.5])``
            floats = any(type(e.value) is cst.Float for e in data.elements)  # type: ignore[union-attr]
            return Value(Kind.ARRAY, float64="numpy" if floats else "")
        source = args[0] if args else UNKNOWN
        return Value(Kind.ARRAY, float64=source.float64 if source.kind is Kind.ARRAY else "")

    def new_tensor(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        device = keywords.get("device")
        if any(arg.star == "**" for arg in node.args):
            return Value(Kind.TENSOR)  # ``**kwargs`` may carry the device
        if device is not None:
            if device.kind is not Kind.DEVICE:
                return Value(Kind.TENSOR)
            made = Step(node, f"created on {placement_words(device.where)} here")
            return Value(Kind.TENSOR, device.where, placed=chain(device.placed, (made,)))
        if callee.endswith("_like") and args:
            return Value(Kind.TENSOR, args[0].where)
        data = node.args[0].value if node.args else None
        from_data = callee.endswith((".tensor", ".as_tensor", ".scalar_tensor"))
        is_number = type(data) in (cst.Integer, cst.Float) or (
            type(data) is cst.Name and data.value in ("True", "False")
        )
        if from_data and not (is_number or type(data) in (cst.List, cst.Tuple)):
            if data is None:
                return Value(Kind.TENSOR)
            source = self.core.rec.values.get(id(data), UNKNOWN)
            if source.listed:  # ``torch.tensor(losses)`` of a list of tensors: new, by default
                return self.made_by_default(node, scalar=False)
            if source.kind is Kind.TENSOR:  # ``torch.tensor(t)`` keeps the device of t
                return Value(Kind.TENSOR, source.where, origins=source.origins)
            # ``torch.tensor(rewards)``, ``torch.tensor(self.dim)``: Python data, made on the
            # CPU; a number (0-dim, mixes with any device) unless the name says it holds
            # several (or a shape is given: ``.view(1, 3, 1, 1)``).
            several = not is_index(source) and name_guesses.names_a_sequence(
                dotted_name(data) or ""
            )  # an ``int`` (``num_components: int``) makes a number whatever its name
            return self.made_by_default(node, scalar=not several)
        no_shape = type(data) in (cst.Tuple, cst.List) and not data.elements  # type: ignore[union-attr]
        # ``torch.zeros(())``: a shape of no dimensions makes a 0-dim tensor (Olive's kquant)
        result = self.made_by_default(node, scalar=(is_number if from_data else no_shape))
        numbers = type(data) in (cst.List, cst.Tuple) and all(
            type(element.value) in (cst.Integer, cst.Float)
            for element in data.elements  # type: ignore[union-attr]
        )
        one_dimension = callee.rsplit(".", 1)[-1] in torch_api.ONE_DIMENSION_FACTORIES
        if result.where == CPU and ((from_data and numbers) or one_dimension):
            return replace(result, vector=True)
        return result

    def made_by_default(self, node: cst.Call, scalar: bool) -> Value:
        """A factory's tensor without ``device=``: on the default device, the CPU unless
        the code changed it (``torch.set_default_device``, ``with torch.device(d):``).
        ``origins`` records the factories made on the CPU by default (DEV013, DEV014)."""
        where = self.core.default_device
        origins = (node,) if where == CPU else ()
        return Value(Kind.TENSOR, where, scalar=scalar, origins=origins)

    def imported(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        """``torch = pytest.importorskip("torch")``: the module, as ``import torch`` binds it."""
        named = args[0].constant if args and args[0].kind is Kind.CONSTANT else None
        return Value(Kind.IMPORTED, qualname=named) if isinstance(named, str) and named else UNKNOWN

    def operation(
        self, node: cst.Call, callee: str, args: list[Value], keywords: dict[str, Value]
    ) -> Value:
        operands = list(self.tensor_operands(node))
        if callee in torch_api.HOST_ARGUMENT_CALLS:  # ``F.ctc_loss(log_probs, targets, ...)``
            operands = operands[: torch_api.HOST_ARGUMENT_CALLS[callee]]
        return self.core.operators.combine(node, operands)

    def converts_images(self, pipeline: cst.Call) -> bool:
        """A ``Compose([...])`` whose list holds an image-to-tensor transform."""
        steps = pipeline.args[0].value if pipeline.args else None
        if not isinstance(steps, cst.List | cst.Tuple):
            return False
        return any(
            (record := self.core.rec.calls.get(id(step.value))) is not None
            and record.callee in torch_api.IMAGE_TO_TENSOR
            for step in steps.elements
        )

    def wrapped_loader(self, node: cst.Call) -> Value:
        """``tqdm(loader)`` is still the loader when the loop iterates over it."""
        first = node.args[0].value
        name = dotted_name(first)
        value = self.core.rec.values.get(id(first), UNKNOWN)
        if value.kind is Kind.LOADER or (
            name is not None and name_guesses.is_loader_like_name(name)
        ):
            return Value(Kind.LOADER, value.where if value.kind is Kind.LOADER else None)
        return UNKNOWN

    def tensor_operands(self, node: cst.Call) -> Iterable[tuple[cst.BaseExpression, Value]]:
        """Tensor arguments, looking inside literal lists (``torch.cat([a, b])``): positional
        ones and the keywords that must share the input's device (``weight=w``)."""
        values = self.core.rec.values
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value not in _TENSOR_KEYWORDS:
                continue
            if isinstance(arg.value, cst.List | cst.Tuple):
                for element in arg.value.elements:
                    yield element.value, values.get(id(element.value), UNKNOWN)
            else:
                yield arg.value, values.get(id(arg.value), UNKNOWN)


EffectHandler = Callable[[Effects, cst.Call, str, list[Value], dict[str, Value]], Value]

# The handler of each effect of the semantics table (``torch_api.Effect``).
HANDLERS: dict[Effect, EffectHandler] = {
    Effect.AVAILABILITY: Effects.availability,
    Effect.SKIP_DECORATOR: Effects.skip_decorator,
    Effect.IMPORT: Effects.imported,
    Effect.DEVICE: Effects.device,
    Effect.ACCELERATOR: Effects.accelerator,
    Effect.LOADER: Effects.loader,
    Effect.TENSOR_DATASET: Effects.tensor_dataset,
    Effect.LOADER_WRAPPER: Effects.loader_wrapper,
    Effect.IMAGE_TO_TENSOR: Effects.image_to_tensor,
    Effect.TRANSFORM: Effects.transform,
    Effect.LOAD: Effects.load,
    Effect.MODULE: Effects.module,
    Effect.PARAMETER: Effects.parameter,
    Effect.IDENTITY: Effects.identity,
    Effect.LEGACY_TYPE: Effects.legacy_type,
    Effect.FACTORY: Effects.factory,
    Effect.DEFAULT_DEVICE: Effects.default_device,
    Effect.DEFAULT_DTYPE: Effects.default_dtype,
    Effect.DEFAULT_TENSOR_TYPE: Effects.default_tensor_type,
    Effect.ACCELERATE: Effects.accelerate,
    Effect.PREPARE: Effects.prepare,
    Effect.LIGHTNING: Effects.lightning,
    Effect.NUMPY: Effects.numpy,
    Effect.OPERATION: Effects.operation,
}
