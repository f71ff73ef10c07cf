"""Notebooks: their code cells as one Python module, and the way back into the JSON.

The code cells are joined with a marker comment before each one, so that a fixed text can
be cut back into cells. IPython syntax becomes Python only where a statement starts (a
``%`` on a continuation line inside brackets is the modulo operator): magics and shell
escapes become ``pass`` lines tagged with their number, ``%time stmt`` becomes ``stmt``
(analysed, its columns mapped back), ``%%time`` cells keep their Python body, and cells in
another language (``%%bash``) are left out. A notebook is written back with the JSON layout
it had (indentation, key order, escaping, final newline), so only edited cells change; a
notebook whose layout cannot be reproduced is left alone.
"""

from __future__ import annotations

import difflib
import io
import json
import re
import tokenize
from dataclasses import dataclass, field
from typing import Any

from devlint.source import CellMap, Source, UnreadableSource, split_lines, unified_diff

_CELL = "# devlint-cell: {}"
_CELL_LINE = re.compile(r"^# devlint-cell: (\d+)\r?\n", re.MULTILINE)
_TAG = "  # devlint-magic: {}"
_TAGGED = re.compile(r"^([ \t]*)(.*?)  # devlint-magic: (\d+)$", re.MULTILINE)
# Magics whose argument (line magics) or body (cell magics) is Python that runs.
_TIMING_PREFIX = re.compile(r"%(?:time|timeit(?:\s+-(?:[nrp]\s*\d+|[oq]))*)\s+(?=\S)")
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
# `files = !ls`, `out = %sx ls`: an assignment whose value is IPython syntax.
_MAGIC_ASSIGNMENT = re.compile(r"[\w.]+(?:\s*,\s*[\w.]+)*\s*=\s*[!%]")
_LAYOUTS = [
    (indent, ensure_ascii, end)
    for indent in (1, 2, 4, None)
    for ensure_ascii in (False, True)
    for end in ("\n", "")
]


class NotWritable(Exception):
    """The fixed code cannot be put back into the notebook; it is left alone."""


@dataclass(slots=True)
class _Magic:
    """IPython syntax replaced in the text: a whole line, or a prefix before Python."""

    original: str  # the whole line, or the prefix (``%time ``)
    prefix: bool = False


@dataclass(slots=True)
class _Joined:
    """The code cells as one module, and what was replaced to make it Python."""

    lines: list[str] = field(default_factory=list)
    magics: list[_Magic] = field(default_factory=list)
    cells: list[tuple[int, int]] = field(default_factory=list)
    shifts: dict[int, int] = field(default_factory=dict)
    indents: dict[int, str] = field(default_factory=dict)  # cell index -> indent removed

    @property
    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


def read_notebook(data: bytes) -> Source | None:
    """The Python code of a notebook as a ``Source``; None for another kernel's language."""
    notebook = _load(data)
    if notebook is None:
        return None
    joined = _join(notebook["cells"])
    return Source(joined.text, "utf-8", data, CellMap(tuple(joined.cells), joined.shifts))


def _load(data: bytes) -> dict[str, Any] | None:
    try:
        notebook = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise UnreadableSource(f"cannot read notebook: invalid JSON ({error})") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise UnreadableSource("cannot read notebook: no list of cells")
    metadata = notebook.get("metadata")
    kernel = metadata.get("kernelspec") if isinstance(metadata, dict) else None
    language = kernel.get("language", "python") if isinstance(kernel, dict) else "python"
    if isinstance(language, str) and language.lower() != "python":
        return None
    return notebook


def _cell_text(cell: Any) -> str | None:
    """The source of a code cell; None for any other cell."""
    if not isinstance(cell, dict) or cell.get("cell_type") != "code":
        return None
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _join(cells: list[Any]) -> _Joined:
    joined = _Joined()
    for index, cell in enumerate(cells):
        text = _cell_text(cell)
        if text is None:
            continue
        lines = split_lines(text)
        magic = lines[0].strip() if lines else ""
        if magic.startswith("%%") and _cell_magic_name(magic) not in _PYTHON_CELL_MAGICS:
            continue  # another language in a Python notebook: neither checked nor edited
        joined.lines.append(_CELL.format(index))
        first_row = len(joined.lines) + 1
        joined.cells.append((first_row, index + 1))
        indent = _leading_indent(lines)
        if indent:
            joined.indents[index] = indent
            for row, line in enumerate(lines, start=first_row):  # one row per line
                if line.startswith(indent):
                    joined.shifts[row] = len(indent)
            lines = [_dedent(line, indent) for line in lines]
        _add_cell(joined, lines)
    return joined


def _leading_indent(lines: list[str]) -> str:
    """The indent of a cell's first non-blank line, which IPython removes from every
    line that starts with it before it runs the cell (after dropping blank lines)."""
    first = next((line for line in lines if line.strip()), "")
    return first[: len(first) - len(first.lstrip(" \t"))]


def _dedent(line: str, indent: str) -> str:
    return line[len(indent) :] if line.startswith(indent) else line


