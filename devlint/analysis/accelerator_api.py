"""``torch.cuda`` APIs and their device-generic equivalents, with the torch release of each.

The one table DEV011 and DEV017 fix from. Every equivalent and release was checked
against the sources of the torch releases 2.5 to 2.13 (``__all__`` of
``torch/accelerator/__init__.py`` and ``torch/accelerator/memory.py``), and how each
call behaves on a CPU-only build was checked by running it (torch 2.13):

- ``torch.accelerator`` appeared in 2.6 (``is_available``, ``device_count``,
  ``current_device_index``, ``set_device_index``, ``current_stream``, ``set_stream``,
  ``synchronize``); ``device_index`` (a context manager taking an ``int`` or ``None``)
  in 2.8; ``torch.accelerator.memory`` in 2.9; ``memory.get_memory_info`` in 2.10.
- Unlike their ``torch.cuda`` counterparts, the accelerator functions raise where no
  accelerator is present (``RuntimeError: Cannot access accelerator device when none is
  available``), ``empty_cache`` and ``memory_allocated`` included; only ``is_available``
  and ``device_count`` answer. Unguarded code needs a guard around them.
- No equivalent (never rewritten): ``get_device_name``, ``get_device_properties``,
  ``get_device_capability`` (``torch.accelerator.get_device_capability``, 2.10, returns a
  dict of supported dtypes, not ``(major, minor)``), events, streams objects, graphs,
  NVTX, IPC, the CUDA RNG state.
"""

from __future__ import annotations

from typing import Literal

from devlint.records import record
from devlint.torch_target import TorchVersion

# How replacing the ``torch.cuda`` call with its equivalent changes a program that has CUDA:
# "safe" not at all; "unsafe" it may (the docs of the entry say how); "none": report only.
Swap = Literal["safe", "unsafe", "none"]


@record(frozen=True, slots=True)
class CudaApi:
    """One ``torch.cuda`` function and what a device-generic program uses instead."""

    name: str  # under ``torch.cuda``
    equivalent: str | None  # dotted name of the device-generic API
    since: TorchVersion | None  # the first torch release that has ``equivalent``
    swap: Swap
    # What the ``torch.cuda`` call gives where CUDA is absent: a Python expression of its
    # value, or None when it raises there.
    without_cuda: str | None
    # Whether ``equivalent`` raises where no accelerator is present.
    equivalent_raises: bool = True
    # For a used value of a call that raises without CUDA: a stand-in (an unsafe fix).
    fallback: str | None = None
    why: str = ""  # what the swap changes, for "unsafe" and "none"
    int_only: bool = False  # the equivalent takes an ``int`` (or ``None``) argument only
    reported: bool = True  # DEV017 reports it in device-generic code


def _memory(name: str, without_cuda: str | None, since: TorchVersion = (2, 9)) -> CudaApi:
    return CudaApi(name, f"torch.accelerator.memory.{name}", since, "safe", without_cuda)


