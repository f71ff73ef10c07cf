"""The layout of fixed code: every line a fix did not write keeps its indentation.

A fix rewrites spans of a file. Lines it only carries along (the continuation lines of a
call it rewrote, the statements it moved out of an ``if``) must keep their place relative
to the statement they belong to, and the lines of a multi-line string keep their exact
text. ``layout_problems`` compares a file before and after fixing and names the lines that
broke this; the fix tests and ``scripts/corpus_sweep.py`` require none.
"""

from __future__ import annotations

import difflib
import io
import tokenize
from dataclasses import dataclass

from devlint.source import LINE_BREAK


@dataclass(frozen=True, slots=True)
class _Row:
    """One physical line: its text and where it sits in its logical line."""

    text: str
    start: int  # index of the first physical line of its logical line
    in_string: bool  # inside a multi-line string: its whitespace is the string's

    @property
    def indent(self) -> int:
        return len(self.text) - len(self.text.lstrip(" \t"))


def _rows(text: str) -> list[_Row] | None:
    """The physical lines of ``text`` (None if it does not tokenize)."""
    lines = LINE_BREAK.split(text)
    starts = list(range(len(lines)))
    strings: set[int] = set()
    first: int | None = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            row, end = token.start[0] - 1, token.end[0] - 1
            strings.update(range(row + 1, end + 1))
            if token.type in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
                continue
            if first is None:
                first = row
            for inside in range(first, min(end + 1, len(lines))):
                starts[inside] = first
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                first = None
    except (tokenize.TokenError, SyntaxError):
        return None
    return [_Row(line, starts[i], i in strings) for i, line in enumerate(lines)]


def layout_problems(before: str, after: str) -> list[str]:
    """The lines of ``after`` whose indentation a fix changed although it did not write them.

    Lines are matched on their text (a line a fix inserted, ``)``, is not taken for an
    unchanged one indented elsewhere), then what is left on their text without indentation.
    A matched line may change its indentation only by as much as the first line of its
    statement did (a statement moved to another block), or, in a statement whose first
    line a fix rewrote, stay deeper than that line (the fix wrapped the statement anew);
    a line inside a multi-line string not at all; in a statement a fix wrote lines into,
    a continuation line may move deeper (it was wrapped with them). A line a fix wrote
    (no match) inside brackets is indented at least as deep as its statement.
    """
    old, new = _rows(before), _rows(after)
    if new is None:
        return [] if old is None else ["the fixed code does not tokenize"]
    if old is None:
        return []
    problems = []
    pairs = _matching_lines(old, new)
    matched = {j for _, j in pairs}
    # Statements a fix wrote lines into (an argument wrapped in a parenthesised choice):
    # their other continuation lines may move deeper with what was written around them.
    written = {row.start for j, row in enumerate(new) if j not in matched and row.text.strip()}
    for i, j in pairs:
        was, now = old[i], new[j]
        shift = now.indent - was.indent
        if not shift or not now.text.strip():
            continue
        if was.in_string or now.in_string:
            problems.append(f"line {j + 1}: a multi-line string's line was re-indented")
        elif shift != new[now.start].indent - old[was.start].indent and not (
            _rewrapped(old[was.start], new[now.start], now)
            or (now.start in written and now.start != j and shift > 0)
        ):
            problems.append(f"line {j + 1}: indentation changed from {was.indent} to {now.indent}")
    for j, row in enumerate(new):
        if j in matched or row.start == j or row.in_string or not row.text.strip():
            continue
        if row.indent < new[row.start].indent:
            problems.append(f"line {j + 1}: written left of its statement (line {row.start + 1})")
    return problems


def _matching_lines(old: list[_Row], new: list[_Row]) -> list[tuple[int, int]]:
    """Pairs of lines (old, new) taken for the same line: equal text first, then, between
    those, equal text without indentation."""
    pairs: list[tuple[int, int]] = []
    exact = difflib.SequenceMatcher(None, [r.text for r in old], [r.text for r in new], False)
    for tag, i1, i2, j1, j2 in exact.get_opcodes():
        if tag == "equal":
            pairs += zip(range(i1, i2), range(j1, j2), strict=True)
            continue
        stripped = difflib.SequenceMatcher(
            None, [r.text.strip() for r in old[i1:i2]], [r.text.strip() for r in new[j1:j2]], False
        )
        for kind, a1, a2, b1, b2 in stripped.get_opcodes():
            if kind == "equal":
                pairs += zip(range(i1 + a1, i1 + a2), range(j1 + b1, j1 + b2), strict=True)
    return pairs


def _rewrapped(old_start: _Row, new_start: _Row, row: _Row) -> bool:
    """A continuation line of a statement whose first line a fix rewrote, indented deeper
    than that line: the fix laid the statement out anew."""
    return old_start.text.strip() != new_start.text.strip() and row.indent > new_start.indent
