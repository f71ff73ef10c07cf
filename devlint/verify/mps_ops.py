"""Virtual MPS: an operator without an MPS kernel raises what a Mac raises.

On virtual MPS (``virtual.py``) every operation on a tensor that would live on MPS runs
under ``OpCheck``, a ``TorchDispatchMode`` that looks each aten operator up in devlint's
MPS coverage table (``devlint/analysis/mps_coverage.json``) at one torch release (the
installed torch's, or ``DEVLINT_MPS_TORCH``, e.g. ``2.6``):

- no MPS kernel there: PyTorch's own ``NotImplementedError: The operator 'aten::take' is
  not currently implemented for the MPS device. ...`` (the text of that release's
  ``aten/src/ATen/mps/MPSFallback.mm``); with ``PYTORCH_ENABLE_MPS_FALLBACK=1``, its
  fallback warning instead, and the operator runs (on the CPU, as everything here does);
- one MPSFallback.mm always sends to the CPU (``embedding_renorm_``, ``linalg_svd``): the
  warning, and it runs. torch warns once per process (``TORCH_WARN_ONCE``), and so does
  this;
- with a ``recorder`` (``devlint run --report``): every operator run on MPS is handed to it
  with its letter, nothing raises or warns, and the run goes on as with the fallback.

A composite operator that MPS serves with a kernel or fallback of its own while the CPU
decomposes it (``linalg_svd``) never reaches a dispatch mode: a Python kernel at
``AutogradCPU`` (installed for the session, removed after) decides it before its
decomposition runs. Self-contained (the standard library and torch), like its siblings:
``virtual.py`` loads it by path in fixture processes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

TABLE = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "analysis", "mps_coverage.json"
)
RELEASE_VARIABLE = "DEVLINT_MPS_TORCH"
# The CPU backend's own routes through a composite: SDPA's choice between kernels and its
# CPU flash kernel. On MPS the same composite takes another route (its math path), so what
# the CPU runs there says nothing about MPS.
CPU_ROUTES = re.compile(r"_for_cpu(_backward)?$|^_fused_sdp_choice$")
FALLBACK_VARIABLE = "PYTORCH_ENABLE_MPS_FALLBACK"


def _release(text: str) -> tuple[int, int] | None:
    match = re.match(r"(\d+)\.(\d+)", text.strip())
    return (int(match[1]), int(match[2])) if match else None


class OpCheck:
    """The operators of one torch release's MPS backend, checked as they dispatch."""

    def __init__(self, torch: Any, release: str | None = None) -> None:
        self.torch = torch
        with open(TABLE, encoding="utf-8") as file:
            data = json.load(file)
        columns = [_release(text) or (0, 0) for text in data["releases"]]
        wanted = _release(release or os.environ.get(RELEASE_VARIABLE) or torch.__version__)
        wanted = min(max(wanted or columns[-1], columns[0]), columns[-1])
        index = columns.index(wanted) if wanted in columns else len(columns) - 1
        self.release = data["releases"][index]
        self.letters = {name: statuses[index] for name, statuses in data["operators"].items()}
        chosen: dict[str, str] = {}
        for text, entry in data["messages"].items():
            if (_release(text) or (0, 0)) <= columns[index]:
                chosen = entry
        self.error = chosen.get("error", "").replace("{commit}", data["commits"][self.release])
        self.warning = chosen.get("warning", "")
        self.fallback = os.environ.get(FALLBACK_VARIABLE, "0").strip() not in ("", "0")
        self.warned = False
        self.depth = 0  # > 0: an operation on MPS tensors is running
        self.paused = 0  # > 0: inside an operator MPS runs whole (its kernel or fallback)
        # (operator, letter) of every operator run on MPS; set: nothing raises or warns
        self.recorder: Callable[[str, str], None] | None = None
        self.explicit: dict[Any, Any] = {}  # operator -> the composite key MPS runs it by
        self.opened: set[str] = set()  # composites whose kernels are running
        self.mode = _mode(self)

    # -- deciding one operator ------------------------------------------------------------

    def letter(self, name: str) -> str:
        return "K" if CPU_ROUTES.search(name) else self.letters.get(name, "K")

    def decide(self, name: str) -> None:
        """Raise or warn as MPS would for operator ``name`` (``take``, ``linalg_svd.U``)."""
        letter = self.letter(name)
        if self.recorder is not None:
            self.recorder(name, letter)
            return
        if letter == "M" and not self.fallback:
            raise NotImplementedError(self.error.format(op=f"aten::{name}"))
        if letter in ("M", "F") and not self.warned:
            self.warned = True
            warnings.warn(self.warning.format(op=f"aten::{name}"), UserWarning, stacklevel=2)

    # -- the session ----------------------------------------------------------------------

    @contextlib.contextmanager
    def checking(self, on_mps: bool) -> Iterator[None]:
        """Around one operation: its aten operators are checked when it runs on MPS."""
        if not on_mps or self.depth:
            yield
            return
        self.depth += 1
        try:
            with self.mode:
                yield
        finally:
            self.depth -= 1

    def install(self) -> Callable[[], None]:
        """Kernels for the composites MPS runs whole; returns what removes them."""
        torch = self.torch
        library = torch.library.Library("aten", "IMPL")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Overriding a previously registered kernel"
            for name, letter in self.letters.items():
                if letter not in ("K", "F"):
                    continue
                if not _has_kernel(torch, name, "CompositeImplicitAutograd"):
                    continue
                base, _, overload = name.partition(".")
                packet = getattr(torch.ops.aten, base, None)
                op = getattr(packet, overload or "default", None) if packet is not None else None
                if op is not None:
                    library.impl(name, self._composite(name, op), "AutogradCPU")
        return library._destroy

    def _composite(self, name: str, op: Any) -> Callable[..., Any]:
        def kernel(*args: Any, **kwargs: Any) -> Any:
            if not self.depth or self.paused:
                return op.decompose(*args, **kwargs)
            self.decide(name)
            self.paused += 1  # MPS runs it whole: its decomposition is not MPS's
            try:
                return op.decompose(*args, **kwargs)
            finally:
                self.paused -= 1

        return kernel


