"""Renderers over one list of diagnostics, one module per output format (ruff's names).

``render`` picks the renderer by name and imports only that module. Every renderer
module exposes ``render(diagnostics, out, options)`` and receives the diagnostics
already sorted by file, cell, line, column and code. ``text`` is the name the first
versions of devlint used for ``concise``, and stays an alias of it. The names are in
``devlint.formats`` (re-exported here).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import TextIO

from devlint.diagnostics import Diagnostic, Related
from devlint.formats import DEFAULT_FORMAT, FORMATS, STATISTICS_FORMATS, TEXT_FORMATS
from devlint.records import record

_MODULES = {fmt: f"devlint.report.{fmt.replace('-', '_')}_format" for fmt in FORMATS}
_MODULES["text"] = _MODULES["concise"] = "devlint.report.text_format"
_STATISTICS_JSON = "devlint.report.statistics_format"


@record(frozen=True, slots=True)
class RuleInfo:
    """What a renderer may say about a rule (built by the CLI from the rule registry)."""

    code: str
    name: str
    summary: str  # one line
    fixable: bool
    default: bool
    no_fix: str = ""  # why a diagnostic carries no fix (the full output's help line)


@record(frozen=True, slots=True)
class ReportOptions:
    """Everything a renderer needs besides the diagnostics."""

    rules: Mapping[str, RuleInfo] = field(default_factory=dict)
    color: bool = False
    statistics: bool = False
    show_fixes: bool = False
    quiet: bool = False  # text: diagnostics only, no summary
    unsafe_fixes: bool = False  # text: unsafe fixes count as fixable (``--unsafe-fixes``)
    files_checked: int = 0
    cwd: Path | None = None
    fixed: Mapping[str, Mapping[str, int]] | None = None  # --fix: file -> code -> fixes applied
    sources: Mapping[str, str] = field(default_factory=dict)  # path -> text not on disk (stdin)
    docs_url: str | None = None  # template of the rule pages' address (see devlint.docs)


def render(
    fmt: str,
    diagnostics: Sequence[Diagnostic],
    out: TextIO,
    options: ReportOptions | None = None,
) -> None:
    """Write ``diagnostics`` to ``out`` in format ``fmt`` (``options``: the defaults when
    None). Only the renderer module of ``fmt`` is imported.
    """
    if fmt not in _MODULES:
        raise ValueError(f"unknown output format {fmt!r} (expected one of: {', '.join(FORMATS)})")
    options = options or ReportOptions()
    ordered = sort_diagnostics(with_urls(diagnostics, options), options.cwd)
    module = _MODULES[fmt]
    if options.statistics:  # a table for people, or ruff's statistics JSON
        if fmt not in STATISTICS_FORMATS:
            formats = ", ".join(STATISTICS_FORMATS)
            raise ValueError(f"--statistics cannot be written as {fmt} (use one of: {formats})")
        module = _STATISTICS_JSON if fmt == "json" else _MODULES["concise"]
    importlib.import_module(module).render(ordered, out, options)


def with_urls(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> list[Diagnostic]:
    """Each diagnostic with the address of its rule's page (``docs_url``) when it has none."""
    if not options.docs_url:
        return list(diagnostics)
    from devlint.docs import rule_url  # only when addresses are wanted

    template = options.docs_url
    return [d if d.url else replace(d, url=rule_url(template, d.code, d.name)) for d in diagnostics]


def sort_diagnostics(diagnostics: Sequence[Diagnostic], cwd: Path | None) -> list[Diagnostic]:
    """By file as shown (so one file named two ways sorts as one), cell, line, column, code."""

    def key(d: Diagnostic) -> tuple[str, int, int, int, str, str]:
        shown = display_path(d.path, cwd)
        return (shown, d.cell or 0, d.start.row, d.start.column, d.code, d.path)

    return sorted(diagnostics, key=key)


def absolute_path(path: str, cwd: Path | None = None) -> str:
    """``path`` as an absolute, normalised path; a relative one is taken from ``cwd``.

    ``-`` (source read from stdin without ``--stdin-filename``) stays ``-``.
    """
    if path == "-":
        return path
    base = os.fspath(cwd) if cwd is not None else os.getcwd()
    return os.path.normpath(os.path.join(os.path.abspath(base), path))


def relative_path(path: str, cwd: Path | None) -> str | None:
    """``path`` relative to ``cwd`` (with ``/`` separators) when inside it, else None."""
    if cwd is None or path == "-":
        return None
    target = Path(absolute_path(path, cwd))
    base = Path(os.path.abspath(cwd))
    if target.is_relative_to(base):
        return target.relative_to(base).as_posix()
    try:
        target, base = target.resolve(), base.resolve()
    except (OSError, RuntimeError):  # a symlink loop (reported as DEV900) resolves nowhere
        return None
    return target.relative_to(base).as_posix() if target.is_relative_to(base) else None


def display_path(path: str, cwd: Path | None) -> str:
    """``path`` relative to ``cwd`` when it lies inside it, else as given."""
    relative = relative_path(path, cwd)
    return path if relative is None else relative


def position(diagnostic: Diagnostic | Related) -> str:
    """``row:column``, or ``cell N:row:column`` in a notebook."""
    where = f"{diagnostic.start.row}:{diagnostic.start.column}"
    return where if diagnostic.cell is None else f"cell {diagnostic.cell}:{where}"


__all__ = [
    "DEFAULT_FORMAT",
    "FORMATS",
    "STATISTICS_FORMATS",
    "TEXT_FORMATS",
    "ReportOptions",
    "RuleInfo",
    "absolute_path",
    "display_path",
    "position",
    "relative_path",
    "render",
    "sort_diagnostics",
    "with_urls",
]
