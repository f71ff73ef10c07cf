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

Every replacement is made to look like what it replaces (``shaped_like``): torch and the
libraries on top of it inspect its functions at import time (torch 2.14's dynamo reads
``torch.backends.mps.is_available.__wrapped__``, an ``lru_cache`` attribute), so a
replaced function keeps its name, module, docstring and attributes, an ``lru_cache``d one
is an ``lru_cache`` of the virtual answer (``__wrapped__``, ``cache_clear``, ``cache_info``),
and a wrapped one (``functools.wraps``) wraps the virtual answer.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import sysconfig
import types
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

NO_CUDA = "Torch not compiled with CUDA enabled"
NO_CUDA_LOAD = (
    "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
    "False. If you are running on a CPU-only machine, please use torch.load with "
    "map_location=torch.device('cpu') to map your storages to the CPU."
)


def shaped_like(original: Any, replacement: Any) -> Any:
    """``replacement`` in the shape of ``original``: what inspects the one finds the same
    attributes on the other (see the module docstring). Classes and non-callables pass."""
    if isinstance(original, staticmethod) and isinstance(replacement, staticmethod):
        return staticmethod(shaped_like(original.__func__, replacement.__func__))
    if (
        isinstance(replacement, type)
        or not callable(replacement)
        or isinstance(original, type)
        or not callable(original)
    ):
        return replacement
    shaped: Any
    if _is_lru_cache(original):
        parameters = original.cache_parameters()
        cache = functools.lru_cache(maxsize=parameters["maxsize"], typed=parameters["typed"])
        shaped = cache(replacement)  # its __wrapped__ is the virtual answer
    elif isinstance(replacement, types.FunctionType):
        shaped = types.FunctionType(  # a copy: shared replacements keep their own names
            replacement.__code__,
            replacement.__globals__,
            replacement.__name__,
            replacement.__defaults__,
            replacement.__closure__,
        )
        shaped.__kwdefaults__ = replacement.__kwdefaults__
    else:  # a bound method or another callable object

        def shaped(*args: Any, **kwargs: Any) -> Any:
            return replacement(*args, **kwargs)

    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        with contextlib.suppress(AttributeError, TypeError):
            setattr(shaped, attr, getattr(original, attr))
    for attr, value in getattr(original, "__dict__", {}).items():
        if attr != "__wrapped__":
            with contextlib.suppress(AttributeError, TypeError):
                setattr(shaped, attr, value)
    if hasattr(original, "__wrapped__") and not hasattr(shaped, "__wrapped__"):
        shaped.__wrapped__ = replacement
    return shaped


def _is_lru_cache(value: Any) -> bool:
    return all(hasattr(value, attr) for attr in ("cache_parameters", "cache_clear", "__wrapped__"))


def patch_runtime(session: Any) -> None:
    torch = session.torch
    cuda = session.kind == "cuda"
    name = f"devlint virtual {session.kind.upper()}"
    current_stream = SimpleNamespace(
        is_capturing=lambda: False, synchronize=session._sync, wait_stream=lambda s: None
    )
    for attr, base in (("Stream", _Stream), ("Event", _Event)):
        if hasattr(torch, attr):  # torch.Stream(): a stream of the current accelerator
            generic = type(attr, (base,), {"default_device": session.name})
            session._set(torch, attr, generic)
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None:
        session._set(accelerator, "current_device_index", lambda: 0)
        session._set(accelerator, "set_device_index", lambda index: None)
        session._set(accelerator, "synchronize", lambda *a: session._sync())
        session._set(accelerator, "current_stream", lambda *a: current_stream)
        for attr in ("_accelerator_exchangeDevice", "_accelerator_maybeExchangeDevice"):
            if hasattr(torch._C, attr):  # torch.accelerator.device_index(0)
                session._set(torch._C, attr, _exchange_device)
        memory = getattr(accelerator, "memory", None)
        for attr in MEMORY_STATS if memory is not None else ():
            if hasattr(memory, attr):
                session._set(memory, attr, _MEMORY[attr])
    _patch_availability(session)
    if cuda:
        _patch_cuda(session, name, current_stream)
    else:
        _hide_cuda(session)
        _patch_mac(session)
        for attr, value in {
            "synchronize": session._sync,
            "empty_cache": lambda: None,
            "manual_seed": lambda seed: None,
            "current_allocated_memory": lambda: 0,
            "driver_allocated_memory": lambda: 0,
        }.items():
            session._set(torch.mps, attr, value)
    _patch_device_type(session)
    pinning = torch.utils.data._utils.pin_memory
    session._set(pinning, "pin_memory", lambda data, device=None: data)
    session._set(torch.serialization, "location_tag", _location_tag(session))
    session._set(torch, "load", _load(session, torch.load))
    _keep_device_of_data(session, torch.nn.Parameter)
    _keep_device_of_data(session, torch.autograd.Variable)
    if cuda:
        session._set(torch.nn.DataParallel, "forward", _one_device_data_parallel)