TABLE: tuple[CudaApi, ...] = (
    CudaApi(
        "is_available",
        "torch.accelerator.is_available",
        (2, 6),
        "none",
        "False",
        equivalent_raises=False,
        why="the test that makes a branch CUDA-specific: its body may need CUDA itself",
        reported=False,
    ),
    CudaApi(
        "device_count",
        "torch.accelerator.device_count",
        (2, 6),
        "unsafe",
        "0",
        equivalent_raises=False,
        why="counts MPS or XPU devices too: code that loops over the count may call CUDA",
    ),
    CudaApi(
        "current_device", "torch.accelerator.current_device_index", (2, 6), "safe", None, True, "0"
    ),
    CudaApi("set_device", "torch.accelerator.set_device_index", (2, 6), "safe", None),
    CudaApi("synchronize", "torch.accelerator.synchronize", (2, 6), "safe", None),
    CudaApi(
        "current_stream",
        "torch.accelerator.current_stream",
        (2, 6),
        "none",
        None,
        why="returns a `torch.Stream`, which is not a `torch.cuda.Stream`",
    ),
    CudaApi(
        "set_stream",
        "torch.accelerator.set_stream",
        (2, 6),
        "none",
        None,
        why="takes a `torch.Stream`, which a `torch.cuda.Stream` is not",
    ),
    CudaApi(
        "device",
        "torch.accelerator.device_index",
        (2, 8),
        "safe",
        None,
        why="takes an `int` or `None` only (rewritten for an integer literal)",
        int_only=True,
    ),
    _memory("empty_cache", "None"),
    _memory("memory_allocated", "0"),
    _memory("max_memory_allocated", "0"),
    _memory("memory_reserved", "0"),
    _memory("max_memory_reserved", "0"),
    _memory("memory_stats", "{}"),
    _memory("reset_peak_memory_stats", None),
    _memory("reset_accumulated_memory_stats", None),
    CudaApi(
        "mem_get_info",
        "torch.accelerator.memory.get_memory_info",
        (2, 10),
        "safe",
        None,
        fallback="(0, 0)",
    ),
    CudaApi(
        "manual_seed",
        "torch.manual_seed",
        (1, 0),
        "unsafe",
        "None",
        equivalent_raises=False,
        why="also reseeds the CPU generator and every other device",
    ),
    CudaApi(
        "manual_seed_all",
        "torch.manual_seed",
        (1, 0),
        "unsafe",
        "None",
        equivalent_raises=False,
        why="also reseeds the CPU generator",
    ),
    # No device-generic equivalent: guarded, never rewritten to another API.
    CudaApi("get_device_name", None, None, "none", None, fallback='"cpu"'),
    CudaApi("get_device_capability", None, None, "none", None, fallback="(0, 0)"),
    CudaApi("get_device_properties", None, None, "none", None),
    CudaApi("ipc_collect", None, None, "none", None),
    CudaApi("memory_summary", None, None, "none", None, fallback='""'),
    CudaApi("get_rng_state", None, None, "none", None),
    CudaApi("set_rng_state", None, None, "none", None),
    CudaApi("initial_seed", None, None, "none", None),
    CudaApi("default_stream", None, None, "none", None),
    CudaApi("Stream", None, None, "none", None),
    CudaApi("Event", None, None, "none", None),
)

BY_QUALNAME: dict[str, CudaApi] = {f"torch.cuda.{api.name}": api for api in TABLE}
# Where torch defines them (``from torch.cuda.memory import empty_cache``).
BY_QUALNAME.update(
    {
        f"torch.cuda.memory.{api.name}": api
        for api in TABLE
        if api.equivalent is not None and api.equivalent.startswith("torch.accelerator.memory.")
    }
)


def lookup(qualname: str | None) -> CudaApi | None:
    """The table's entry for a ``torch.cuda`` callee, if it has one."""
    return BY_QUALNAME.get(qualname) if qualname is not None else None


def equivalent_in(api: CudaApi, target: TorchVersion) -> str | None:
    """``api``'s device-generic equivalent when the ``target`` torch has it."""
    if api.equivalent is None or api.since is None or api.since > target:
        return None
    return api.equivalent


def _version(version: TorchVersion | None) -> str:
    return f"{version[0]}.{version[1]}" if version else "-"


def table_markdown() -> str:
    """The table as Markdown, for the rules' documentation (``devlint rule DEV011``)."""
    rows = ["| `torch.cuda.` | equivalent | since torch | fix |", "|---|---|---|---|"]
    for api in TABLE:
        equivalent = f"`{api.equivalent}`" if api.equivalent else "none"
        fix = api.swap if api.equivalent else "guard only"
        note = f" ({api.why})" if api.why and api.equivalent else ""
        rows.append(f"| `{api.name}` | {equivalent} | {_version(api.since)} | {fix}{note} |")
    return "\n".join(rows)
