"""Which aten operators have an MPS kernel, release by release: the table DEV019 reads.

``mps_coverage.json`` is derived by ``scripts/mps_coverage.py`` from the macOS arm64 wheels
of every torch release devlint supports as ``target-torch`` (2.0 to 2.13): their
``torchgen/packaged/ATen/native/native_functions.yaml`` and the kernels their
``libtorch_cpu.dylib`` registers for MPS outside that file (``TORCH_LIBRARY_IMPL(aten, MPS,
m)`` in ``aten/src/ATen/native/mps/``, and the operators ``aten/src/ATen/mps/MPSFallback.mm``
always sends to the CPU). One letter per release says what an operator does on MPS:

- ``K``: an MPS kernel (its ``dispatch`` names MPS, its structured delegate's does, or a
  kernel is registered for MPS outside the yaml);
- ``C``: no MPS kernel, but a composite one (``CompositeImplicitAutograd``, the default,
  or ``CompositeExplicitAutograd[NonFunctional]``) runs it through operators that may;
- ``F``: falls back: MPSFallback.mm runs it on the CPU with a warning;
- ``M``: missing: ``NotImplementedError`` unless ``PYTORCH_ENABLE_MPS_FALLBACK=1``, which
  runs it on the CPU with a warning;
- ``-``: the release has no such operator, or only kernels for sparse, quantized or
  other non-strided tensors.

Only operators that are ``F`` or ``M`` in some release, or ``K`` in some and ``C`` in
others, are stored: any other operator of the yaml runs on MPS in every release that has
it, always by a kernel or always by decomposition. Keys are the operator names of the
yaml (``linalg_svd.U``: name and overload), as ``TorchDispatchMode`` sees them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal

from devlint.records import record
from devlint.torch_target import TorchVersion, format_target

Status = Literal["K", "C", "F", "M", "-"]
RUNS: frozenset[str] = frozenset({"K", "C"})

# Keys whose kernel serves any strided tensor, MPS included, by decomposition.
COMPOSITE_KEYS = frozenset(
    {
        "CompositeImplicitAutograd",
        "CompositeExplicitAutograd",
        "CompositeExplicitAutogradNonFunctional",
    }
)
# Keys of strided (dense) backends: an operator with one of these and neither MPS nor a
# composite kernel is missing on MPS. Sparse, quantized, nested and mkldnn keys are not.
DENSE_KEYS = frozenset({"CPU", "CUDA", "XPU", "HIP", "MTIA", "PrivateUse1"})


@record(frozen=True, slots=True)
class Operator:
    """One operator of the table: what each supported release does with it on MPS."""

    name: str  # ``linalg_svd.U``: name and overload, as in native_functions.yaml
    statuses: str  # one letter per release of ``RELEASES``

    def status(self, release: TorchVersion) -> Status:
        index = release_index(release)
        return self.statuses[index] if index is not None else "-"  # type: ignore[return-value]

    @property
    def since(self) -> TorchVersion | None:
        """The first supported release from which it runs on MPS (kernel or composite),
        after one where it did not; None when it never does."""
        last_missing = max(self.statuses.rfind("M"), self.statuses.rfind("F"))
        following = self.statuses[last_missing + 1 :]
        for offset, letter in enumerate(following):
            if letter in RUNS:
                return RELEASES[last_missing + 1 + offset]
        return None

    @property
    def aten(self) -> str:
        """``aten::linalg_svd.U``, as torch's own messages write it."""
        return f"aten::{self.name}"


