"""The runtime around the virtual device's tensors (``virtual.py``): what a machine with
that accelerator answers, patched for the time of a ``VirtualDevice`` session.

On virtual CUDA: ``torch.cuda`` and ``torch.accelerator`` report one device (its name,
capability, properties, memory statistics of an idle 16 GiB card), ``synchronize()``
counts a host sync, streams and events exist and are always complete, the legacy
``torch.cuda.FloatTensor`` & co. make virtual CUDA tensors, cuDNN takes none of them (they
live on the CPU, also under a CUDA build of torch), and ``nn.DataParallel`` runs
on its one GPU (its checks, then the scatter's move of the inputs). On virtual MPS:
``torch.backends.mps`` and ``torch.accelerator`` report MPS and CUDA is absent as on a
Mac (``Torch not compiled with CUDA enabled``, also on a CUDA build of torch). On both:
DataLoader pinning is silent (the DataLoader itself warns on MPS), ``Parameter`` keeps its
data's device, ``torch.save`` records each tensor's virtual device and ``torch.load``
restores it, or raises where that device is absent. Self-contained (the standard library
and torch), like ``virtual.py``; every function takes the ``VirtualDevice`` session.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

NO_CUDA = "Torch not compiled with CUDA enabled"
NO_CUDA_LOAD = (
    "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
    "False. If you are running on a CPU-only machine, please use torch.load with "
    "map_location=torch.device('cpu') to map your storages to the CPU."
)


def patch_runtime(session: Any) -> None:
    torch = session.torch
    cuda = session.kind == "cuda"
    name = f"devlint virtual {session.kind.upper()}"
    current_stream = SimpleNamespace(
        is_capturing=lambda: False, synchronize=session._sync, wait_stream=lambda s: None
    )
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None:
        device = torch.device(session.kind)
        session._set(accelerator, "is_available", lambda: True)
        session._set(accelerator, "current_accelerator", lambda *a, **k: device)
        session._set(accelerator, "device_count", lambda: 1)
        session._set(accelerator, "current_device_index", lambda: 0)
        session._set(accelerator, "set_device_index", lambda index: None)
        session._set(accelerator, "synchronize", lambda *a: session._sync())
        session._set(accelerator, "current_stream", lambda *a: current_stream)
        memory = getattr(accelerator, "memory", None)
        for attr in MEMORY_STATS if memory is not None else ():
            if hasattr(memory, attr):
                session._set(memory, attr, _MEMORY[attr])
    mps = getattr(torch.backends, "mps", None)
    if mps is not None:
        session._set(mps, "is_available", lambda: not cuda)
        if not cuda:
            session._set(mps, "is_built", lambda: True)
    if cuda:
        _patch_cuda(session, name, current_stream)
    else:
        _hide_cuda(session)
        for attr, value in {
            "synchronize": session._sync,
            "empty_cache": lambda: None,
            "manual_seed": lambda seed: None,
            "current_allocated_memory": lambda: 0,
            "driver_allocated_memory": lambda: 0,
        }.items():
            session._set(torch.mps, attr, value)
    pinning = torch.utils.data._utils.pin_memory
    session._set(pinning, "pin_memory", lambda data, device=None: data)
    session._set(torch.serialization, "location_tag", _location_tag(session))
    session._set(torch, "load", _load(session, torch.load))
    parameter = torch.nn.Parameter
    original_new = parameter.__new__

    def new(cls: Any, data: Any = None, requires_grad: bool = True) -> Any:
        made = original_new(cls, data, requires_grad)
        if data is not None:
            session.tag(made, session.device_of(data))
        return made

    session._set(parameter, "__new__", staticmethod(new))
    if cuda:
        session._set(torch.nn.DataParallel, "forward", _one_device_data_parallel)


def _patch_cuda(session: Any, name: str, current_stream: Any) -> None:
    torch = session.torch
    properties = SimpleNamespace(
        name=name, total_memory=TOTAL_MEMORY, major=8, minor=0, multi_processor_count=80
    )
    for attr, value in {
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": lambda device: None,
        "get_device_name": lambda *a: name,
        "get_device_capability": lambda *a: (8, 0),
        "get_device_properties": lambda *a: properties,
        "synchronize": lambda *a: session._sync(),
        "empty_cache": lambda: None,
        "manual_seed": lambda seed: None,
        "manual_seed_all": lambda seed: None,
        "is_initialized": lambda: True,
        "init": lambda: None,
        "is_bf16_supported": lambda *a: True,
        "memory_allocated": lambda *a: 0,
        "max_memory_allocated": lambda *a: 0,
        "memory_reserved": lambda *a: 0,
        "reset_peak_memory_stats": lambda *a: None,
        "is_current_stream_capturing": lambda: False,
        "mem_get_info": _MEMORY["get_memory_info"],
        "current_stream": lambda *a: current_stream,
        "default_stream": lambda *a: current_stream,
        "Stream": _Stream,
        "Event": _Event,
        "stream": lambda stream=None: contextlib.nullcontext(stream),
    }.items():
        session._set(torch.cuda, attr, value)
    for legacy in LEGACY_TYPES:
        session._set(torch.cuda, legacy, _legacy_type(session, getattr(torch, legacy)))
    session._set(torch.backends.cuda, "is_built", lambda: True)
    # The tensors live on the CPU: no cuDNN kernel takes them, also where torch has cuDNN
    # (an RNN's flatten_parameters would call a CUDA-only op on a CUDA build).
    session._set(torch.backends.cudnn, "is_acceptable", lambda tensor: False)


def _hide_cuda(session: Any) -> None:
    """A Mac's torch has no CUDA compiled in: a CUDA build's answers would differ."""
    torch = session.torch

    def no_cuda(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(NO_CUDA)

    for attr, value in {
        "is_available": lambda: False,
        "device_count": lambda: 0,
        "_lazy_init": no_cuda,
        "Stream": no_cuda,
        "Event": no_cuda,
    }.items():
        session._set(torch.cuda, attr, value)


class _LegacyTypeMeta(type):
    """``isinstance(x, torch.cuda.FloatTensor)``: true of a virtual CUDA tensor of the
    type's dtype, as of a real CUDA tensor on a GPU."""

    def __instancecheck__(cls, instance: Any) -> bool:
        check: Callable[[Any], bool] = cls.virtual_check  # type: ignore[attr-defined]
        return check(instance)


