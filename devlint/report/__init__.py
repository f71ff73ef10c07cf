"""Renderers over one list of diagnostics: text, json, sarif, github, junit."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from devlint.diagnostics import Diagnostic

FORMATS = ("text", "json", "sarif", "github", "junit")


@dataclass(frozen=True, slots=True)
class RuleInfo:
    """What a renderer may say about a rule."""

    code: str
    name: str
    summary: str
    fixable: bool
    default: bool


@dataclass(frozen=True, slots=True)
class ReportOptions:
    rules: Mapping[str, RuleInfo]
    color: bool = False
    statistics: bool = False
    quiet: bool = False
    files_checked: int = 0
    cwd: Path | None = None


def render(
    fmt: str, diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions
) -> None:
    """Write ``diagnostics`` to ``out`` in format ``fmt`` (renderers are imported lazily)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format: {fmt}")
    module = importlib.import_module(f"devlint.report.{fmt}_format")
    ordered = sorted(diagnostics, key=Diagnostic.sort_key)
    module.render(ordered, out, options)


def display_path(path: str, cwd: Path | None) -> str:
    """``path`` relative to ``cwd`` when it lies inside it."""
    if cwd is None or path == "-":
        return path
    try:
        return Path(path).resolve().relative_to(cwd.resolve()).as_posix()
    except ValueError:
        return path


def absolute_path(path: str) -> str:
    return path if path == "-" else str(Path(path).resolve())