def _has_kernel(torch: Any, name: str, key: str) -> bool:
    """Whether aten operator ``name`` has a kernel for ``key``; False for an operator this
    torch does not have (the table spans releases: ``aten::cholesky`` is gone in 2.14)."""
    try:
        return bool(torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{name}", key))
    except RuntimeError:
        return False


_EXPLICIT = ("CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")


def _explicit_key(check: OpCheck, func: Any, name: str) -> Any:
    """The composite key whose kernel MPS runs ``func`` by (its operators are then MPS's,
    ``cummax`` -> ``_cummax_helper``), or None: the table gives MPS a kernel of its own,
    or the CPU has one (MPS's is then not known to be composite)."""
    cache = check.explicit
    if func in cache:
        return cache[func]
    from torch._C import DispatchKey

    torch = check.torch
    letter = check.letters.get(name)
    qualified = func.name()
    key = None
    if letter == "C" or (
        letter is None and not torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "CPU")
    ):
        for candidate in _EXPLICIT:
            if torch._C._dispatch_has_kernel_for_dispatch_key(qualified, candidate):
                key = getattr(DispatchKey, candidate)
                break
    cache[func] = key
    return key


def _mode(check: OpCheck) -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    class MpsOperators(TorchDispatchMode):
        def __torch_dispatch__(
            self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
        ) -> Any:
            kwargs = kwargs or {}
            if check.paused:
                return func(*args, **kwargs)
            base = func._schema.name.split("::", 1)[-1]
            overload = func._overloadname
            name = base if overload == "default" else f"{base}.{overload}"
            check.decide(name)
            key = _explicit_key(check, func, name) if check.letter(name) != "F" else None
            if key is None or name in check.opened:
                return func(*args, **kwargs)
            check.opened.add(name)  # its composite kernel's operators pass through here
            try:
                with self:
                    return func._op_dk(key, *args, **kwargs)
            except RuntimeError as error:  # a wrapped number reaches Python as a number
                if "Expected a value of type" not in str(error):
                    raise
                return func(*args, **kwargs)
            finally:
                check.opened.discard(name)

    return MpsOperators()
