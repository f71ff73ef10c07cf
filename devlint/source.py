"""Reading user files: bytes to text without losing the encoding, lines, and back.

A ``Source`` is what the rest of devlint analyses: the Python text of a file (or of a
notebook's code cells), the encoding to write it back with, and, for notebooks, the map
from rows of that text to cells. Every split of text into lines uses ``LINE_BREAK``.
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from dataclasses import field, replace
from pathlib import Path

from devlint.diagnostics import Diagnostic, Location
from devlint.records import record


class UnreadableSource(Exception):
    """The file cannot be read or decoded (reported as DEV900)."""


@record(frozen=True, slots=True)
class SourceText:
    text: str
    encoding: str  # as detected: "utf-8", "utf-8-sig" (BOM), or the coding cookie's


def decode(data: bytes) -> SourceText:
    """Decode Python source as the interpreter would (BOM, PEP 263 coding cookie)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:  # no usable coding cookie and the first lines are not UTF-8
        encoding = "utf-8"
    except LookupError as error:
        raise UnreadableSource(f"cannot decode file: {error}") from None
    try:
        text = data.decode(encoding)
    except (LookupError, UnicodeDecodeError) as error:
        raise UnreadableSource(f"cannot decode file: {_reason(error)}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceText(text, encoding)


def read_source(path: Path) -> SourceText:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UnreadableSource(f"cannot read file: {error.strerror or error}") from None
    return decode(data)


def _reason(error: Exception) -> str:
    if isinstance(error, UnicodeDecodeError):
        byte = error.object[error.start : error.start + 1].hex()
        return f"not valid {error.encoding} (byte 0x{byte} at offset {error.start})"
    return str(error).splitlines()[0]


# Python's line breaks: str.splitlines() also splits on form feeds, \x1c-\x1e, \x85, \u2028.
LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """``text.splitlines(keepends)`` at Python's line breaks only (not at form feeds, ...)."""
    if keepends:
        return [line for line in re.split(r"(?<=\r\n)|(?<=\r)(?!\n)|(?<=\n)", text) if line]
    lines = LINE_BREAK.split(text)
    if not lines[-1]:
        lines.pop()
    return lines


def unified_diff(before: str, after: str, fromfile: str, tofile: str) -> str:
    """The change from ``before`` to ``after`` as ``diff -u`` prints it."""
    import difflib  # only --diff and fixes need it

    lines = difflib.unified_diff(
        split_lines(before, keepends=True),
        split_lines(after, keepends=True),
        fromfile=fromfile,
        tofile=tofile,
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def line_starts(text: str) -> list[int]:
    """The offset of each 1-based row's start (index 0 unused), plus the end of ``text``."""
    starts = [0, 0, *(match.end() for match in LINE_BREAK.finditer(text))]
    if starts[-1] < len(text):
        starts.append(len(text))
    return starts


@record(frozen=True, slots=True)
class CellMap:
    """Where each row of a notebook's joined code comes from."""

    cells: tuple[tuple[int, int], ...]  # (first row of the cell in the text, cell number)
    shifts: dict[int, int] = field(default_factory=dict)  # row -> columns cut off its start

    def locate(self, row: int) -> tuple[int, int]:
        """A row of the text -> (cell number, row within that cell), both 1-based."""
        cell, first = 1, 1
        for start, number in self.cells:
            if start > row:
                break
            cell, first = number, start
        return cell, row - first + 1

    def place(self, diagnostic: Diagnostic) -> Diagnostic:
        """``diagnostic`` (and its related locations) in its cell's own terms."""
        cell, start, end = self._span(diagnostic.start, diagnostic.end)
        related = tuple(
            replace(step, cell=step_cell, start=step_start, end=step_end)
            for step in diagnostic.related
            for step_cell, step_start, step_end in [self._span(step.start, step.end)]
        )
        return replace(
            diagnostic, cell=cell, start=start, end=end, noqa_row=start.row, related=related
        )

    def _span(self, start: Location, end: Location) -> tuple[int, Location, Location]:
        """A span of the text -> its cell number and its span within that cell."""
        cell, row = self.locate(start.row)
        _, end_row = self.locate(end.row)
        start_shift = self.shifts.get(start.row, 0)
        end_shift = self.shifts.get(end.row, 0)
        return (
            cell,
            Location(row, start.column + start_shift),
            Location(end_row, end.column + end_shift),
        )


@record(frozen=True, slots=True)
class Source:
    """The Python code devlint analyses, and how to write a changed version back."""

    text: str
    encoding: str = "utf-8"
    data: bytes | None = None  # the bytes it was read from (None: given as text)
    cells: CellMap | None = None  # a notebook's code cells; None for a Python file

    def place(self, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
        """Diagnostics on ``text`` as the user sees the file (notebook cells)."""
        if self.cells is None:
            return diagnostics
        return [self.cells.place(diagnostic) for diagnostic in diagnostics]


def decode_source(data: bytes) -> Source:
    """A Python file's bytes as a ``Source``; ``UnreadableSource`` when undecodable."""
    decoded = decode(data)
    return Source(decoded.text, decoded.encoding, data)


class ChangedOnDisk(Exception):
    """The file changed between reading and writing it; it was left alone."""


def write_atomically(path: Path, data: bytes, expected: bytes) -> None:
    """Replace ``path`` with ``data`` (same permissions) unless it no longer holds ``expected``."""
    if path.read_bytes() != expected:
        raise ChangedOnDisk(f"{path} changed while devlint was fixing it; not written")
    mode = path.stat().st_mode & 0o7777
    import tempfile  # only --fix writes

    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, mode)
        if path.read_bytes() != expected:
            raise ChangedOnDisk(f"{path} changed while devlint was fixing it; not written")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
