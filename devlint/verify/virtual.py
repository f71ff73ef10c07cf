"""Virtual CUDA and MPS on the CPU: real computation, with every tensor's *would-be* device.

``VirtualDevice("cuda")`` (or ``"mps"``) is a context manager under which a program behaves
as on a machine with that accelerator, while every tensor really lives on the CPU:

- ``torch.cuda.is_available()`` / ``torch.backends.mps.is_available()`` /
  ``torch.accelerator.*`` report the device (and only it: the other accelerator is absent);
- ``.cuda()``, ``.to("cuda"/"mps"/device/tensor)``, ``device=`` in factories,
  ``Module.to`` / ``Module.cuda`` give tensors that *report* the device
  (``t.device``, ``t.is_cuda``, ``t.get_device()``) and carry it through every operation;
- an operation whose tensor inputs sit on two devices raises PyTorch's own
  ``RuntimeError: Expected all tensors to be on the same device, but found at least two
  devices, cuda:0 and cpu!`` (CPU 0-dim tensors mix, as in PyTorch; CPU indices may index
  a device tensor; ``copy_`` and ``__setitem__`` copy across devices);
- ``.numpy()`` / ``np.asarray`` of a device tensor raise PyTorch's ``TypeError: can't
  convert cuda:0 device type tensor to numpy. …``; ``.item()``, ``.tolist()``, ``.cpu()``,
  ``bool()``/``float()``/``int()``, printing and ``synchronize()`` work and count as host
  syncs (``syncs``);
- ``DataLoader(pin_memory=True)`` pins silently on CUDA and warns on MPS (torch 2.13's
  own warning, from the DataLoader itself); ``torch.save`` of device tensors records their
  device, and ``torch.load`` restores it, or raises ``Attempting to deserialize object on a
  CUDA device but torch.cuda.is_available() is False. …`` where CUDA is absent and no
  ``map_location`` maps it away;
- on MPS, a float64 tensor raises ``TypeError: Cannot convert a MPS Tensor to float64
  dtype as the MPS framework doesn't support float64. Please use float32 instead.``;
- on MPS, an aten operator without an MPS kernel in the target torch release raises
  torch's ``NotImplementedError``, or warns and runs where torch falls back to the CPU
  (``mps_ops.py``); ``VirtualDevice("mps", release="2.4", record=True)`` emulates that
  release and records instead (``operators``, ``unavailable``: ``devlint run --report``).

Mechanism: a ``torch.overrides.TorchFunctionMode``. Measured on torch 2.11 and 2.13, it
sees every torch function and Tensor method, the ``device`` / ``is_cuda`` / ``grad``
getters and the ``.data`` setter ``Module._apply`` uses, so placement can be tracked above
the dispatcher with plain CPU tensors underneath: autograd, optimizers, DataLoader and
``torch.save`` keep working, and ``.item()`` returns real values. Rejected: a tensor
subclass (``Module.to`` swaps ``param.data`` and drops the subclass, and every factory
would have to produce it); ``__torch_dispatch__`` (below autograd: it sees aten ops, not
``Tensor.numpy`` or ``.device``, and a wrapper subclass must fake its device, which the CPU
kernels then refuse); ``FakeTensorMode`` and the ``meta`` device (no data: ``.item()``
fails, see ``virtual_columns.py``). A device tag lives in a side table keyed by the tensor
object (weakly), so checkpoints never carry it. Parameters and ``Variable``s made from a
tagged tensor inherit its tag; gradients take their parameter's device when read.

Limits: CUDA-only kernels and objects (streams, events, graphs, NCCL), custom C++/CUDA
extensions and ``torch.compile`` do not run; tensors built in other threads or processes
(DataLoader workers) arrive untagged, i.e. on the CPU, as they would; float16 autocast runs
CPU kernels. What the machine around the tensors answers (availability, memory, streams,
DataParallel, save and load) is patched by ``virtual_runtime.py``. Both modules are
self-contained (the standard library and torch): ``bootstrap.py`` loads this one by path in
fixture processes, and it loads its sibling the same way.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
import weakref
from collections.abc import Callable, Iterator
from typing import Any

KINDS = ("cuda", "mps")
MPS_FLOAT64 = (
    "Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support "
    "float64. Please use float32 instead."
)
NUMPY = "can't convert {} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
MISMATCH = (
    "Expected all tensors to be on the same device, but found at least two devices, {} and {}!"
)
MASK = "expected self and mask to be on the same device, but got mask on {} and self on {}"
INDICES = "indices should be either on cpu or on the same device as the indexed tensor ({})"
# Operations that legitimately take tensors from two devices.
MIXING = frozenset(
    {
        "copy_",
        "__setitem__",
        "_has_compatible_shallow_copy_type",
        "result_type",
        "is_same_size",
        "is_set_to",
        "index_put_",
        "index_put",
        "_index_put_impl_",
        "_pack_padded_sequence",
        "pack_padded_sequence",
        "set_",
        "__repr__",
        "__format__",
        "__str__",
    }
)
SYNCING = frozenset(
    {"item", "tolist", "__bool__", "__float__", "__int__", "__index__", "__repr__", "__format__"}
)


class VirtualDevice:
    """A machine whose accelerator is ``kind`` (``cuda`` or ``mps``), simulated on the CPU."""

    def __init__(self, kind: str, release: str | None = None, record: bool = False) -> None:
        if kind not in KINDS:
            raise ValueError(f"no virtual device {kind!r} (choose from {', '.join(KINDS)})")
        import torch

        self.torch: Any = torch
        self.kind = kind
        self.name = f"{kind}:0"
        self.syncs = 0
        self.placed = 0  # tensors moved to or created on the virtual device
        self.asked = 0  # availability questions asked from the user's code
        self.operations = 0  # torch functions and tensor methods run
        self._tags: dict[int, tuple[weakref.ref[Any], str]] = {}  # id -> (tensor, device)
        self._pinned: dict[int, tuple[weakref.ref[Any], str]] = {}
        self._undo: list[Callable[[], None]] = []
        # (owner, attribute, original, replacement) of each patch of the session
        self.patched: list[tuple[Any, str, Any, Any]] = []
        self._mode: Any = None
        self._ops: Any = None  # on MPS: mps_ops.OpCheck
        self.release = release  # the torch release whose MPS backend is emulated (None: env)
        self.record = record  # record the operators run on MPS instead of raising
        self.operators: dict[str, int] = {}  # with ``record``: aten operator -> calls on MPS
        # with ``record``: operator -> [letter, calls, file, line] of those MPS lacks
        self.unavailable: dict[str, list[Any]] = {}
        self._handlers = self._special_handlers()
        # torch's default-device context (``torch.utils._device``) and the factories it
        # gives a device; absent from a release that has none, nothing is given one.
        try:
            self._device_module: Any = importlib.import_module("torch.utils._device")
        except ImportError:
            self._device_module = None
        constructors = getattr(self._device_module, "_device_constructors", None)
        self._constructors: frozenset[Any] = frozenset(constructors() if constructors else ())
        # Built from Python data: given a list of tensors, they read each value
        # (``Tensor.item``) into a new tensor on the default device, not the elements'.
        self._from_data = frozenset({self.torch.tensor, self.torch.as_tensor})

    # -- tags -----------------------------------------------------------------------------

    def device_of(self, tensor: Any) -> str:
        entry = self._tags.get(id(tensor))
        if entry is not None and entry[0]() is tensor:
            return entry[1]
        device = tensor.device
        return "cpu" if device.type == "cpu" else str(device)

    def tag(self, tensor: Any, device: str) -> None:
        if device == "cpu":
            self._tags.pop(id(tensor), None)
        else:
            _remember(self._tags, tensor, device)

    def _tag_all(self, value: Any, device: str) -> None:
        torch = self.torch
        if isinstance(value, torch.Tensor):
            self.tag(value, device)
        elif isinstance(value, (tuple, list)):
            for item in value:
                if isinstance(item, torch.Tensor):
                    self.tag(item, device)

    def canon(self, device: Any) -> str:
        """``"cuda"``, ``torch.device("cuda")``, ``0`` -> ``"cuda:0"``; ``"cpu"`` stays."""
        torch = self.torch
        if _is_index(device):
            return f"{self.kind}:{device}"
        device = torch.device(device)
        if device.type == "cpu":
            return "cpu"
        return f"{device.type}:{device.index or 0}"

    def _indexed(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``.to(0)`` / ``.to(device=0)``: an integer is an index of the current accelerator
        (torch asks its C++ accelerator registry, which knows no virtual device): spelled
        ``"cuda:0"`` here. Changes ``kwargs`` in place."""
        if args and _is_index(args[0]):
            args = (f"{self.kind}:{args[0]}", *args[1:])
        if _is_index(kwargs.get("device")):
            kwargs["device"] = f"{self.kind}:{kwargs['device']}"
        return args, kwargs

    def is_virtual(self, device: str) -> bool:
        return device.split(":")[0] == self.kind

    # -- the context ----------------------------------------------------------------------

    def __enter__(self) -> VirtualDevice:
        RUNTIME.patch_runtime(self)
        if self.kind == "mps":  # operators without an MPS kernel raise (mps_ops.py)
            self._ops = _mps_ops().OpCheck(self.torch, self.release)
            if self.record:
                self._ops.recorder = self._record_operator
            self._undo.append(self._ops.install())
        self._mode = _make_mode(self)
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
        while self._undo:
            self._undo.pop()()
        self.patched.clear()

    def _record_operator(self, name: str, letter: str) -> None:
        self.operators[name] = self.operators.get(name, 0) + 1
        if letter not in ("M", "F"):
            return
        entry = self.unavailable.get(name)
        if entry is not None:
            entry[1] += 1
            return
        frame = sys._getframe(1)  # the first call site: the innermost frame of user code
        while frame is not None and not RUNTIME.is_user_code(frame.f_code.co_filename):
            frame = frame.f_back  # type: ignore[assignment]
        site = (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("", 0)
        self.unavailable[name] = [letter, 1, *site]

    def _sync(self) -> None:
        self.syncs += 1

    def _set(self, owner: Any, name: str, value: Any) -> None:
        """``owner.name = value`` for the session, in the shape of what it replaces."""
        missing = object()
        old = owner.__dict__.get(name, missing) if isinstance(owner, type) else missing
        previous = getattr(owner, name, None) if old is missing else old
        replacement = RUNTIME.shaped_like(previous, value)

        def undo() -> None:
            setattr(owner, name, previous)

        setattr(owner, name, replacement)
        self.patched.append((owner, name, previous, replacement))
        self._undo.append(undo)

    # -- one operation --------------------------------------------------------------------

    def dispatch(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self.operations += 1
        handler = self._handlers.get(func)
        if handler is not None:
            return handler(func, args, kwargs)
        name = getattr(func, "__name__", "")
        target = None
        if kwargs.get("device") is None and func in self._constructors:
            default = self._default_device()
            if default is not None:  # ``torch.set_default_device``, ``with torch.device``
                kwargs = {**kwargs, "device": default}
        if kwargs.get("device") is not None:
            target = self.canon(kwargs["device"])
            if self.is_virtual(target):
                kwargs = {**kwargs, "device": "cpu"}
                self.placed += 1
            elif target != "cpu":
                return self._absent(target, func, args, kwargs)
            else:
                target = None
        inputs = self._input_devices(args, kwargs)
        if func in self._from_data and args and isinstance(args[0], (list, tuple)):
            inputs = []  # ``torch.tensor(losses)``: a new tensor of the values read
        if name in ("__getitem__", "__setitem__", "index_put_", "index_put"):
            self._check_indices(args)
        elif name in ("masked_fill", "masked_fill_") and len(args) > 1:
            self._check_mask(args[0], args[1])
        elif name == "ctc_loss":
            # The targets and lengths may stay on the CPU: torch moves the targets to the
            # log-probabilities' device itself (cuDNN's path even wants them on the CPU).
            pass
        elif name not in MIXING:
            self._check_same(inputs)
        if name in SYNCING and any(self.is_virtual(device) for device in inputs):
            self.syncs += 1
        with self._ops_checked(target, inputs):
            result = func(*args, **kwargs)
        device = target or next((d for d in inputs if d != "cpu"), "cpu")
        if name in ("__repr__", "__format__", "__str__") and isinstance(result, str):
            return _with_device(result, device)
        if isinstance(result, (self.torch.Tensor, tuple, list)):
            if device.startswith("mps"):
                self._check_float64(result)
            self._tag_all(result, device)
        return result

    def _default_device(self) -> Any:
        """The device torch's default-device context puts factories on, when it is this
        virtual one: its mode sits below ours and would send them to the absent device."""
        default = getattr(self._device_module, "CURRENT_DEVICE", None)
        return default if default is not None and self.is_virtual(self.canon(default)) else None

    def _ops_checked(self, target: str | None, inputs: list[str]) -> Any:
        on_mps = any(d.startswith("mps") for d in (target or "", *inputs))
        return self._ops.checking(on_mps) if self._ops is not None else contextlib.nullcontext()

    def _input_devices(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str]:
        """The devices of the tensor arguments, CPU 0-dim tensors left out, in order."""
        seen: list[str] = []
        for tensor in _tensors(self.torch, (*args, *kwargs.values())):
            device = self.device_of(tensor)
            if device == "cpu" and tensor.dim() == 0:
                continue
            if device not in seen:
                seen.append(device)
        return seen

    def _check_same(self, devices: list[str]) -> None:
        if len(devices) > 1:
            first = next((d for d in devices if d != "cpu"), devices[0])
            other = next(d for d in devices if d != first)
            raise RuntimeError(MISMATCH.format(first, other))

    def _check_indices(self, args: tuple[Any, ...]) -> None:
        if not args or not isinstance(args[0], self.torch.Tensor) or len(args) < 2:
            return
        own = self.device_of(args[0])
        for index in _tensors(self.torch, (args[1],)):
            device = self.device_of(index)
            if device not in ("cpu", own):
                raise RuntimeError(INDICES.format(own))

    def _check_mask(self, tensor: Any, mask: Any) -> None:
        own, other = self.device_of(tensor), self.device_of(mask)
        if own != other and not (other == "cpu" and mask.dim() == 0):
            raise RuntimeError(MASK.format(other, own))

    def _check_float64(self, result: Any) -> None:
        torch = self.torch
        for tensor in _tensors(torch, (result,)):
            if tensor.dtype in (torch.float64, torch.complex128):
                raise TypeError(MPS_FLOAT64)

    # -- special operations ---------------------------------------------------------------

    def _special_handlers(self) -> dict[Any, Callable[[Any, tuple[Any, ...], dict[str, Any]], Any]]:
        T = self.torch.Tensor
        handlers: dict[Any, Callable[[Any, tuple[Any, ...], dict[str, Any]], Any]] = {
            T.to: self._to,
            T.cuda: self._accelerator_method("cuda"),
            T.cpu: self._cpu,
            T.type: self._type,
            T.numpy: self._numpy,
            T.__array__: self._numpy,
            T.pin_memory: self._pin_memory,
            T.is_pinned: self._is_pinned,
            T.get_device: self._get_device,
            T.device.__get__: self._device_getter,
            T.is_cuda.__get__: lambda f, a, k: self.device_of(a[0]).startswith("cuda"),
            T.is_mps.__get__: lambda f, a, k: self.device_of(a[0]).startswith("mps"),
            T.is_cpu.__get__: lambda f, a, k: self.device_of(a[0]) == "cpu",
            T.data.__set__: self._set_data,
            T.grad.__get__: self._grad,
            T.record_stream: lambda f, a, k: None,
            # Module.to parses its arguments with it: a device there is not a placement.
            self.torch._C._nn._parse_to: self._parse_to,
        }
        if hasattr(T, "mps"):
            handlers[T.mps] = self._accelerator_method("mps")
        return handlers

    def _move(self, tensor: Any, device: str, **options: Any) -> Any:
        """A copy of ``tensor`` that reports ``device`` (a real copy: autograd sees a move)."""
        dtype = options.get("dtype") or tensor.dtype
        if device.startswith("mps") and dtype in (self.torch.float64, self.torch.complex128):
            raise TypeError(MPS_FLOAT64)
        source = self.device_of(tensor)
        if self.is_virtual(source) and device == "cpu":
            self.syncs += 1
        out = tensor.to("cpu", copy=True, **options)
        self.placed += device != "cpu"
        self.tag(out, device)
        return out

    def _to(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        tensor, rest = args[0], args[1:]
        kwargs = dict(kwargs)
        copy = bool(kwargs.pop("copy", False))
        torch = self.torch
        if rest and isinstance(rest[0], torch.Tensor):
            other = rest[0]
            device, dtype = self.device_of(other), other.dtype
            non_blocking = bool(rest[1]) if len(rest) > 1 else kwargs.get("non_blocking", False)
            memory_format = kwargs.get("memory_format", torch.preserve_format)
        else:
            rest, kwargs = self._indexed(rest, kwargs)
            parsed, dtype, non_blocking, memory_format = torch._C._nn._parse_to(*rest, **kwargs)
            device = self.canon(parsed) if parsed is not None else self.device_of(tensor)
        source = self.device_of(tensor)
        if device != "cpu" and not self.is_virtual(device):
            return self._absent(device, func, args, kwargs)
        if device == source and not copy:
            result = tensor.to(dtype=dtype or tensor.dtype, memory_format=memory_format)
            if device.startswith("mps"):
                self._check_float64(result)
            self.tag(result, device)
            return result
        return self._move(
            tensor,
            device,
            dtype=dtype or tensor.dtype,
            non_blocking=bool(non_blocking),
            memory_format=memory_format,
        )

    def _parse_to(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        args, kwargs = self._indexed(args, kwargs)
        return func(*args, **kwargs)

    def _absent(self, device: str, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A placement on a device this machine lacks: the error that machine gives."""
        if device.startswith("cuda") and self.kind == "mps":
            raise AssertionError(NO_CUDA)  # a Mac's torch has no CUDA compiled in
        return func(*args, **kwargs)  # PyTorch's own error (or a real device, e.g. meta)

    def _accelerator_method(self, kind: str) -> Callable[..., Any]:
        def move(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            if kind != self.kind:
                return self._absent(kind, func, args, kwargs)
            device = args[1] if len(args) > 1 else kwargs.get("device")
            target = self.canon(device if device is not None else 0)
            if self.device_of(args[0]) == target:
                return args[0]
            non_blocking = bool(kwargs.get("non_blocking", False))
            return self._move(args[0], target, non_blocking=non_blocking)

        return move

    def _type(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``x.type(torch.cuda.FloatTensor)`` moves to CUDA, ``x.type(torch.FloatTensor)``
        to the CPU (also as strings); a dtype keeps the device."""
        wanted = args[1] if len(args) > 1 else kwargs.get("dtype")
        if isinstance(wanted, str):
            head, _, leaf = wanted.rpartition(".")
            wanted = getattr(self.torch.cuda if head == "torch.cuda" else self.torch, leaf, wanted)
        cpu_type = getattr(wanted, "virtual_cpu_type", None)
        if cpu_type is not None:  # the virtual ``torch.cuda.FloatTensor``
            return self._move(args[0], self.canon("cuda"), dtype=cpu_type.dtype)
        if isinstance(wanted, type) and self.device_of(args[0]) != "cpu":
            dtype = getattr(wanted, "dtype", None)  # ``torch.FloatTensor``; ``torch.Tensor``:
            if not isinstance(dtype, self.torch.dtype):  # the default type
                dtype = self.torch.get_default_dtype()
            return self._move(args[0], "cpu", dtype=dtype)
        result = func(*args, **kwargs)  # a dtype: the tensor stays where it is
        device = self.device_of(args[0])
        if isinstance(result, self.torch.Tensor) and device != "cpu":
            if device.startswith("mps"):
                self._check_float64(result)
            self.tag(result, device)
        return result

    def _cpu(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.device_of(args[0]) == "cpu":
            return func(*args, **kwargs)
        return self._move(args[0], "cpu")

    def _numpy(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        device = self.device_of(args[0])
        if device != "cpu":
            raise TypeError(NUMPY.format(device))
        return func(*args, **kwargs)

    def _pin_memory(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        out = args[0].clone()
        _remember(self._pinned, out, "pinned")
        return out

    def _is_pinned(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        entry = self._pinned.get(id(args[0]))
        return entry is not None and entry[0]() is args[0]

    def _get_device(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
        device = self.device_of(args[0])
        return -1 if device == "cpu" else int(device.split(":")[1])

    def _device_getter(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        device = self.device_of(args[0])
        return self.torch.device(device) if device != "cpu" else func(*args, **kwargs)

    def _set_data(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        result = func(*args, **kwargs)
        self.tag(args[0], self.device_of(args[1]))
        return result

    def _grad(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        grad = func(*args, **kwargs)
        if grad is not None and id(grad) not in self._tags:
            self.tag(grad, self.device_of(args[0]))
        return grad


def _runtime() -> Any:
    """``virtual_runtime.py``: imported as devlint's module, or loaded by path beside this
    file when ``bootstrap.py`` loaded this one by path (fixture processes import no devlint)."""
    if __package__:
        return importlib.import_module(f"{__package__}.virtual_runtime")
    name = "_devlint_virtual_runtime"  # the name bootstrap.py loads it under too
    if name in sys.modules:
        return sys.modules[name]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "virtual_runtime.py")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


RUNTIME = _runtime()


def _mps_ops() -> Any:
    """``mps_ops.py`` beside this file, as ``_runtime`` finds its module."""
    if __package__:
        return importlib.import_module(f"{__package__}.mps_ops")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mps_ops.py")
    spec = importlib.util.spec_from_file_location("_devlint_mps_ops", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NO_CUDA: str = RUNTIME.NO_CUDA
NO_CUDA_LOAD: str = RUNTIME.NO_CUDA_LOAD


def _make_mode(session: VirtualDevice) -> Any:
    from torch.overrides import TorchFunctionMode

    class VirtualMode(TorchFunctionMode):
        def __torch_function__(
            self,
            func: Any,
            types: Any,
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> Any:
            return session.dispatch(func, tuple(args), dict(kwargs or {}))

    return VirtualMode()


def _remember(table: dict[int, tuple[weakref.ref[Any], str]], tensor: Any, value: str) -> None:
    """``table[id(tensor)] = value`` for as long as the tensor lives (keyed by identity: a
    tensor's ``==`` is elementwise, so it cannot be a dictionary key itself)."""
    key = id(tensor)

    def forget(_ref: Any) -> None:
        table.pop(key, None)

    try:
        table[key] = (weakref.ref(tensor, forget), value)
    except TypeError:
        return


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _tensors(torch: Any, values: Any) -> Iterator[Any]:
    for value in values:
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (tuple, list)):
            for item in value:
                if isinstance(item, torch.Tensor):
                    yield item


def _with_device(text: str, device: str) -> str:
    """A tensor's repr as PyTorch prints it for a device tensor."""
    if device == "cpu" or "device=" in text or not text.endswith(")"):
        return text
    return f"{text[:-1]}, device='{device}')"
