"""The ``cuda (emulated)`` column: which rules can show their mechanism without a GPU, and how.

Where no CUDA device is present, verify can still run some fixtures in an *emulated* column,
never reported as a real CUDA run. The one mechanism is ``cuda-as-meta`` (implemented in
``bootstrap.py``): ``torch.cuda.is_available()`` (and ``torch.accelerator``) report CUDA,
and every CUDA placement — ``.cuda()``, ``.to("cuda…")``, ``device="cuda…"`` in factories,
``Module.to`` / ``Module.cuda`` — lands on PyTorch's ``meta`` device instead. Each emulated
program runs in its own process.

Measured on torch 2.13.0+cpu, what ``meta`` reproduces faithfully and what not:

- ``.numpy()`` (and ``np.asarray``, which calls it) raises the same ``TypeError: can't convert
  meta device type tensor to numpy. Use Tensor.cpu() …`` as CUDA does, device name aside.
- elementwise ops, comparisons, ``cat``, losses and ``Linear`` with a bias refuse to mix meta
  and CPU tensors (``Tensor on device cpu is not on the expected device meta!``, or the other
  way round), the same device check CUDA fails with another message. But ``matmul``,
  ``Conv1d``/``Conv2d``, ``Linear(bias=False)`` and in-place ops mix meta and CPU *silently*.
- meta tensors hold no data: ``.item()``, ``.tolist()``, ``.cpu()`` fail, so a program that
  runs clean on CUDA cannot run clean here. Only *failures* are emulated (derived from the
  declared ``cuda`` expectation); every ``ok`` fixture is "not emulated".
- ``tensor.is_cuda`` is False and ``tensor.device`` prints ``meta``; ``torch.cuda.*`` calls
  other than ``is_available`` / ``device_count`` still fail as on a CPU-only build.
- ``torch.optim.Adam.step()`` raises ``Cannot access accelerator device when none is
  available`` (its graph-capture check asks ``torch.accelerator.current_stream()``): a
  fixture whose bug comes after a training step uses SGD, and no ``.item()`` before the bug.

Rejected: ``FakeTensorMode``. Tensors created with ``device="cuda"`` there raise the exact
CUDA mismatch message (matmul included), but ``.cuda()`` / ``.to("cuda")`` fail on a CPU
build, ``.numpy()`` gives a different message, ``.item()`` (which ``DataLoader`` shuffling
calls) raises, and a fake-CUDA ``Linear`` called on a CPU input aborts the process.

Where a rule reports the failing operation itself, an emulated failure must also pass
through a line marked ``# expect:``, so that a meta limitation hit somewhere else cannot
pass for the bug. A fixture can override the
derivation in ``expect.toml`` with its own ``cuda-emulated = …`` (or ``{ skip = "why" }``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from devlint.verify.expectations import (
    EMULATED_KEY,
    Declared,
    Expectation,
    FileExpectations,
    Skip,
)

CUDA_AS_META = "cuda-as-meta"
EMULATED_COLUMN = "cuda (emulated)"

# The meta device's counterpart of a CUDA failure: (a regex found in the declared cuda
# `match`, the `match` to expect on meta instead). Only these two checks are the same
# check on both devices.
META_DEVICE_MISMATCH = r"Tensor on device (cpu|meta) is not on the expected device (meta|cpu)!"
CUDA_TO_META: tuple[tuple[str, str], ...] = (
    (
        r"can't convert cuda(:\d+)? device type tensor to numpy",
        "can't convert meta device type tensor to numpy",
    ),
    (r"Expected all tensors to be on the same device", META_DEVICE_MISMATCH),
)

_MIXING = (
    "the mixing op fails meta's device check (`… not on the expected device meta!`) where CUDA "
    "fails its own; matmul, convolutions, Linear(bias=False) and in-place ops would mix meta "
    "and CPU silently"
)


@dataclass(frozen=True, slots=True)
class Emulation:
    """How one rule's fixtures run in the emulated column."""

    mechanism: str | None  # CUDA_AS_META, or None: not emulated
    limits: str  # why not, or what the emulation does not show; printed with the results
    # The rule reports the failing operation itself, so an emulated failure must pass
    # through a line marked `# expect:`; False where it reports the cause (a factory, an
    # attribute, a discarded move) and the failure comes later.
    at_flagged_line: bool = True
    translations: tuple[tuple[str, str], ...] = CUDA_TO_META