def _keep_device_of_data(session: Any, wrapper: type) -> None:
    """``nn.Parameter(x)``, ``Variable(x)``: a new tensor object on ``x``'s storage, made
    outside torch's function dispatch; it is where ``x`` is."""
    original_new = wrapper.__new__

    def new(cls: Any, data: Any = None, *args: Any, **kwargs: Any) -> Any:
        made = original_new(cls, data, *args, **kwargs)
        if data is not None:
            session.tag(made, session.device_of(data))
        return made

    session._set(wrapper, "__new__", staticmethod(new))


class _DeviceTypeMeta(type):
    """``torch.device`` on a virtual machine. ``torch.device(0)`` asks torch's C++ accelerator
    registry, which knows no virtual device (a CPU build: "Cannot access accelerator device
    when none is available"; a CUDA build under virtual MPS: ``cuda:0``): here an integer is
    an index of the virtual accelerator. Everything else is the real type's: instances are
    real ``torch.device`` objects, ``isinstance``, ``==`` and hashing answer as the real type's
    (a dictionary keyed by either finds the other)."""

    real: Any  # the real torch.device
    kind: str  # the virtual accelerator

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and _is_index(args[0]):
            return cls.real(cls.kind, args[0])
        return cls.real(*args, **kwargs)

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, cls.real)

    def __subclasscheck__(cls, subclass: Any) -> bool:
        return subclass is cls or issubclass(subclass, cls.real)

    def __eq__(cls, other: object) -> bool:
        return other is cls or other is cls.real

    def __hash__(cls) -> int:
        return hash(cls.real)

    def __getattr__(cls, name: str) -> Any:
        return getattr(cls.real, name)


def _patch_device_type(session: Any) -> None:
    """``torch.device`` -> a ``_DeviceTypeMeta`` class; pickling a device names it (pickle
    finds classes by name, and ``torch.device`` must be the object it finds)."""
    import copyreg

    torch = session.torch
    real = torch.device
    device_type = _DeviceTypeMeta(
        "device",
        (),
        {"__module__": real.__module__, "__qualname__": real.__qualname__, "__doc__": real.__doc__},
    )
    device_type.real, device_type.kind = real, session.kind
    session._set(torch, "device", device_type)

    def reduce(device: Any) -> tuple[Any, tuple[Any, ...]]:
        index = device.index
        return device_type, (device.type,) if index is None else (device.type, index)

    previous = copyreg.dispatch_table.get(real)
    copyreg.dispatch_table[real] = reduce

    def undo() -> None:
        if previous is None:
            copyreg.dispatch_table.pop(real, None)
        else:
            copyreg.dispatch_table[real] = previous

    session._undo.append(undo)


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _patch_availability(session: Any) -> None:
    """What the machine answers when asked which accelerators it has: the virtual one only.
    A question asked from the user's own code counts (``session.asked``): ``devlint run``
    tells a script that asked, then placed nothing on the device, that it ran on the CPU."""
    torch = session.torch
    cuda = session.kind == "cuda"
    answers: list[tuple[Any, str, Any]] = [
        (torch.cuda, "is_available", cuda),
        (torch.cuda, "device_count", int(cuda)),
        (torch.backends.cuda, "is_built", True) if cuda else (None, "", None),
        (getattr(torch.backends, "mps", None), "is_available", not cuda),
        (getattr(torch.backends, "mps", None), "is_built", True) if not cuda else (None, "", None),
        (getattr(torch, "mps", None), "is_available", not cuda),
        (getattr(torch, "mps", None), "device_count", int(not cuda)),
    ]
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None:
        answers += [
            (accelerator, "is_available", True),
            (accelerator, "current_accelerator", torch.device(session.kind)),
            (accelerator, "device_count", 1),
        ]
    for owner, attr, answer in answers:
        if owner is not None and hasattr(owner, attr):
            session._set(owner, attr, _query(session, answer))