def _reindent(old: str, fixed: str, indent: str) -> str:
    """A dedented cell's fixed source with the cell's indent back: the lines a fix left
    as they were keep their own text, the lines it wrote get the indent (which IPython
    removes again)."""
    old_lines = split_lines(old, keepends=True)
    new_lines = split_lines(fixed, keepends=True)
    dedented = [_dedent(line, indent) for line in old_lines]
    result: list[str] = []
    matcher = difflib.SequenceMatcher(a=dedented, b=new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            result += old_lines[i1:i2]
        else:
            result += [indent + line if line.strip() else line for line in new_lines[j1:j2]]
    return "".join(result)


def _cell_magic_name(line: str) -> str:
    return line[2:].split(maxsplit=1)[0] if len(line) > 2 else ""


def _add_cell(joined: _Joined, lines: list[str]) -> None:
    """Append one cell's lines, IPython syntax replaced where a statement starts."""
    pending: list[str] = []  # the lines since the last point known to start a statement
    continued = False  # the line before was IPython syntax ending in a backslash
    indent = ""
    for number, line in enumerate(lines):
        stripped = line.lstrip()
        if continued:  # ``!tts --text ... \`` goes on: the same command, at its indent
            joined.magics.append(_Magic(line))
            joined.lines.append(f"{indent}pass{_TAG.format(len(joined.magics) - 1)}")
            continued = stripped.rstrip().endswith("\\")
            continue
        indent = line[: len(line) - len(stripped)]
        if not _may_be_ipython(stripped, cell_magic=number == 0) or _inside_statement(pending):
            joined.lines.append(line)
            pending.append(line)
            continue
        continued = stripped.rstrip().endswith("\\")
        if not any(earlier.strip() for earlier in lines[:number]):
            indent = ""  # a cell's first line starts a statement (IPython drops its indent)
        pending = []
        joined.magics.append(_Magic(line))
        tag = _TAG.format(len(joined.magics) - 1)
        timed = _TIMING_PREFIX.match(stripped)
        body = stripped[timed.end() :] if timed else ""
        if timed and not body.rstrip().endswith("\\"):
            joined.magics[-1] = _Magic(stripped[: timed.end()], prefix=True)
            row = len(joined.lines) + 1
            joined.shifts[row] = joined.shifts.get(row, 0) + timed.end()
            joined.lines.append(indent + body + tag)
            pending.append(indent + body)
        else:
            joined.lines.append(f"{indent}pass{tag}")


def _may_be_ipython(stripped: str, cell_magic: bool) -> bool:
    if stripped.startswith("%%"):
        return cell_magic
    if stripped.startswith(("%", "!")) or _MAGIC_ASSIGNMENT.match(stripped):
        return True
    return stripped.endswith("?") and not stripped.startswith("#")


def _inside_statement(lines: list[str]) -> bool:
    """Whether ``lines`` leave a statement open: a bracket, a string or a backslash."""
    if not lines:
        return False
    try:
        for _ in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
            pass
    except tokenize.TokenError as error:
        reason = str(error.args[0]) if error.args else ""
        return "EOF" in reason or "unterminated triple-quoted" in reason
    except SyntaxError:  # e.g. inconsistent dedent: the parse reports it
        return False
    return False


# --------------------------------------------------------------------------- writing back


def rewrite(data: bytes, fixed: str) -> bytes:
    """The notebook ``data`` with its code cells replaced by those in ``fixed``.

    ``fixed`` is the text of ``read_notebook(data)`` after fixes; ``NotWritable`` when
    its cells or magics cannot be found again, or the JSON layout cannot be reproduced.
    """
    notebook = _load(data)
    if notebook is None:
        raise NotWritable("not a Python notebook")
    layout = _layout(notebook, data)
    if layout is None:
        raise NotWritable("cannot write the notebook back in its JSON layout; not fixed")
    joined = _join(notebook["cells"])
    cells = notebook["cells"]
    for index, source in _split(fixed, joined.magics).items():
        cell = cells[index]
        old = _cell_text(cell) or ""
        if not old.endswith("\n") and source.endswith("\n"):
            source = source[:-1]
        indent = joined.indents.get(index)
        if indent is not None:
            source = _reindent(old, source, indent)
        if source == old:
            continue
        lines = split_lines(source, keepends=True)
        cell["source"] = lines if isinstance(cell.get("source"), list) else source
    return _dump(notebook, layout).encode("utf-8")


def _split(text: str, magics: list[_Magic]) -> dict[int, str]:
    """Cell index -> its fixed source, IPython syntax restored."""
    pieces = _CELL_LINE.split(text)
    restored: set[int] = set()

    def restore(match: re.Match[str]) -> str:
        number = int(match[3])
        if number >= len(magics) or number in restored:
            raise NotWritable(f"a fix moved IPython syntax it cannot restore: {match[0]!r}")
        restored.add(number)
        magic = magics[number]
        return match[1] + magic.original + match[2] if magic.prefix else magic.original

    cells = {int(number): _TAGGED.sub(restore, body) for number, body in _cells(pieces)}
    if len(restored) != len(magics):
        raise NotWritable("a fix removed IPython syntax (a magic or shell line)")
    return cells


def _cells(pieces: list[str]) -> list[tuple[str, str]]:
    if pieces[0].strip():  # text before the first marker: a fix moved it
        raise NotWritable("a fix moved code out of the notebook's cells")
    return list(zip(pieces[1::2], pieces[2::2], strict=True))


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


def cell_diff(before: bytes, after: bytes, display: str) -> str:
    """A unified diff of each code cell whose source changed, as ruff prints for notebooks."""
    old_cells, new_cells = json.loads(before)["cells"], json.loads(after)["cells"]
    parts: list[str] = []
    for number, (old, new) in enumerate(zip(old_cells, new_cells, strict=True), start=1):
        old_text, new_text = _cell_text(old), _cell_text(new)
        if old_text is None or new_text is None or old_text == new_text:
            continue
        name = f"{display}:cell {number}"
        # Cells rarely end with a line break: compare them as lines, as ruff and black do.
        parts.append(unified_diff(_ended(old_text), _ended(new_text), name, name))
    return "".join(parts)


def _ended(text: str) -> str:
    return text if not text or text.endswith(("\n", "\r")) else text + "\n"