@cache
def _data() -> dict[str, Any]:
    text = Path(__file__).with_name("mps_coverage.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _release(text: str) -> TorchVersion:
    major, minor = text.split(".")
    return int(major), int(minor)


# The columns of the table: the releases ``target-torch`` may name (torch_target.py).
RELEASES: tuple[TorchVersion, ...] = tuple((2, minor) for minor in range(14))


def release_index(release: TorchVersion) -> int | None:
    """The column of ``release``: an older one reads as the oldest, a newer as the newest."""
    if release < RELEASES[0]:
        return 0
    if release > RELEASES[-1]:
        return len(RELEASES) - 1
    return RELEASES.index(release) if release in RELEASES else None


@cache
def operators() -> dict[str, Operator]:
    """Every operator that lacks an MPS kernel in some supported release (or gained or
    lost one where a composite kernel served it), by name."""
    return {name: Operator(name, statuses) for name, statuses in _data()["operators"].items()}


def lookup(name: str) -> Operator | None:
    """The table's entry for an operator (``linalg_eig``, ``linalg_svd.U``,
    ``aten::take``, ``aten.take.default``)."""
    return operators().get(normalize(name))


def normalize(name: str) -> str:
    """``aten::take`` / ``aten.take.default`` / ``take.default`` -> ``take``."""
    if name.startswith("aten::"):
        name = name[len("aten::") :]
    elif name.startswith("aten."):
        name = name[len("aten.") :]
    return name.removesuffix(".default")


def status(name: str, release: TorchVersion) -> Status:
    """What operator ``name`` does on MPS in ``release`` (``K`` when the table does not
    list it: it runs there in every release)."""
    entry = lookup(name)
    return entry.status(release) if entry is not None else "K"


def outside_yaml(release: TorchVersion) -> frozenset[str]:
    """Operators ``release`` registers an MPS kernel for outside native_functions.yaml."""
    return frozenset(_data()["outside_yaml"].get(format_target(release), ()))


def falls_back(release: TorchVersion) -> frozenset[str]:
    """Operators MPSFallback.mm of ``release`` always runs on the CPU, with a warning."""
    return frozenset(_data()["falls_back"].get(format_target(release), ()))


def messages(release: TorchVersion) -> dict[str, str]:
    """torch's own texts in ``release``: ``error`` (an operator without a kernel) and
    ``warning`` (one that runs on the CPU), with ``{op}`` for the operator's name."""
    texts: dict[str, dict[str, str]] = _data()["messages"]
    chosen = {}
    for text, entry in texts.items():  # the newest release at or before ``release``
        if _release(text) <= release:
            chosen = entry
    return dict(chosen)


def counts() -> dict[TorchVersion, dict[str, int]]:
    """Per release: how many operators are missing (``M``) and fall back (``F``)."""
    found: dict[TorchVersion, dict[str, int]] = {r: {"M": 0, "F": 0} for r in RELEASES}
    for entry in operators().values():
        for release, letter in zip(RELEASES, entry.statuses, strict=True):
            if letter in ("M", "F"):
                found[release][letter] += 1
    return found


# -- deriving a release's column from its native_functions.yaml (used by the script and
# the test against the installed torch)


def dispatch_keys(function: Mapping[str, Any]) -> frozenset[str]:
    """The dispatch keys one entry of native_functions.yaml has kernels for."""
    dispatch = function.get("dispatch")
    if not dispatch:
        return frozenset()
    return frozenset(key.strip() for keys in dispatch for key in str(keys).split(","))


def function_name(function: Mapping[str, Any]) -> str:
    """``linalg_svd.U(Tensor A, ...) -> ...`` -> ``linalg_svd.U``."""
    return str(function["func"]).split("(", 1)[0].strip()


def classify(
    functions: Iterable[Mapping[str, Any]],
    outside: Iterable[str] = (),
    fallback: Iterable[str] = (),
) -> dict[str, Status]:
    """What every operator of one release's native_functions.yaml does on MPS.

    ``outside``: operators with an MPS kernel registered outside the yaml; ``fallback``:
    those MPSFallback.mm always runs on the CPU. An operator without ``dispatch`` and
    without ``structured_delegate`` is ``CompositeImplicitAutograd`` (torchgen's default);
    a structured delegate's kernels serve the operators that delegate to it.
    """
    entries = list(functions)
    keys_of = {function_name(f): dispatch_keys(f) for f in entries}
    outside, fallback = frozenset(outside), frozenset(fallback)
    found: dict[str, Status] = {}
    for function in entries:
        name = function_name(function)
        keys = keys_of[name]
        delegate = function.get("structured_delegate")
        if delegate:
            keys = keys | keys_of.get(str(delegate).strip(), frozenset())
        elif not keys:
            keys = frozenset({"CompositeImplicitAutograd"})
        elif keys <= {"CompositeImplicitAutogradNestedTensor"}:
            keys = keys | {"CompositeImplicitAutograd"}
        if "MPS" in keys or name in outside:
            found[name] = "K"
        elif name in fallback:
            found[name] = "F"
        elif keys & COMPOSITE_KEYS:
            found[name] = "C"
        elif keys & DENSE_KEYS:
            found[name] = "M"
        else:
            found[name] = "-"
    return found
