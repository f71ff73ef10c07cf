"""The virtual columns: ``cuda (virtual)`` and ``mps (virtual)``, and what they reproduce.

Where CUDA or MPS is absent, ``devlint verify --device cuda`` (``mps``, ``all``) adds a
virtual column for it: every fixture runs on the CPU under ``virtual.py``'s
``VirtualDevice``, which makes the machine look as if it had that accelerator, tracks
where each tensor would live and raises PyTorch's own errors where the device would. A
virtual column checks the fixture's declared ``cuda`` / ``mps`` expectation itself, but
it is never reported as a real device run (``observed.py`` counts it as ``virtual``).

It replaces the earlier ``cuda (emulated)`` column, which mapped CUDA to the ``meta``
device: meta holds no data (``.item()``, ``.cpu()``, Adam's ``step()`` fail) so only
failures could be emulated, matmul and convolutions mixed meta and CPU tensors silently,
and MPS had no column at all. The virtual device runs every program to its end and
checks placement on every operation, so meta is no longer the better oracle for any rule.

A fixture may override its virtual expectation in ``expect.toml`` with ``cuda-virtual`` /
``mps-virtual`` (an outcome, or ``{ skip = "why" }``, printed with the results) where the
virtual device cannot reproduce the program (a CUDA-only package such as triton).
"""

from __future__ import annotations

from dataclasses import dataclass

from devlint.verify.expectations import VIRTUAL_KEYS, Declared, FileExpectations, Skip

VIRTUAL_DEVICES = ("cuda", "mps")


def column_name(device: str) -> str:
    return f"{device} (virtual)"


def mechanism(device: str) -> str:
    return f"virtual-{device}"


@dataclass(frozen=True, slots=True)
class Virtual:
    """What the virtual columns show for one rule."""

    note: str  # the mechanism the virtual device reproduces (printed on a mismatch)
    # The rule reports the failing operation itself, so a virtual failure must pass through
    # a line marked `# expect:` (a limit of the virtual device hit elsewhere cannot pass
    # for the bug); False where it reports the cause and the failure comes later.
    at_flagged_line: bool = True


_MIXING = "operations check that their tensor inputs share one virtual device"
VIRTUALS: dict[str, Virtual] = {
    "DEV001": Virtual("`.numpy()` / `np.asarray` of a device tensor raise PyTorch's TypeError"),
    "DEV002": Virtual(_MIXING + ": the unmoved batch element meets the moved model"),
    "DEV003": Virtual(
        "CUDA is present on virtual CUDA; on virtual MPS `.cuda()` fails as on a Mac",
        at_flagged_line=False,
    ),
    "DEV004": Virtual(
        "the availability APIs answer as on that machine; the program prints its choice",
        at_flagged_line=False,
    ),
    "DEV005": Virtual(
        "DataLoader pinning runs torch's own code: silent on CUDA, its warning on MPS",
        at_flagged_line=False,
    ),
    "DEV006": Virtual(_MIXING),
    "DEV007": Virtual(
        "torch.save records each tensor's virtual device; torch.load restores it",
        at_flagged_line=False,
    ),
    "DEV008": Virtual(_MIXING + ": the tensor left behind meets device values later", False),
    "DEV009": Virtual("the deprecation warnings come from torch's own amp code", False),
    "DEV010": Virtual(
        "a performance finding: DataParallel on one virtual GPU checks the module's device and "
        "moves the inputs as its scatter does",
        at_flagged_line=False,
    ),
    "DEV011": Virtual(
        "torch.cuda calls answer on virtual CUDA and fail as on a Mac on virtual MPS", False
    ),
    "DEV012": Virtual("a performance finding: `.item()` and friends count as host syncs", False),
    "DEV013": Virtual(_MIXING + ": the factory's CPU result meets device tensors", False),
    "DEV014": Virtual(_MIXING + ": Module.to leaves the plain attribute on the CPU", False),
    "DEV015": Virtual("a comment finding: nothing runs differently on any device", False),
    "DEV016": Virtual(
        "the availability APIs answer as on that machine; the program prints its choice", False
    ),
    "DEV017": Virtual("the availability APIs answer as on that machine", False),
    "DEV018": Virtual(
        "a float64 tensor on virtual MPS raises MPS's own TypeError", at_flagged_line=False
    ),
}
VIRTUALS["DEV019"] = Virtual(
    "an aten operator without an MPS kernel raises torch's NotImplementedError on virtual "
    "MPS (mps_ops.py); MPSFallback.mm's operators warn and run",
    at_flagged_line=False,  # a module is reported where it is built, fails where called
)
DEFAULT = Virtual("the rule's programs run under the virtual device", at_flagged_line=False)


def virtual_for(rule: str) -> Virtual:
    return VIRTUALS.get(rule, DEFAULT)


def virtual_expectation(
    rule: str, entry: FileExpectations, device: str
) -> tuple[Declared, str | None]:
    """A virtual column's expectation for one fixture, and the mechanism to run it with.

    An explicit ``cuda-virtual`` / ``mps-virtual`` entry wins; otherwise the declared
    ``cuda`` / ``mps`` expectation itself. A ``Skip`` says why the fixture does not run.
    """
    explicit = entry.devices.get(VIRTUAL_KEYS[device])
    if isinstance(explicit, Skip):
        return explicit, None
    if explicit is not None:
        return explicit, mechanism(device)
    declared = entry.devices.get(device)
    if declared is None:
        return Skip(f"no expectation for {device}"), None
    if isinstance(declared, Skip):
        return Skip(f"skipped on {device}: {declared.reason}"), None
    return declared, mechanism(device)