def _query(session: Any, answer: Any) -> Callable[..., Any]:
    def query(*args: Any, **kwargs: Any) -> Any:
        if is_user_code(sys._getframe(1).f_code.co_filename):
            session.asked += 1
        return answer

    return query


_DEVLINT = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_LIBRARIES = tuple(
    {
        os.path.abspath(path) + os.sep
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if (path := sysconfig.get_paths().get(key))
    }
)


def is_user_code(filename: str) -> bool:
    """Whether a frame of this file is the user's: not devlint's own package, the standard
    library or an installed package (``site-packages``), not ``<frozen …>`` / ``<string>``."""
    if not filename or filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    if path.startswith(_DEVLINT) or path.startswith(_LIBRARIES):
        return False
    parts = path.split(os.sep)
    return "site-packages" not in parts and "dist-packages" not in parts


def _patch_cuda(session: Any, name: str, current_stream: Any) -> None:
    torch = session.torch
    properties = SimpleNamespace(
        name=name, total_memory=TOTAL_MEMORY, major=8, minor=0, multi_processor_count=80
    )
    for attr, value in {
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
        # torch.cuda.device(0) / device_of: the one device is always the current one
        "_exchange_device": _exchange_device,
        "_maybe_exchange_device": _exchange_device,
    }.items():
        session._set(torch.cuda, attr, value)
    for legacy in LEGACY_TYPES:
        session._set(torch.cuda, legacy, _legacy_type(session, getattr(torch, legacy)))
    # The tensors live on the CPU: no cuDNN kernel takes them, also where torch has cuDNN
    # (an RNN's flatten_parameters would call a CUDA-only op on a CUDA build).
    session._set(torch.backends.cudnn, "is_acceptable", lambda tensor: False)


def _hide_cuda(session: Any) -> None:
    """A Mac's torch has no CUDA compiled in: a CUDA build's answers would differ."""
    torch = session.torch

    def no_cuda(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(NO_CUDA)

    for attr, value in {
        "_lazy_init": no_cuda,
        "Stream": no_cuda,
        "Event": no_cuda,
    }.items():
        session._set(torch.cuda, attr, value)


def _patch_mac(session: Any) -> None:
    """What a Mac answers beyond its MPS device: its macOS release; no CUDA-only packages."""
    torch = session.torch
    _hide_packages(session, MAC_ABSENT)
    mps = getattr(torch.backends, "mps", None)
    for attr, answer in (
        ("is_macos_or_newer", lambda major, minor: (major, minor) <= MACOS),
        ("is_macos13_or_newer", lambda minor=0: (13, minor) <= MACOS),
    ):
        if hasattr(mps, attr):  # autocast("mps") asks (torch 2.9: the C++ query fails here)
            session._set(mps, attr, answer)


MACOS = (15, 0)  # the virtual Mac's macOS release
MAC_ABSENT = ("triton",)  # CUDA-only packages with no macOS wheels, which a CUDA build brings


class _AbsentPackages:
    """A ``sys.meta_path`` finder: these packages are not installed (``import`` raises
    ``No module named …``, as on a Mac). ``importlib.util.find_spec`` raises too, where a
    Mac returns None (a limit)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)

    def invalidate_caches(self) -> None: ...


def _hide_packages(session: Any, names: tuple[str, ...]) -> None:
    """Make ``names`` uninstalled for the session: also those imported already (torch's
    dynamo imports triton on a CUDA build), put back afterwards."""
    finder = _AbsentPackages(names)
    imported = {name: module for name, module in sys.modules.items() if name.split(".")[0] in names}
    for name in imported:
        del sys.modules[name]
    sys.meta_path.insert(0, finder)

    def undo() -> None:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
        sys.modules.update(imported)

    session._undo.append(undo)


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


def _exchange_device(device: int) -> int:
    """Make ``device`` current, return the previous one: there is one, index 0."""
    return -1 if device < 0 else 0


class _Stream:
    """A CUDA stream on a machine where everything runs in order: every wait is done."""

    default_device = "cuda:0"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.device = self.default_device

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
