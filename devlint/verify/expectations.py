"""``expect.toml``: what running each fixture does on each device, and checking a run against it.

Pure data and functions: no torch, no processes (the installed torch's version is read
from its package metadata). The format is documented in ``fixtures/README.md``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

DEVICES = ("cpu", "cuda", "mps")
# A virtual column's own expectation, where it differs from the device's (see virtual_columns.py).
VIRTUAL_KEYS = {"cuda": "cuda-virtual", "mps": "mps-virtual"}
_DEVICE_KEYS = (*DEVICES, *VIRTUAL_KEYS.values())
_FILE_KEYS = {"reason", "isolated"}
_OUTCOME_KEYS = {"raises", "match", "warns", "prints", "reason", "skip", "torch"}


@functools.cache
def installed_torch() -> tuple[int, int] | None:
    """The installed torch's release (``(2, 13)``), or None where there is none."""
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2])) if match else None


@dataclass(frozen=True, slots=True)
class Expectation:
    """One declared outcome. All given parts must hold; none given means ``ok``.

    ``raises``: names of exception classes (any class in the raised exception's MRO may
    match); ``match``: regex searched in ``str(exception)``. Without ``raises`` the program
    must exit cleanly (status 0). ``warns`` / ``prints``: regexes searched in the program's
    warnings (and stderr) / standard output.
    """

    raises: tuple[str, ...] = ()
    match: str | None = None
    warns: str | None = None
    prints: str | None = None
    reason: str | None = None

    @property
    def is_ok(self) -> bool:
        return not (self.raises or self.warns or self.prints)

    def describe(self) -> str:
        if self.is_ok:
            return "ok"
        parts = []
        if self.raises:
            text = "raises " + " or ".join(self.raises)
            if self.match is not None:
                text += f' matching "{self.match}"'
            parts.append(text)
        if self.warns is not None:
            parts.append(f'warns "{self.warns}"')
        if self.prints is not None:
            parts.append(f'prints "{self.prints}"')
        return " and ".join(parts)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"describe": self.describe()}
        if self.raises:
            data["raises"] = list(self.raises)
            data["match"] = self.match
        if self.warns is not None:
            data["warns"] = self.warns
        if self.prints is not None:
            data["prints"] = self.prints
        return data


OK = Expectation()


@dataclass(frozen=True, slots=True)
class Skip:
    """``{ skip = "why" }``: deliberately not run on that device (or virtual column)."""

    reason: str


Declared = Expectation | Skip


@dataclass(frozen=True, slots=True)
class FileExpectations:
    """One ``["file.py"]`` table of ``expect.toml``."""

    name: str
    devices: Mapping[str, Declared]  # keys: cpu, cuda, mps, cuda-virtual, mps-virtual
    reason: str | None = None
    isolated: bool = False  # run in its own process, never batched


@dataclass(slots=True)
class ExpectFile:
    """A parsed ``expect.toml``: the valid entries, and one line per problem."""

    entries: dict[str, FileExpectations] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def parse_expect_toml(text: str, where: str = "expect.toml") -> ExpectFile:
    """Parse and validate; a bad entry becomes a problem and is left out, the rest stay."""
    result = ExpectFile()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        result.problems.append(f"{where}: not valid TOML: {error}")
        return result
    for name, table in data.items():
        try:
            result.entries[name] = _parse_entry(name, table)
        except ValueError as error:
            result.problems.append(f'{where} ["{name}"]: {error}')
    return result


def _parse_entry(name: str, table: Any) -> FileExpectations:
    if not isinstance(table, dict):
        raise ValueError("must be a table of devices")
    unknown = sorted(set(table) - set(_DEVICE_KEYS) - _FILE_KEYS)
    if unknown:
        allowed = ", ".join([*_DEVICE_KEYS, *sorted(_FILE_KEYS)])
        raise ValueError(f"unknown key {unknown[0]!r} (allowed: {allowed})")
    reason = table.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise ValueError("reason must be a string")
    isolated = table.get("isolated", False)
    if not isinstance(isolated, bool):
        raise ValueError("isolated must be true or false")
    devices = {key: _parse_outcome(table[key], key, reason) for key in _DEVICE_KEYS if key in table}
    return FileExpectations(name, devices, reason, isolated)


