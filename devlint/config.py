"""``[tool.devlint]``: finding it, validating it, and resolving rule selections."""

from __future__ import annotations

import difflib
import fnmatch
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ACCELERATOR_APIS = ("auto", "torch.accelerator", "three-way")
LIST_KEYS = ("select", "ignore", "extend-select", "exclude", "extend-exclude", "guard-functions")
KNOWN_KEYS = (*LIST_KEYS, "per-file-ignores", "accelerator-api", "cache-dir")


class ConfigError(Exception):
    """A one-line, user-facing message (the CLI prints it and exits 2)."""


@dataclass(frozen=True)
class FileConfig:
    """What ``[tool.devlint]`` says, validated."""

    path: Path | None
    root: Path
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    guard_functions: tuple[str, ...] = ()
    accelerator_api: str = "auto"
    cache_dir: Path | None = None


def find_config(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` with a ``[tool.devlint]`` table, walking up."""
    directory = start if start.is_dir() else start.parent
    for candidate in (directory, *directory.parents):
        for name in ("devlint.toml", "pyproject.toml"):
            path = candidate / name
            if path.is_file() and (name == "devlint.toml" or _has_devlint_table(path)):
                return path
    return None


def _has_devlint_table(path: Path) -> bool:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return isinstance(data.get("tool"), dict) and "devlint" in data["tool"]


def load_config(path: Path | None) -> FileConfig:
    """Read and validate a configuration file; defaults (root = cwd) when None."""
    if path is None:
        return FileConfig(path=None, root=Path.cwd())
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read config file {path}: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"invalid TOML in {path}: {error}") from None
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("devlint", {})
        where = f"[tool.devlint] of {path}"
    else:
        table, where = data, str(path)
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    return _validate(table, where, path)


def _validate(table: dict[str, Any], where: str, path: Path) -> FileConfig:
    for key in table:
        if key not in KNOWN_KEYS:
            close = difflib.get_close_matches(key, KNOWN_KEYS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(f"unknown key '{key}' in {where}{hint}")
    lists = {key: _string_list(table[key], key, where) for key in LIST_KEYS if key in table}
    per_file: dict[str, tuple[str, ...]] = {}
    raw = table.get("per-file-ignores", {})
    if not isinstance(raw, dict):
        raise ConfigError(f"'per-file-ignores' in {where} must be a table of glob = [codes]")
    for glob, codes in raw.items():
        per_file[glob] = _string_list(codes, f"per-file-ignores.{glob}", where)
    api = table.get("accelerator-api", "auto")
    if api not in ACCELERATOR_APIS:
        choices = ", ".join(f"'{choice}'" for choice in ACCELERATOR_APIS)
        raise ConfigError(f"'accelerator-api' in {where} must be one of {choices}, not {api!r}")
    for name in lists.get("guard-functions", ()):
        if not all(part.isidentifier() for part in name.split(".")):
            raise ConfigError(f"'guard-functions' in {where}: {name!r} is not a dotted name")
    cache_dir = table.get("cache-dir")
    if cache_dir is not None and not isinstance(cache_dir, str):
        raise ConfigError(f"'cache-dir' in {where} must be a string")
    root = path.parent.resolve()
    return FileConfig(
        path=path,
        root=root,
        select=lists.get("select"),
        ignore=lists.get("ignore", ()),
        extend_select=lists.get("extend-select", ()),
        per_file_ignores=per_file,
        exclude=lists.get("exclude"),
        extend_exclude=lists.get("extend-exclude", ()),
        guard_functions=lists.get("guard-functions", ()),
        accelerator_api=api,
        cache_dir=root / cache_dir if cache_dir is not None else None,
    )


def _string_list(value: object, key: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"'{key}' in {where} must be a list of strings")
    return tuple(value)


def resolve_codes(
    select: Sequence[str] | None,
    extend_select: Sequence[str],
    ignore: Sequence[str],
    known: Sequence[str],
    default_on: Sequence[str],
) -> frozenset[str]:
    """ruff's semantics: select (default: the default rules) + extend-select - ignore.

    Entries are codes or prefixes (``DEV``, ``DEV00``, ``ALL``); for a code matched by
    both a select and an ignore entry, the more specific entry wins.
    """
    for option, entries in (("select", select or ()), ("extend-select", extend_select), ("ignore", ignore)):
        unknown = [e for e in entries if not _matching(e, known)]
        if unknown:
            raise ConfigError(f"unknown rule code(s) in {option}: {', '.join(unknown)}")
    chosen = list(select) if select is not None else list(default_on)
    chosen += list(extend_select)
    enabled = set()
    for code in known:
        selected = [len(e) for e in chosen if code in _matching(e, known)]
        if select is None and code in default_on:
            selected.append(len(code))
        if not selected:
            continue
        ignored = [len(e) for e in ignore if code in _matching(e, known)]
        if not ignored or max(selected) > max(ignored):
            enabled.add(code)
    return frozenset(enabled)


def _matching(entry: str, known: Sequence[str]) -> list[str]:
    entry = entry.strip().upper()
    if entry == "ALL":
        return list(known)
    return [code for code in known if code.startswith(entry)] if entry else []


def codes_for_file(
    path: Path,
    root: Path,
    per_file_ignores: Mapping[str, tuple[str, ...]],
    enabled: frozenset[str],
) -> frozenset[str]:
    """``enabled`` minus the per-file ignores whose glob matches ``path``."""
    if not per_file_ignores:
        return enabled
    absolute = path if path.is_absolute() else Path.cwd() / path
    try:
        relative = absolute.resolve().relative_to(root).as_posix()
    except ValueError:
        relative = path.as_posix()
    removed: set[str] = set()
    for glob, codes in per_file_ignores.items():
        if fnmatch.fnmatch(relative, glob) or fnmatch.fnmatch(path.name, glob):
            for entry in codes:
                removed.update(_matching(entry, sorted(enabled)))
    return enabled - removed