def _legacy_type(session: Any, cpu_type: Any) -> type:
    """``torch.cuda.FloatTensor`` & co.: the CPU type's tensor, on the virtual GPU."""

    def is_instance(instance: Any) -> bool:
        return (
            isinstance(instance, session.torch.Tensor)
            and instance.dtype == cpu_type.dtype
            and session.device_of(instance).startswith("cuda")
        )

    class LegacyType(metaclass=_LegacyTypeMeta):
        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            made = cpu_type(*args, **kwargs)
            session.placed += 1
            session.tag(made, session.name)
            return made

    LegacyType.__name__ = LegacyType.__qualname__ = cpu_type.__name__
    LegacyType.virtual_cpu_type = cpu_type  # type: ignore[attr-defined]  # for ``x.type(...)``
    LegacyType.virtual_check = staticmethod(is_instance)  # type: ignore[attr-defined]
    return LegacyType


def _location_tag(session: Any) -> Callable[[Any], str]:
    """``torch.save``: a storage of a device tensor is saved as that device's."""
    original = session.torch.serialization.location_tag

    def location_tag(storage: Any) -> str:
        pointer = _data_ptr(storage)
        for ref, device in list(session._tags.values()):
            tensor = ref()
            if tensor is not None and pointer and _data_ptr(tensor) == pointer:
                return device
        result: str = original(storage)
        return result

    return location_tag


def _load(session: Any, original: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.load``: restore each storage where this machine would, on the CPU."""

    def load(f: Any, map_location: Any = None, *args: Any, **kwargs: Any) -> Any:
        placed: dict[int, str] = {}

        def restore(storage: Any, location: str) -> Any:
            device = _restored_device(session, storage, location, map_location)
            if storage.nbytes():
                placed[_data_ptr(storage)] = device
            return storage

        result = original(f, restore, *args, **kwargs)
        for tensor in _walk(session.torch, result):
            device = placed.get(_data_ptr(tensor))
            if device is not None:
                session.tag(tensor, device)
        return result

    return load


def _restored_device(session: Any, storage: Any, location: str, map_location: Any) -> str:
    torch = session.torch
    if callable(map_location) and not isinstance(map_location, (str, torch.device)):
        mapped = map_location(storage, location)
        return "cpu" if mapped is None or mapped is storage else str(mapped.device)
    if isinstance(map_location, dict):
        location = map_location.get(location, location)
    elif map_location is not None:
        location = str(map_location)
    device = session.canon(location)
    if device != "cpu" and not session.is_virtual(device):
        if device.startswith("cuda"):
            raise RuntimeError(NO_CUDA_LOAD)
        session._absent(device, torch.empty, (0,), {"device": device})
    return device


LEGACY_TYPES = (
    "FloatTensor",
    "DoubleTensor",
    "HalfTensor",
    "BFloat16Tensor",
    "LongTensor",
    "IntTensor",
    "ShortTensor",
    "CharTensor",
    "ByteTensor",
    "BoolTensor",
)
TOTAL_MEMORY = 16 * 2**30  # what the virtual device reports as its memory
MEMORY_STATS = (
    "empty_cache",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "reset_peak_memory_stats",
    "reset_accumulated_memory_stats",
    "get_memory_info",
    "memory_stats",
)
_MEMORY: dict[str, Callable[..., Any]] = {
    "empty_cache": lambda *a: None,
    "memory_allocated": lambda *a: 0,
    "max_memory_allocated": lambda *a: 0,
    "memory_reserved": lambda *a: 0,
    "max_memory_reserved": lambda *a: 0,
    "reset_peak_memory_stats": lambda *a: None,
    "reset_accumulated_memory_stats": lambda *a: None,
    "get_memory_info": lambda *a: (TOTAL_MEMORY, TOTAL_MEMORY),
    "memory_stats": lambda *a: {},
}


class _Stream:
    """A CUDA stream on a machine where everything runs in order: every wait is done."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.device = "cuda:0"

    def wait_stream(self, stream: Any) -> None: ...

    def wait_event(self, event: Any) -> None: ...

    def synchronize(self) -> None: ...

    def query(self) -> bool:
        return True

    def record_event(self, event: Any = None) -> Any:
        return event if event is not None else _Event()

    def is_capturing(self) -> bool:
        return False


class _Event(_Stream):
    """A CUDA event: recorded and complete at once; no time passes between two of them."""

    def record(self, stream: Any = None) -> None: ...

    def elapsed_time(self, other: Any) -> float:
        return 0.0


def _one_device_data_parallel(self: Any, *inputs: Any, **kwargs: Any) -> Any:
    """``DataParallel.forward`` on one (virtual) GPU: its checks, then the scatter's move of
    every input tensor to ``device_ids[0]`` (CUDA's scatter kernels do not run here)."""
    import torch
    from torch.utils._pytree import tree_map

    if not self.device_ids:
        return self.module(*inputs, **kwargs)
    for tensor in [*self.module.parameters(), *self.module.buffers()]:
        if tensor.device != self.src_device_obj:
            raise RuntimeError(
                "module must have its parameters and buffers on device "
                f"{self.src_device_obj} (device_ids[0]) but found one of them on device: "
                f"{tensor.device}"
            )

    def move(value: Any) -> Any:
        return value.to(self.src_device_obj) if isinstance(value, torch.Tensor) else value

    inputs, kwargs = tree_map(move, (inputs, kwargs))
    return self.module(*inputs, **kwargs)


def _walk(torch: Any, value: Any, depth: int = 0) -> Iterator[Any]:
    """Tensors in what ``torch.load`` returned: containers, modules, a few levels deep."""
    if depth > 6:
        return
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _walk(torch, item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _walk(torch, item, depth + 1)
    elif isinstance(value, torch.nn.Module):
        yield from value.parameters()
        yield from value.buffers()


def _data_ptr(value: Any) -> int:
    try:
        storage = value.untyped_storage() if hasattr(value, "untyped_storage") else value
        return int(storage.data_ptr())
    except Exception:
        return 0
