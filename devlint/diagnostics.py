"""The data every part of devlint passes around: locations, edits, fixes, diagnostics."""

from __future__ import annotations

from collections import Counter
from dataclasses import field
from typing import Literal

from devlint.records import record

Applicability = Literal["safe", "unsafe"]


@record(frozen=True, slots=True, order=True)
class Location:
    """A 1-based row and 1-based column, as ruff reports them."""

    row: int
    column: int


@record(frozen=True, slots=True)
class Edit:
    """Replace the text between ``start`` and ``end`` with ``content``."""

    content: str
    start: Location
    end: Location


@record(frozen=True, slots=True)
class Fix:
    """A set of edits that together repair one diagnostic."""

    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]


@record(frozen=True, slots=True)
class Related:
    """One step of the chain of facts behind a diagnostic: a location in the same file
    and what happened there ("moved to cuda here"), in the order the facts happened."""

    message: str
    path: str
    start: Location
    end: Location
    cell: int | None = None


@record(frozen=True, slots=True)
class Diagnostic:
    """One finding of one rule in one file (or notebook cell)."""

    code: str
    name: str
    message: str
    path: str
    start: Location
    end: Location
    fix: Fix | None = None
    noqa_row: int | None = None
    cell: int | None = None
    url: str | None = field(default=None, compare=False)
    related: tuple[Related, ...] = field(default=(), compare=False)  # its chain, in order

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    def sort_key(self) -> tuple[str, int, int, int, str]:
        return (self.path, self.cell or 0, self.start.row, self.start.column, self.code)


@record(frozen=True, slots=True)
class FixMode:
    """What ``--fix`` / ``--diff`` asked for."""

    unsafe: bool = False  # --unsafe-fixes
    write: bool = True  # False for --diff: compute the diff, change nothing


@record(slots=True)
class FileResult:
    """The outcome of linting one file: what is left, what was fixed, the diff, problems."""

    diagnostics: list[Diagnostic]
    applied: Counter[str] = field(default_factory=Counter)  # fixes applied, per rule
    diff: str = ""
    error: str | None = None  # the fixed file could not be written
    fixed: bytes | None = None  # the fixed content (None: nothing was fixed)
    cached: bool = False  # read from the result cache, not checked in this run
