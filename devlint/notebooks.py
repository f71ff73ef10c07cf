"""Fixing notebooks: the code cells are fixed as one module and written back in place.

The cells are joined with a marker comment before each one, so that the fixed text can be
cut back into cells; magics and shell escapes become ``pass`` lines tagged with their
number and are restored afterwards. The notebook is written back with the JSON layout it
had (indentation, key order, escaping, final newline), so only edited cells change; a
notebook whose layout cannot be reproduced is left alone.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from devlint.engine import CheckOptions, check_path
from devlint.fixing import FileFix, FixMode, fix_text, unified_diff
from devlint.source import ChangedOnDisk, code_lines, write_atomically

_CELL = "# devlint-cell: {}"
_CELL_LINE = re.compile(r"^# devlint-cell: (\d+)\r?\n", re.MULTILINE)
_MAGIC_LINE = re.compile(r"^([ \t]*)pass  # devlint-magic: (\d+)$", re.MULTILINE)
_LAYOUTS = [
    (indent, ensure_ascii, end)
    for indent in (1, 2, 4, None)
    for ensure_ascii in (False, True)
    for end in ("\n", "")
]


def fix_notebook(path: Path, display: str, options: CheckOptions, mode: FixMode) -> FileFix:
    """Fix the code cells of a notebook; outputs, metadata and other cells stay as they are."""
    try:
        data = path.read_bytes()
        notebook = json.loads(data)
        cells = notebook["cells"]
        language = notebook.get("metadata", {}).get("kernelspec", {}).get("language", "python")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return FileFix(check_path(path, display, options))  # reported as DEV900 there
    if str(language).lower() != "python" or not isinstance(cells, list):
        return FileFix(check_path(path, display, options))
    magics: list[str] = []
    unterminated: set[int] = set()  # cells whose source has no final newline
    text = _joined(cells, magics, unterminated)
    result = fix_text(text, display, options, mode.unsafe)
    if result.text == text:
        return FileFix(check_path(path, display, options))
    layout = _layout(notebook, data)
    if layout is None:
        problem = f"{display}: cannot write the notebook back in its JSON layout; not fixed"
        return FileFix(check_path(path, display, options), error=problem)
    for number, source in _split(result.text, magics).items():
        cell = cells[number]
        if number in unterminated and source.endswith("\n"):
            source = source[:-1]
        lines = source.splitlines(keepends=True)
        cell["source"] = lines if isinstance(cell.get("source"), list) else source
    new_data = _dump(notebook, layout).encode("utf-8")
    outcome = FileFix([], result.applied)
    outcome.diff = unified_diff(data.decode("utf-8"), new_data.decode("utf-8"), display)
    if mode.write:
        try:
            write_atomically(path, new_data, data)
        except (OSError, ChangedOnDisk) as error:
            return FileFix(check_path(path, display, options), error=str(error))
    outcome.diagnostics = check_path(path, display, options) if mode.write else result.diagnostics
    return outcome


def _joined(cells: list[Any], magics: list[str], unterminated: set[int]) -> str:
    """The code cells as one module, each after its marker line (cell magics left out)."""
    parts = []
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        if text.lstrip().startswith("%%"):
            continue  # another language in a Python notebook: never edited
        lines = []
        for line in code_lines(text):
            stripped = line.lstrip()
            if stripped.startswith(("%", "!")) or stripped.endswith("?"):
                magics.append(line)
                indent = line[: len(line) - len(stripped)]
                line = f"{indent}pass  # devlint-magic: {len(magics) - 1}"
            lines.append(line)
        if not text.endswith("\n"):
            unterminated.add(index)
        parts.append(_CELL.format(index) + "\n" + "\n".join(lines) + "\n")
    return "".join(parts)


def _split(text: str, magics: list[str]) -> dict[int, str]:
    """Cell index -> its fixed source, magics restored."""
    pieces = _CELL_LINE.split(text)
    cells = {}
    for number, body in zip(pieces[1::2], pieces[2::2], strict=True):
        body = _MAGIC_LINE.sub(lambda m: magics[int(m[2])], body)
        cells[int(number)] = body
    return cells


def _layout(notebook: Any, data: bytes) -> tuple[int | None, bool, str] | None:
    """The ``json.dumps`` settings that reproduce ``data`` exactly, if any do."""
    text = data.decode("utf-8", errors="replace")
    for layout in _LAYOUTS:
        if _dump(notebook, layout) == text:
            return layout
    return None


def _dump(notebook: Any, layout: tuple[int | None, bool, str]) -> str:
    indent, ensure_ascii, end = layout
    return json.dumps(notebook, indent=indent, ensure_ascii=ensure_ascii) + end
