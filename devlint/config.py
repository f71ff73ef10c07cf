"""``[tool.devlint]``: finding, reading and validating the configuration; rule selection.

The configuration lives in the nearest ``pyproject.toml`` that has a ``[tool.devlint]``
table (or in a ``devlint.toml`` / ``.devlint.toml`` with the same keys at the top level),
or in the file given with ``--config``. Every problem with it is a :class:`ConfigError`
whose message is one line naming the file, the key and what was expected.

Rule selection follows ruff: ``select`` (or the default set) plus ``extend-select`` minus
``ignore``, where every entry is a code, a prefix of codes or ``ALL``, and a more specific
entry wins over a less specific one.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from devlint.records import record
from devlint.torch_target import (
    DEFAULT_TARGET_TORCH,
    TorchVersion,
    declared_target,
    parse_target,
    project_root,
)

if TYPE_CHECKING:
    import pathspec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "ACCELERATOR_APIS",
    "CONFIG_FILENAMES",
    "KNOWN_KEYS",
    "ConfigError",
    "FileConfig",
    "check_codes",
    "codes_for_file",
    "find_config",
    "load_config",
    "resolve_codes",
    "target_torch",
]

ACCELERATOR_APIS: tuple[str, ...] = ("auto", "torch.accelerator", "three-way")
KNOWN_KEYS: tuple[str, ...] = (
    "select",
    "ignore",
    "extend-select",
    "per-file-ignores",
    "exclude",
    "extend-exclude",
    "guard-functions",
    "accelerator-api",
    "target-torch",
    "cache-dir",
    "line-length",
    "fixable",
    "unfixable",
    "respect-gitignore",
    "force-exclude",
    "output-format",
    "docs-url",
)
DEFAULT_LINE_LENGTH = 88  # ruff's and black's default
# Looked for in every directory, in this order, before pyproject.toml (like ruff.toml).
CONFIG_FILENAMES: tuple[str, ...] = (".devlint.toml", "devlint.toml")

_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\Z")
_MENTIONS_TOOL_DEVLINT = re.compile(r"tool\s*\.\s*[\"']?devlint\b")


class ConfigError(Exception):
    """A one-line, user-facing message (the CLI prints it and exits 2)."""


def _empty_mapping() -> Mapping[str, tuple[str, ...]]:
    return MappingProxyType({})


@record(frozen=True)
class FileConfig:
    """What ``[tool.devlint]`` says, validated. Command-line options are merged by the caller."""

    path: Path | None  # the pyproject.toml / devlint.toml it came from (absolute)
    root: Path  # project root: the file's directory, or the cwd when there is no file
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    # glob -> codes; read-only. Left out of the hash (a mapping is not hashable).
    per_file_ignores: Mapping[str, tuple[str, ...]] = field(
        default_factory=_empty_mapping, hash=False
    )
    exclude: tuple[str, ...] | None = None  # replaces the default excludes when set
    extend_exclude: tuple[str, ...] = ()
    guard_functions: tuple[str, ...] = ()
    accelerator_api: str = "auto"  # "auto" | "torch.accelerator" | "three-way"
    target_torch: TorchVersion | None = None  # None: the project's declaration (``target_torch``)
    cache_dir: Path | None = None  # absolute: resolved relative to root
    line_length: int = DEFAULT_LINE_LENGTH  # fixes keep their lines within it
    fixable: tuple[str, ...] | None = None  # codes --fix may fix (None: all)
    unfixable: tuple[str, ...] = ()  # codes whose fixes are withheld
    respect_gitignore: bool = True
    force_exclude: bool = False  # excludes apply to files named on the command line too
    output_format: str | None = None  # None: the default (full)
    docs_url: str | None = None  # template of the rule pages' address (devlint.docs)


# --------------------------------------------------------------------------- finding


def find_config(start: Path) -> Path | None:
    """The configuration that applies to ``start`` (a directory, or a file's directory).

    Walking up from ``start`` to the filesystem root, the first directory that holds a
    ``.devlint.toml``, a ``devlint.toml``, or a ``pyproject.toml`` with a
    ``[tool.devlint]`` table wins; ``None`` when there is none. A ``pyproject.toml``
    that is not valid TOML but mentions ``tool.devlint`` is a :class:`ConfigError`
    (it was clearly meant to configure devlint); other broken or unreadable ones are
    passed over.
    """
    start = Path(os.path.abspath(start))
    directory = start if start.is_dir() else start.parent
    for candidate_dir in (directory, *directory.parents):
        for name in CONFIG_FILENAMES:
            candidate = candidate_dir / name
            if candidate.is_file():
                return candidate
        pyproject = candidate_dir / "pyproject.toml"
        if pyproject.is_file() and _has_devlint_table(pyproject):
            return pyproject
    return None


def _has_devlint_table(pyproject: Path) -> bool:
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if "devlint" not in text:  # cheap: most pyproject.toml files never mention devlint
        return False
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        if _MENTIONS_TOOL_DEVLINT.search(text):
            raise ConfigError(
                f"invalid TOML in {_display(pyproject)}: {_one_line(error)}"
            ) from None
        return False
    tool = data.get("tool")
    return isinstance(tool, dict) and "devlint" in tool


# --------------------------------------------------------------------------- loading


def load_config(path: Path | None) -> FileConfig:
    """Read and validate a configuration file; ``None`` gives the defaults (root = cwd).

    ``pyproject.toml`` is read from its ``[tool.devlint]`` table (absent: defaults);
    any other file name (``devlint.toml``) has the keys at the top level, or, when it
    has a ``[tool.devlint]`` table, there.
    """
    if path is None:
        cwd = Path.cwd()
        return FileConfig(path=None, root=cwd, line_length=ruff_line_length(cwd))
    path = Path(path)
    shown = _display(path)
    if not path.exists():
        raise ConfigError(f"config file not found: {shown}")
    if path.is_dir():
        raise ConfigError(f"config file is a directory: {shown}")
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"cannot read config file {shown}: {error.strerror or error}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"invalid TOML in {shown}: the file is not valid UTF-8") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"invalid TOML in {shown}: {_one_line(error)}") from None

    tool = data.get("tool")
    has_tool_table = isinstance(tool, dict) and "devlint" in tool
    if path.name == "pyproject.toml" or (has_tool_table and set(data) <= {"tool"}):
        where = f"[tool.devlint] of {shown}"
        section: Any = tool.get("devlint", {}) if isinstance(tool, dict) else {}
        if not isinstance(section, dict):
            raise ConfigError(f"[tool.devlint] in {shown} must be a table, got {_kind(section)}")
    else:
        where = shown
        section = data
    absolute = Path(os.path.abspath(path))
    return _validate(section, where, absolute.parent, absolute)


def _validate(section: dict[str, Any], where: str, root: Path, path: Path) -> FileConfig:
    unknown = [key for key in section if key not in KNOWN_KEYS]
    if unknown:
        described = ", ".join(_describe_unknown(key) for key in unknown)
        noun = "key" if len(unknown) == 1 else "keys"
        raise ConfigError(f"unknown {noun} {described} in {where}")

    def get(key: str, check: Callable[[str, Any, str], Any]) -> Any:
        return check(key, section[key], where) if key in section else None

    select = get("select", _codes_list)
    ignore = get("ignore", _codes_list)
    extend_select = get("extend-select", _codes_list)
    per_file_ignores = get("per-file-ignores", _per_file_ignores)
    exclude = get("exclude", _patterns_list)
    extend_exclude = get("extend-exclude", _patterns_list)
    guard_functions = get("guard-functions", _dotted_names)
    accelerator_api = get("accelerator-api", _accelerator_api)
    target = get("target-torch", _target_torch)
    cache_dir = get("cache-dir", _directory)
    line_length = get("line-length", _line_length) or ruff_line_length(root)
    if cache_dir is not None and not cache_dir.is_absolute():
        cache_dir = root / cache_dir
    switches = {key: get(key, _boolean) for key in ("respect-gitignore", "force-exclude")}
    return FileConfig(
        path=path,
        root=root,
        select=select,
        ignore=ignore or (),
        extend_select=extend_select or (),
        per_file_ignores=MappingProxyType(per_file_ignores or {}),
        exclude=exclude,
        extend_exclude=extend_exclude or (),
        guard_functions=guard_functions or (),
        accelerator_api=accelerator_api or "auto",
        target_torch=target,
        cache_dir=cache_dir,
        line_length=line_length,
        fixable=get("fixable", _codes_list),
        unfixable=get("unfixable", _codes_list) or (),
        respect_gitignore=switches["respect-gitignore"] is not False,
        force_exclude=switches["force-exclude"] is True,
        output_format=get("output-format", _output_format),
        docs_url=get("docs-url", _url),
    )


def _describe_unknown(key: str) -> str:
    import difflib  # only for an unknown key

    close = difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.6)
    if not close and key.replace("_", "-") in KNOWN_KEYS:
        close = [key.replace("_", "-")]
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"{_short(key)}{hint}"


def _invalid(key: str, where: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(
        f"invalid value for '{key}' in {where}: expected {expected}, got {_short(value)} ({_kind(value)})"
    )


def _string_list(key: str, value: Any, where: str, expected: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _invalid(key, where, expected, value)
    return tuple(item.strip() for item in value)


def _codes_list(key: str, value: Any, where: str) -> tuple[str, ...]:
    codes = _string_list(key, value, where, "a list of rule codes or prefixes (strings)")
    empty = [code for code in codes if not code]
    if empty:
        raise ConfigError(f"invalid value for '{key}' in {where}: empty rule code")
    return codes


def _patterns_list(key: str, value: Any, where: str) -> tuple[str, ...]:
    return _string_list(key, value, where, "a list of glob patterns (strings)")


def _dotted_names(key: str, value: Any, where: str) -> tuple[str, ...]:
    names = _string_list(key, value, where, "a list of dotted names (strings)")
    for name in names:
        if not _DOTTED_NAME.match(name):
            raise ConfigError(
                f"invalid value for '{key}' in {where}: expected a dotted name such as "
                f"'mypkg.utils.has_cuda', got {_short(name)}"
            )
    return names


def _per_file_ignores(key: str, value: Any, where: str) -> dict[str, tuple[str, ...]]:
    expected = 'a table of glob = ["CODE", ...] entries'
    if not isinstance(value, dict):
        raise _invalid(key, where, expected, value)
    result: dict[str, tuple[str, ...]] = {}
    for glob, codes in value.items():
        if not isinstance(codes, list) or not all(isinstance(code, str) for code in codes):
            raise ConfigError(
                f"invalid value for '{key}' in {where}: expected a list of rule codes for "
                f"{_short(glob)}, got {_short(codes)} ({_kind(codes)})"
            )
        if not glob.strip().lstrip("!").strip():
            raise ConfigError(f"invalid value for '{key}' in {where}: empty glob {_short(glob)}")
        result[glob] = tuple(code.strip() for code in codes)
    return result


def _accelerator_api(key: str, value: Any, where: str) -> str:
    if not isinstance(value, str) or value not in ACCELERATOR_APIS:
        expected = "one of " + ", ".join(f"'{api}'" for api in ACCELERATOR_APIS)
        raise _invalid(key, where, expected, value)
    return value


def _line_length(key: str, value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 320:
        raise _invalid(key, where, "an integer from 1 to 320", value)
    return value


def ruff_line_length(directory: Path) -> int:
    """ruff's ``line-length`` for code in ``directory`` (its nearest ruff configuration:
    ``.ruff.toml``, ``ruff.toml`` or a ``pyproject.toml`` with ``[tool.ruff]``), else 88."""
    for folder in (directory, *directory.parents):
        for name in (".ruff.toml", "ruff.toml", "pyproject.toml"):
            try:
                data = tomllib.loads((folder / name).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue
            section = data if name != "pyproject.toml" else data.get("tool", {})
            if name == "pyproject.toml":
                section = section.get("ruff") if isinstance(section, dict) else None
            if isinstance(section, dict):
                value = section.get("line-length")
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    return value
                return DEFAULT_LINE_LENGTH
    return DEFAULT_LINE_LENGTH


def _boolean(key: str, value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise _invalid(key, where, "true or false", value)
    return value


def _output_format(key: str, value: Any, where: str) -> str:
    from devlint.formats import FORMATS  # the renderers' names; the modules stay unimported

    if not isinstance(value, str) or value not in FORMATS:
        raise _invalid(key, where, "one of " + ", ".join(f"'{f}'" for f in FORMATS), value)
    return value


def _url(key: str, value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value):
        raise _invalid(key, where, "a URL (or a template with {code} / {name})", value)
    return value


def _target_torch(key: str, value: Any, where: str) -> TorchVersion:
    version = parse_target(value) if isinstance(value, str) else None
    if version is None:
        raise _invalid(key, where, "a torch release such as '2.6' (a string)", value)
    return version


def target_torch(config: FileConfig, start: Path | None = None) -> TorchVersion:
    """The oldest torch the project supports: ``target-torch``, else the project's own
    ``torch>=`` dependency (pyproject.toml, setup.cfg, requirements.txt in the root; without
    a configuration file, in the nearest directory at or above ``start`` that has one),
    else ``DEFAULT_TARGET_TORCH``."""
    if config.target_torch is not None:
        return config.target_torch
    root = config.root if config.path is not None or start is None else project_root(start)
    return declared_target(root) or DEFAULT_TARGET_TORCH


def _directory(key: str, value: Any, where: str) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise _invalid(key, where, "a directory path (string)", value)
    return Path(os.path.expanduser(value))


def _kind(value: Any) -> str:
    names = {
        bool: "a boolean",
        int: "an integer",
        float: "a float",
        str: "a string",
        list: "an array",
        dict: "a table",
    }
    for kind, name in names.items():
        if isinstance(value, kind):
            return name
    return type(value).__name__  # dates and times


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())


def _display(path: Path) -> str:
    """``path`` relative to the cwd when it is below it, else as given (absolute stays)."""
    try:
        return str(Path(os.path.abspath(path)).relative_to(Path.cwd()))
    except ValueError:
        return str(path)


# --------------------------------------------------------------------------- rule codes


def _specificity(selector: str) -> int:
    return 0 if selector == "ALL" else len(selector)


def _matches(selector: str, code: str) -> bool:
    return selector == "ALL" or code.startswith(selector)


def _unknown(entries: Iterable[str], known: Sequence[str]) -> list[str]:
    found: list[str] = []
    for entry in entries:
        selector = entry.strip().upper()
        valid = selector == "ALL" or any(code.startswith(selector) for code in known)
        if (not selector or not valid) and entry not in found:
            found.append(entry if entry.strip() else repr(entry))
    return found


def check_codes(entries: Iterable[str], known: Sequence[str], where: str) -> None:
    """Raise a :class:`ConfigError` naming every entry that is neither a known code, a
    prefix of one, nor ``ALL`` (e.g. for the codes in ``per-file-ignores``)."""
    bad = _unknown(entries, [code.upper() for code in known])
    if bad:
        raise ConfigError(f"unknown rule code(s) in {where}: {', '.join(bad)}")


def resolve_codes(
    select: Sequence[str] | None,
    extend_select: Sequence[str],
    ignore: Sequence[str],
    known: Sequence[str],
    default_on: Sequence[str],
    *,
    labels: tuple[str, str, str] = ("select", "extend-select", "ignore"),
) -> frozenset[str]:
    """The enabled rule codes, with ruff's semantics.

    ``select`` (``None``: ``default_on``) plus ``extend_select`` minus ``ignore``. Each
    entry is a code, a prefix (``"DEV"``, ``"DEV00"``) or ``"ALL"``, case-insensitive.
    Entries are applied from the least to the most specific (``ALL`` < ``DEV`` < ``DEV0``
    < ... < a full code; the default set is below them all) and, at equal specificity,
    ``ignore`` after the selections: so ``select=["DEV"], ignore=["DEV001"]`` disables
    DEV001 and ``select=["DEV001"], ignore=["DEV"]`` keeps it.

    Unknown codes or prefixes are a :class:`ConfigError` naming all of them, e.g.
    ``unknown rule code(s) in select: DEV999, FOO``; ``labels`` names the three inputs
    (the caller merges the file's and the command line's values, so the defaults name both).
    """
    known_codes = list(dict.fromkeys(code.upper() for code in known))
    problems = []
    for label, entries in zip(labels, (select or (), extend_select, ignore), strict=True):
        bad = _unknown(entries, known_codes)
        if bad:
            problems.append(f"in {label}: {', '.join(bad)}")
    if problems:
        raise ConfigError("unknown rule code(s) " + "; ".join(problems))

    chosen = [s.strip().upper() for s in select] if select is not None else None
    selections = [(_specificity(s), s) for s in (chosen or ())]
    selections += [(_specificity(s.strip().upper()), s.strip().upper()) for s in extend_select]
    ignores = [(_specificity(s.strip().upper()), s.strip().upper()) for s in ignore]

    enabled = set(code.upper() for code in default_on) if chosen is None else set()
    enabled &= set(known_codes)
    for level in sorted({spec for spec, _ in selections} | {spec for spec, _ in ignores}):
        for spec, selector in selections:
            if spec == level:
                enabled.update(code for code in known_codes if _matches(selector, code))
        for spec, selector in ignores:
            if spec == level:
                enabled.difference_update(code for code in known_codes if _matches(selector, code))
    return frozenset(enabled)


# --------------------------------------------------------------------------- per-file-ignores


@record(frozen=True)
class _Glob:
    text: str
    negated: bool
    spec: pathspec.PathSpec[Any] | None

    def matches(self, relative: str, name: str) -> bool:
        hit = (
            (self.spec is not None and self.spec.match_file(relative))
            or fnmatch.fnmatchcase(relative, self.text)
            or fnmatch.fnmatchcase(name, self.text)
        )
        return hit != self.negated


@functools.lru_cache(maxsize=64)
def _compile_globs(globs: tuple[str, ...]) -> tuple[_Glob, ...]:
    import pathspec  # only where there are per-file-ignores

    compiled = []
    for raw in globs:
        negated = raw.startswith("!")
        text = raw[1:] if negated else raw
        text = text[2:] if text.startswith("./") else text
        try:
            spec: pathspec.PathSpec[Any] | None = pathspec.GitIgnoreSpec.from_lines([text])
        except (ValueError, TypeError):  # a pattern gitignore syntax rejects: fnmatch only
            spec = None
        compiled.append(_Glob(text, negated, spec))
    return tuple(compiled)


def _relative_posix(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` in posix form, or its absolute posix form outside it."""
    absolute = Path(os.path.abspath(path))
    root_abs = Path(os.path.abspath(root))
    for candidate, base in ((absolute, root_abs), (absolute.resolve(), root_abs.resolve())):
        try:
            return candidate.relative_to(base).as_posix()
        except ValueError:
            continue
    return absolute.as_posix()


def codes_for_file(
    path: Path,
    root: Path,
    per_file_ignores: Mapping[str, tuple[str, ...]],
    enabled: frozenset[str],
) -> frozenset[str]:
    """``enabled`` minus the codes that ``per_file_ignores`` turns off for ``path``.

    A glob matches when, against ``path`` relative to ``root`` (posix form), it matches
    as a gitignore pattern (``tests/`` covers everything below ``tests``; a glob without
    a slash matches at any depth) or with ``fnmatch`` (``*`` crosses ``/``), or when it
    matches the file's name with ``fnmatch``. A leading ``!`` negates the glob, as in
    ruff: the codes are ignored in files that do *not* match. Codes are codes, prefixes
    or ``ALL``.
    """
    if not per_file_ignores or not enabled:
        return enabled
    globs = _compile_globs(tuple(per_file_ignores))
    relative = _relative_posix(path, root)
    name = relative.rsplit("/", 1)[-1]
    off: set[str] = set()
    for glob, codes in zip(globs, per_file_ignores.values(), strict=True):
        if glob.matches(relative, name):
            selectors = [code.strip().upper() for code in codes]
            off.update(code for code in enabled if any(_matches(s, code) for s in selectors if s))
    return enabled - off if off else enabled
