"""The virtual columns: ``cuda (virtual)`` and ``mps (virtual)``, and what they reproduce.

Where CUDA or MPS is absent, ``devlint verify --device cuda`` (``mps``, ``all``) adds a
virtual column for it: every fixture runs on the CPU under ``virtual.py``'s
``VirtualDevice``, which makes the machine look as if it had that accelerator, tracks
where each tensor would live and raises PyTorch's own errors where the device would. A
virtual column checks the fixture's declared ``cuda`` / ``mps`` expectation itself, but
it is never reported as a real device run (``observed.py`` counts it as ``virtual``).

An earlier column mapped CUDA to the ``meta`` device instead: meta holds no data
(``.item()``, ``.cpu()``, Adam's ``step()`` fail), so only failures could be reproduced,
matmul and convolutions mixed meta and CPU tensors silently, and MPS had no column at all.
The virtual device runs every program to its end and checks placement on every operation.

A fixture may override its virtual expectation in ``expect.toml`` with ``cuda-virtual`` /
``mps-virtual`` (an outcome, or ``{ skip = "why" }``, printed with the results) where the
virtual device cannot reproduce the program (a CUDA-only package such as triton).
"""

from __future__ import annotations

from dataclasses import dataclass

from devlint.rule import Rule, all_rules
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


DEFAULT = Virtual(Rule.virtual_note, Rule.virtual_at_flagged_line)


def virtuals() -> dict[str, Virtual]:
    """Every rule's ``Virtual``, from its class (``virtual_note``, ``virtual_at_flagged_line``)."""
    return {
        code: Virtual(rule.virtual_note, rule.virtual_at_flagged_line)
        for code, rule in all_rules().items()
    }


def virtual_for(rule: str) -> Virtual:
    return virtuals().get(rule, DEFAULT)


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