EMULATIONS: dict[str, Emulation] = {
    # numpy-on-accelerator: Tensor.numpy() checks the device first and raises the same
    # TypeError for meta as for cuda:0 (np.asarray/np.array call it). A program that reads
    # data before it fails earlier, which the `# expect:` line check catches.
    "DEV001": Emulation(
        CUDA_AS_META, "`.numpy()` on a meta tensor raises CUDA's TypeError with `meta` for `cuda:0`"
    ),
    # batch-not-moved: the model output is on meta, the unmoved batch element on the CPU.
    # Faithful for elementwise ops, comparisons, losses, cat and Linear with a bias; a
    # fixture whose mixing op is matmul/conv must declare `cuda-emulated = { skip = "…" }`.
    "DEV002": Emulation(CUDA_AS_META, _MIXING),
    # unguarded-cuda: the bug *is* CUDA's absence, which the real cpu column already runs;
    # pretending CUDA is present would only test the emulation's own patch.
    "DEV003": Emulation(None, "the bug shows where CUDA is absent, which the real cpu column runs"),
    # cuda-without-mps-fallback: the programs only print the device they chose; with
    # is_available() patched they would print "cuda" because of the patch, showing nothing.
    "DEV004": Emulation(
        None,
        "device selection only: a patched is_available() would echo the patch; the bug shows on mps",
    ),
    # pin-memory-without-cuda: pinning needs a real accelerator's host allocator and the
    # DataLoader consults the C++ accelerator registry, which no Python patch reaches.
    "DEV005": Emulation(
        None, "pinned memory needs a real accelerator's host allocator; meta has none"
    ),
    # device-mismatch: the same mechanism as DEV002 outside loader loops (binary ops, cat,
    # stack, a moved model on an unmoved input, losses), with the same silent-op limits.
    "DEV006": Emulation(CUDA_AS_META, _MIXING),
    # load-without-map-location: the failure needs a checkpoint written on a real GPU; a
    # meta tensor cannot be saved with data, so nothing faithful can be loaded.
    "DEV007": Emulation(
        None, "needs a checkpoint saved on a real GPU; meta tensors cannot be saved with data"
    ),
    # discarded-move: the tensor left behind then meets device values (a mismatch) or is
    # converted to NumPy: both consequences translate to meta as for DEV002 / DEV001.
    "DEV008": Emulation(
        CUDA_AS_META,
        "the consequences (a device mismatch, `.numpy()`) fail on meta as on CUDA, but a "
        "discarded `.cpu()` itself reads data, which meta cannot; " + _MIXING,
        at_flagged_line=False,
    ),
    # deprecated-cuda-amp: the deprecation warnings come on every machine (the cpu column
    # shows them); on meta, autocast/GradScaler would run CPU code paths, not CUDA's.
    "DEV009": Emulation(
        None, "the deprecation warnings are device-independent: the cpu column shows them"
    ),
    # data-parallel: a performance finding, every program runs clean; needs real GPUs.
    "DEV010": Emulation(
        None, "a performance finding: nothing fails, and DataParallel needs real GPUs"
    ),
    # unguarded-cuda-call: like DEV003, the failure is CUDA's absence (the cpu column);
    # torch.cuda.synchronize() & co. have no meta counterpart.
    "DEV011": Emulation(None, "the bug shows where CUDA is absent, which the real cpu column runs"),
    # host-sync-in-loop: a performance finding; meta tensors cannot even be synced to the host.
    "DEV012": Emulation(
        None, "a performance finding: nothing fails, and meta tensors cannot be read"
    ),
    # factory-without-device: the CPU factory result meets meta inputs: DEV006's mechanism.
    "DEV013": Emulation(CUDA_AS_META, _MIXING, at_flagged_line=False),
    # unregistered-tensor-attribute: model.to() moves parameters and buffers to meta and
    # leaves the plain attribute on the CPU: DEV006's mechanism.
    "DEV014": Emulation(
        CUDA_AS_META,
        _MIXING + "; embedding lookups with CPU indices into meta weights pass silently",
        at_flagged_line=False,
    ),
    # unused-noqa: a comment finding; the programs run the same with or without it.
    "DEV015": Emulation(None, "a comment finding: nothing runs differently on any device"),
    # guarded-cuda-move: like DEV004, the programs only print where they ended up; a
    # patched is_available() would echo the patch.
    "DEV016": Emulation(
        None,
        "device selection only: a patched is_available() would echo the patch; the bug shows on mps",
    ),
}

NOT_DECLARED = Emulation(
    None, "no emulation is declared for this rule (devlint/verify/emulation.py)"
)


def emulation_for(rule: str) -> Emulation:
    return EMULATIONS.get(rule, NOT_DECLARED)


def emulated_expectation(rule: str, entry: FileExpectations) -> tuple[Declared, str | None]:
    """The emulated column's expectation for one fixture, and the mechanism to run it with.

    An explicit ``cuda-emulated`` entry wins (run with the rule's mechanism, or
    ``cuda-as-meta`` where the rule has none); otherwise it is derived from the declared
    ``cuda`` expectation with the rule's substitutions. Returns a ``Skip`` with the reason
    when the fixture is not emulated.
    """
    emulation = emulation_for(rule)
    explicit = entry.devices.get(EMULATED_KEY)
    if isinstance(explicit, Skip):
        return explicit, None
    if explicit is not None:
        return explicit, emulation.mechanism or CUDA_AS_META
    if emulation.mechanism is None:
        return Skip(f"not emulated: {emulation.limits}"), None
    declared = entry.devices.get("cuda")
    if declared is None:
        return Skip("not emulated: no cuda expectation to derive from"), None
    if isinstance(declared, Skip):
        return Skip(f"not emulated: skipped on cuda ({declared.reason})"), None
    if not declared.raises:
        return Skip(
            "not emulated: meta tensors hold no data, so only failures are emulated "
            f"(cuda expects {declared.describe()})"
        ), None
    meta_match = None
    for cuda_pattern, meta_pattern in emulation.translations:
        if declared.match is not None and re.search(cuda_pattern, declared.match):
            meta_match = meta_pattern
            break
    if meta_match is None:
        return Skip(
            f"not emulated: no meta counterpart is known for the cuda failure ({declared.describe()})"
        ), None
    derived = Expectation(declared.raises, meta_match, reason=declared.reason)
    return derived, emulation.mechanism
