"""Reading user files: bytes to text without losing the encoding, and back."""

from __future__ import annotations

import io
import json
import os
import re
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path


class UnreadableSource(Exception):
    """The file cannot be read or decoded (reported as DEV900)."""


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class NotebookText:
    """The code cells of a notebook joined into one module, and where each cell starts."""

    text: str
    cells: tuple[tuple[int, int], ...]  # (first row of the cell in ``text``, cell number)

    def locate(self, row: int) -> tuple[int, int]:
        """A row of ``text`` -> (cell number, row within that cell), both 1-based."""
        cell, first = 1, 1
        for start, number in self.cells:
            if start > row:
                break
            cell, first = number, start
        return cell, row - first + 1


def code_lines(text: str) -> list[str]:
    """``text.splitlines()`` at Python's line breaks only (not at form feeds, \\u2028, ...)."""
    lines = re.split(r"\r\n|\r|\n", text)
    if len(lines) > 1 and not lines[-1]:
        lines.pop()
    return lines


def read_notebook(path: Path) -> NotebookText | None:
    """The Python code of a notebook (magics blanked out); None for other kernels."""
    try:
        data = json.loads(path.read_bytes())
    except OSError as error:
        raise UnreadableSource(f"cannot read file: {error.strerror or error}") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise UnreadableSource(f"cannot read notebook: invalid JSON ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise UnreadableSource("cannot read notebook: no list of cells")
    language = (data.get("metadata") or {}).get("kernelspec", {}).get("language", "python")
    if isinstance(language, str) and language.lower() != "python":
        return None
    lines: list[str] = []
    cells: list[tuple[int, int]] = []
    for number, cell in enumerate(data["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        cells.append((len(lines) + 1, number))
        cell_lines = code_lines(text)
        is_cell_magic = cell_lines[0].lstrip().startswith("%%")
        for line in cell_lines:
            stripped = line.lstrip()
            if is_cell_magic:
                line = ""
            elif stripped.startswith(("%", "!")) or stripped.endswith("?"):
                line = line[: len(line) - len(stripped)] + "pass"
            lines.append(line)
    return NotebookText("\n".join(lines) + "\n", tuple(cells))


class ChangedOnDisk(Exception):
    """The file changed between reading and writing it; it was left alone."""


def write_atomically(path: Path, data: bytes, expected: bytes) -> None:
    """Replace ``path`` with ``data`` (same permissions) unless it no longer holds ``expected``."""
    if path.read_bytes() != expected:
        raise ChangedOnDisk(f"{path} changed while devlint was fixing it; not written")
    mode = path.stat().st_mode & 0o7777
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
