"""Which devices this machine has, the matrix columns, and how a child process sees one device.

A run on device X executes the program on "a machine whose best accelerator is X":
``cpu`` hides CUDA (``CUDA_VISIBLE_DEVICES=""``, which CUDA itself honours) and MPS;
``cuda`` hides MPS; ``mps`` hides CUDA. MPS has no such variable, so hiding it patches the
Python-level checks (``torch.backends.mps.is_available``, ``torch.accelerator.*``) in the
child; C++ code inside torch still sees it (a limit on Apple machines only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from devlint.verify.expectations import DEVICES
from devlint.verify.virtual_columns import VIRTUAL_DEVICES, column_name

TORCH_MISSING = (
    "error: devlint verify needs PyTorch; install it with: pip install 'devlint[verify]'"
)


class TorchMissing(Exception):
    """torch cannot be imported: verify cannot run anything."""


@dataclass(frozen=True, slots=True)
class DeviceSet:
    """What :func:`detect_devices` found."""

    cuda: bool
    mps: bool
    torch_version: str = "?"
    cuda_name: str | None = None

    def has(self, device: str) -> bool:
        return device == "cpu" or (device == "cuda" and self.cuda) or (device == "mps" and self.mps)


def detect_devices() -> DeviceSet:
    """Import torch (only here, lazily) and ask which accelerators are usable."""
    try:
        import torch
    except ImportError as error:
        raise TorchMissing(str(error)) from None
    cuda = bool(torch.cuda.is_available())
    mps_backend = getattr(torch.backends, "mps", None)
    mps = bool(mps_backend is not None and mps_backend.is_available())
    name = None
    if cuda:
        try:
            name = str(torch.cuda.get_device_name(0))
        except Exception:  # a name is only decoration
            name = None
    return DeviceSet(cuda=cuda, mps=mps, torch_version=str(torch.__version__), cuda_name=name)


@dataclass(frozen=True, slots=True)
class Column:
    """One column of the rule x device matrix."""

    name: str  # "cpu", "cuda", "mps", "cuda (virtual)", "mps (virtual)"
    device: str  # the device whose expectations it checks: cpu / cuda / mps
    present: bool  # a real device is there (virtual columns: False)
    virtual: bool = False  # a virtual column: a CPU run posing as the device

    @property
    def runs(self) -> bool:
        return self.present or self.virtual


def parse_device_option(values: Sequence[str]) -> list[str]:
    """``--device`` values (repeatable, ``all``, comma lists) -> devices in matrix order."""
    wanted: set[str] = set()
    for value in values:
        for part in value.split(","):
            part = part.strip().lower()
            if not part:
                continue
            if part == "all":
                wanted.update(DEVICES)
            elif part in DEVICES:
                wanted.add(part)
            else:
                raise ValueError(f"unknown device {part!r} (choose from cpu, cuda, mps, all)")
    return [device for device in DEVICES if device in wanted] or list(DEVICES)


def columns_for(devices: Sequence[str], found: DeviceSet) -> list[Column]:
    """The requested devices, plus ``cuda (virtual)`` / ``mps (virtual)`` for each requested
    accelerator that is absent."""
    columns = [Column(device, device, found.has(device)) for device in devices]
    for device in VIRTUAL_DEVICES:
        if device in devices and not found.has(device):
            columns.append(Column(column_name(device), device, present=False, virtual=True))
    return columns


@dataclass(frozen=True, slots=True)
class ChildSetup:
    """How the bootstrap makes a child process look like a machine with one best device."""

    env: dict[str, str]  # variables set in the child's environment
    hide_mps: bool  # patch torch's Python-level MPS checks to say "absent"
    virtual: str | None  # a virtual device (virtual_columns.py: "virtual-cuda"), or None

    def to_json(self) -> dict[str, object]:
        return {"hide_mps": self.hide_mps, "virtual": self.virtual}


def child_setup(column: Column, found: DeviceSet, mechanism: str | None = None) -> ChildSetup:
    env: dict[str, str] = {}
    if column.device != "cuda":
        env["CUDA_VISIBLE_DEVICES"] = ""  # CUDA's own switch: the device really disappears
    hide_mps = found.mps and column.device != "mps"
    virtual = (mechanism or f"virtual-{column.device}") if column.virtual else None
    return ChildSetup(env, hide_mps, virtual)