def _parse_outcome(value: Any, key: str, file_reason: str | None) -> Declared:
    if value == "ok":
        return Expectation(reason=file_reason)
    if not isinstance(value, dict):
        raise ValueError(f'{key}: expected "ok" or a table, got {value!r}')
    unknown = sorted(set(value) - _OUTCOME_KEYS)
    if unknown:
        raise ValueError(f"{key}: unknown key {unknown[0]!r}")
    reason = value.get("reason", file_reason)
    if reason is not None and not isinstance(reason, str):
        raise ValueError(f"{key}: reason must be a string")
    floor = value.get("torch")
    if floor is not None:  # ``{ torch = "2.12" }``: declared for that release and newer
        match = re.fullmatch(r"(\d+)\.(\d+)", floor) if isinstance(floor, str) else None
        if match is None:
            raise ValueError(f'{key}: torch must be a release such as "2.12", got {floor!r}')
        installed = installed_torch()
        if installed is not None and installed < (int(match[1]), int(match[2])):
            return Skip(
                f"declared for torch {floor} and newer (installed: {installed[0]}.{installed[1]})"
            )
        value = {part: given for part, given in value.items() if part != "torch"}
        if not set(value) - {"reason"}:
            return Expectation(reason=value.get("reason", file_reason))
    if "skip" in value:
        if set(value) - {"skip", "reason"} or not isinstance(value["skip"], str):
            raise ValueError(f'{key}: skip takes only a reason string: {{ skip = "why" }}')
        return Skip(value["skip"])
    raises = value.get("raises", ())
    if isinstance(raises, str):
        raises = (raises,)
    if not isinstance(raises, (list, tuple)) or not all(
        isinstance(name, str) and name for name in raises
    ):
        raise ValueError(f"{key}: raises must be a class name or a list of names")
    if "raises" in value and not raises:
        raise ValueError(f"{key}: raises must name at least one class")
    if "match" in value and not raises:
        raise ValueError(f"{key}: match needs raises")
    patterns = {part: value.get(part) for part in ("match", "warns", "prints")}
    for part, pattern in patterns.items():
        if pattern is None:
            continue
        if not isinstance(pattern, str):
            raise ValueError(f"{key}: {part} must be a regular expression string")
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(f"{key}: {part} is not a valid regular expression: {error}") from None
    expectation = Expectation(
        tuple(raises), patterns["match"], patterns["warns"], patterns["prints"], reason
    )
    if expectation.is_ok:
        raise ValueError(f'{key}: a table needs raises, warns or prints (or write "ok")')
    return expectation


# --- what a run did -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RaisedException:
    """The exception a program ended with (reported by the bootstrap, never parsed from output)."""

    names: tuple[str, ...]  # the class and its bases: __name__, most derived first
    qualnames: tuple[str, ...]  # the same as module.QualName
    message: str
    lines: tuple[int, ...] = ()  # the program's own lines in the traceback, innermost last

    @property
    def headline(self) -> str:
        first = self.message.strip().splitlines()[0] if self.message.strip() else ""
        return f"{self.names[0]}: {first}" if first else self.names[0]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one run did."""

    exit_code: int | None  # None when it was killed (timeout)
    exception: RaisedException | None = None
    warnings: tuple[str, ...] = ()  # "Category: message"
    stdout: str = ""
    stderr: str = ""
    duration: float = 0.0
    timed_out: bool = False
    crash: str | None = None  # the process died without reporting (signal, abort, os._exit)

    def describe(self) -> str:
        if self.timed_out:
            return f"a timeout after {self.duration:.0f} s"
        if self.crash is not None:
            return f"a crash ({self.crash})"
        if self.exception is not None and self.exception.names[0] != "SystemExit":
            return f"{self.exception.headline} (exit {self.exit_code})"
        if self.exit_code == 0:
            return "ok (exit 0)"
        return f"exit {self.exit_code}"

    @property
    def warning_text(self) -> str:
        return "\n".join([*self.warnings, self.stderr])

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "describe": self.describe(),
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "crash": self.crash,
            "exception": None,
            "warnings": list(self.warnings),
            "stdout_tail": tail(self.stdout, 20),
            "stderr_tail": tail(self.stderr, 20),
            "duration_s": round(self.duration, 3),
        }
        if self.exception is not None:
            data["exception"] = {
                "types": list(self.exception.names),
                "message": self.exception.message,
                "lines": list(self.exception.lines),
            }
        return data


def tail(text: str, lines: int) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def mismatch(
    expected: Expectation,
    outcome: Outcome,
    forbidden_warnings: Sequence[str] = (),
    flagged_lines: frozenset[int] | None = None,
) -> str | None:
    """None when the outcome is the declared one, else what was got instead (one line).

    ``forbidden_warnings``: regexes that must not show up in the warnings (the rule's own
    ``warns`` patterns, checked on programs that must run clean). ``flagged_lines``: when
    given, a raised exception must pass through one of these lines of the program.
    """
    got = outcome.describe()
    if outcome.timed_out or outcome.crash is not None:
        return got
    raised = outcome.exception
    if expected.raises:
        if raised is None:
            return got
        wanted = set(expected.raises)
        if not wanted & (set(raised.names) | set(raised.qualnames)):
            return got
        if expected.match is not None and not re.search(expected.match, raised.message):
            return f"{got}, whose message does not match"
        if flagged_lines is not None and not set(raised.lines) & flagged_lines:
            where = f"line {raised.lines[-1]}" if raised.lines else "outside the program"
            return f"{got} at {where}, not at a line marked `# expect:`"
    elif raised is not None or outcome.exit_code != 0:
        return got
    if expected.warns is not None and not re.search(expected.warns, outcome.warning_text):
        seen = "; ".join(outcome.warnings) or "none"
        return f"{got} without a matching warning (warnings: {_clip(seen)})"
    if expected.prints is not None and not re.search(expected.prints, outcome.stdout):
        return (
            f"{got} whose output does not match (stdout ends: {_clip(tail(outcome.stdout, 2))!r})"
        )
    for pattern in forbidden_warnings:
        found = re.search(pattern, outcome.warning_text)
        if found:
            return f'{got}, but it warned "{_clip(found.group(0))}" (the rule\'s own warning)'
    return None


def _clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
