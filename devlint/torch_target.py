"""``target-torch``: the oldest torch release a project supports (like ruff's ``target-version``).

Fixes never write an API that this release lacks. When the configuration does not name
one, it is read from the project's own dependency declaration (``torch>=2.6`` in
``pyproject.toml``, ``setup.cfg`` or ``requirements.txt``); when there is none either, it
is :data:`DEFAULT_TARGET_TORCH`, a release older than every ``torch.accelerator`` API.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

TorchVersion = tuple[int, int]

# torch 2.0 (March 2023): conservative, older than torch.accelerator (2.6).
DEFAULT_TARGET_TORCH: TorchVersion = (2, 0)

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.\d+)?\Z")
# Specifiers that bound the release from below: ``>=2.6``, ``~=2.6``, ``==2.6.*``, ``>2.5``.
_LOWER_BOUNDS = (">=", "~=", "==", "===", ">")
_DECLARATIONS = ("pyproject.toml", "setup.cfg", "requirements.txt")
# A PEP 508 requirement: its name, its extras, then the rest (specifiers, marker or URL).
_REQUIREMENT = re.compile(
    r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[^\]]*\])?\s*(.*)", re.DOTALL
)
_SEPARATORS = re.compile(r"[-_.]+")  # a name's canonical form joins them with "-"
# One version specifier: an operator and a version (">=2.6", "==2.6.*", "~=2.9.1").
_SPECIFIER = re.compile(r"\s*(~=|===|==|!=|<=|>=|<|>)\s*([^\s,]+)\s*")
# A PEP 440 version (its release's first two parts captured): "2.6", "v2.6.1rc1",
# "1!2.6", "2.6.*", "2.4.0+cu121", "2.7.0.dev20250101".
_RELEASE = re.compile(
    r"v?(?:\d+!)?(\d+)(?:\.(\d+))?(?:\.\d+)*"
    r"(?:[-_.]?(?:a|b|c|rc|alpha|beta|pre|preview)[-_.]?\d*)?"
    r"(?:-\d+|[-_.]?(?:post|rev|r)[-_.]?\d*)?"
    r"(?:[-_.]?dev[-_.]?\d*)?"
    r"(?:\.\*|\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?",
    re.IGNORECASE,
)
_WILDCARD = re.compile(r"v?(?:\d+!)?\d+(?:\.\d+)*\.\*", re.IGNORECASE)  # a release only


def parse_target(text: str) -> TorchVersion | None:
    """``"2.6"`` or ``"2.6.1"`` -> ``(2, 6)``; None for anything else."""
    match = _VERSION.match(text.strip())
    return (int(match[1]), int(match[2])) if match else None


def format_target(version: TorchVersion) -> str:
    return f"{version[0]}.{version[1]}"


def declared_target(root: Path) -> TorchVersion | None:
    """The lowest torch release the project at ``root`` declares it accepts, if any.

    Read from ``[project] dependencies`` and ``optional-dependencies`` of
    ``pyproject.toml``, else ``install_requires`` / ``extras_require`` of ``setup.cfg``,
    else ``requirements.txt``; the first file with a bounded torch requirement wins.
    """
    for lines in (_pyproject(root), _setup_cfg(root), _requirements(root)):
        found = [bound for bound in map(_lower_bound, lines) if bound is not None]
        if found:
            return min(found)
    return None


def project_root(start: Path) -> Path:
    """The nearest directory at or above ``start`` that declares dependencies (else ``start``)."""
    for directory in (start, *start.parents):
        if any((directory / name).is_file() for name in _DECLARATIONS):
            return directory
    return start


def _lower_bound(line: str) -> TorchVersion | None:
    """The release a PEP 508 torch requirement starts at: ``torch>=2.6,<3`` -> (2, 6).

    Read with two regular expressions rather than packaging's Requirement, whose import
    (markers, platform tags) cost a one-file run a tenth of its time (bench/startup.py);
    a requirement whose specifiers do not parse gives None, as it did there.
    """
    match = _REQUIREMENT.fullmatch(line.split("#", 1)[0])
    if match is None or _SEPARATORS.sub("-", match[1]).lower() != "torch":
        return None
    specifiers = match[2].split(";", 1)[0].strip()  # the environment marker: any
    if specifiers.startswith("@"):  # a URL: no release to read
        return None
    if specifiers.startswith("(") and specifiers.endswith(")"):  # PEP 508 allows them
        specifiers = specifiers[1:-1]
    bounds = []
    for part in filter(str.strip, specifiers.split(",")):  # empty parts: none, as in pip
        spec = _SPECIFIER.fullmatch(part)
        if spec is None or not _valid_specifier(spec[1], spec[2]):
            return None
        release = _RELEASE.fullmatch(spec[2])
        if spec[1] in _LOWER_BOUNDS and release is not None:
            bounds.append((int(release[1]), int(release[2] or 0)))
    return max(bounds) if bounds else None


def _valid_specifier(operator: str, version: str) -> bool:
    """PEP 440's rules for one specifier: ``===`` takes any string; a wildcard (``2.6.*``)
    or a local version (``+cu121``) only ``==`` / ``!=``; ``~=`` two release parts."""
    if operator == "===":
        return True
    release = _RELEASE.fullmatch(version)
    if release is None:
        return False
    if version.endswith(".*"):
        return operator in ("==", "!=") and _WILDCARD.fullmatch(version) is not None
    if "+" in version and operator not in ("==", "!="):
        return False
    return operator != "~=" or release[2] is not None


def _pyproject(root: Path) -> Iterator[str]:
    data = _read_toml(root / "pyproject.toml")
    project = data.get("project") if isinstance(data, dict) else None
    if not isinstance(project, dict):
        return
    yield from _strings(project.get("dependencies"))
    optional = project.get("optional-dependencies")
    if isinstance(optional, dict):
        for group in optional.values():
            yield from _strings(group)


def _setup_cfg(root: Path) -> Iterator[str]:
    if not (root / "setup.cfg").is_file():
        return
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(root / "setup.cfg", encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return
    if parser.has_option("options", "install_requires"):
        yield from parser.get("options", "install_requires").splitlines()
    if parser.has_section("options.extras_require"):
        for _, value in parser.items("options.extras_require"):
            yield from value.splitlines()


def _requirements(root: Path) -> Iterator[str]:
    try:
        text = (root / "requirements.txt").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    yield from (line for line in text.splitlines() if not line.lstrip().startswith("-"))


def _read_toml(path: Path) -> Any:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


def _strings(value: Any) -> Iterable[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []
