"""``# noqa`` directives: finding them, suppressing with them, unused ones, ``--add-noqa``.

A line directive is ``# noqa`` (blanket) or ``# noqa: DEV001, DEV005`` in a comment on the
reported line (flake8's syntax); the file directive is a ``# devlint: noqa[: codes]`` line.
Directives are read from comment tokens, so ``"# noqa"`` inside a string suppresses nothing.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from devlint.diagnostics import Diagnostic, Edit, Fix, Location
from devlint.rule import all_rules
from devlint.source import ChangedOnDisk, UnreadableSource, decode, write_atomically

UNUSED_NOQA = "DEV015"
# Engine diagnostics are about the whole file (or stop the analysis): a line noqa cannot
# be placed for them by --add-noqa.
ENGINE_CODES = frozenset({"DEV900", "DEV901", "DEV902"})

_NOQA = re.compile(
    r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE
)
_FILE_NOQA = re.compile(
    r"^\s*#\s*devlint:\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?\s*$",
    re.IGNORECASE | re.MULTILINE,
)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
# Python's line breaks; str.splitlines() also splits on form feeds and other characters.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


@dataclass(frozen=True, slots=True)
class Code:
    """One code of a directive and its 0-based column span on the line."""

    code: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Directive:
    """A ``# noqa`` directive on one line; columns are 0-based character offsets."""

    row: int
    start: int  # the directive's ``#``
    end: int  # just past its last code (or ``noqa``)
    comment_start: int  # the comment token it is part of
    codes: tuple[Code, ...] | None  # None: a blanket directive, no codes
    in_comment: bool = True  # False: found by a plain text search (tokenizing failed)


@dataclass(frozen=True, slots=True)
class FileDirective:
    """``# devlint: noqa`` lines: everything, or the union of their codes."""

    everything: bool
    codes: frozenset[str]


def split_lines(text: str) -> list[str]:
    """The physical lines of ``text`` as Python counts them, each with its line ending."""
    return _LINE.findall(text)


def file_directive(text: str) -> FileDirective:
    codes: set[str] = set()
    for match in _FILE_NOQA.finditer(text):
        if match.group("codes") is None:
            return FileDirective(True, frozenset())
        codes |= {code.upper() for code in _CODE.findall(match.group("codes"))}
    return FileDirective(False, frozenset(codes))


def line_directives(text: str) -> dict[int, Directive]:
    """The ``# noqa`` directive of each line that has one, by 1-based row."""
    comments = _comments(text)
    if comments is None:  # not tokenizable: search every line, strings included
        lines = split_lines(text)
        comments = [(row, 0, line) for row, line in enumerate(lines, start=1) if "#" in line]
        return {
            directive.row: directive
            for row, column, comment in comments
            if (directive := _parse(row, column, comment, in_comment=False)) is not None
        }
    return {
        directive.row: directive
        for row, column, comment in comments
        if (directive := _parse(row, column, comment)) is not None
    }


def _comments(text: str) -> list[tuple[int, int, str]] | None:
    """(row, column, text) of every comment token; None when ``text`` does not tokenize."""
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline="").readline):
            if token.type == tokenize.COMMENT and "noqa" in token.string.lower():
                found.append((token.start[0], token.start[1], token.string))
    except (tokenize.TokenError, SyntaxError):
        return None
    return found


def _parse(row: int, column: int, comment: str, in_comment: bool = True) -> Directive | None:
    match = _NOQA.search(comment)
    if match is None:
        return None
    codes = None
    if match.group("codes") is not None:
        offset = column + match.start("codes")
        codes = tuple(
            Code(code.group().upper(), offset + code.start(), offset + code.end())
            for code in _CODE.finditer(match.group("codes"))
        )
    return Directive(row, column + match.start(), column + match.end(), column, codes, in_comment)


# --- suppression and unused directives ---------------------------------------------------


def suppress(
    diagnostics: list[Diagnostic],
    text: str,
    display: str,
    selected: frozenset[str],
    judge_unused: bool = True,
) -> list[Diagnostic]:
    """Drop the diagnostics that ``text``'s directives silence.

    With ``judge_unused`` (the rules ran) and DEV015 selected, also report each selected
    code of a line directive that silenced nothing (as file ``display``); blanket
    directives are never reported.
    """
    report_unused = judge_unused and UNUSED_NOQA in selected
    if (not diagnostics and not report_unused) or "noqa" not in text.lower():
        return diagnostics
    whole_file = file_directive(text)
    if whole_file.everything:
        return []
    directives = line_directives(text)
    used: dict[int, set[str]] = defaultdict(set)
    kept = []
    for diagnostic in diagnostics:
        if diagnostic.code in whole_file.codes:
            continue
        row = diagnostic.noqa_row or diagnostic.start.row
        directive = directives.get(row)
        if directive is not None and (
            directive.codes is None or diagnostic.code in {c.code for c in directive.codes}
        ):
            used[row].add(diagnostic.code)
            continue
        kept.append(diagnostic)
    if report_unused and UNUSED_NOQA not in whole_file.codes:
        lines = split_lines(text)
        kept.extend(
            unused
            for directive in directives.values()
            if (unused := _unused(directive, used[directive.row], selected, lines, display))
            is not None
        )
        kept.sort(key=Diagnostic.sort_key)
    return kept


def _unused(
    directive: Directive,
    used: set[str],
    selected: frozenset[str],
    lines: Sequence[str],
    display: str,
) -> Diagnostic | None:
    """The DEV015 diagnostic for ``directive``, or None when it is used or not judged."""
    # A blanket directive (no codes) is never judged: flake8, ruff and other tools read it
    # too, and devlint cannot know what it silences for them.
    if not directive.in_comment or directive.codes is None:
        return None
    codes = [code.code for code in directive.codes]
    if UNUSED_NOQA in codes:  # the user silenced this very report
        return None
    # Only codes devlint knows and ran can be judged: others may be for other tools
    # or for another selection of rules.
    known = all_rules()
    unused = [c for c in codes if c in known and c in selected and c not in used]
    if not unused:
        return None
    listed = ", ".join(f"`{code}`" for code in dict.fromkeys(unused))
    message = f"Unused `noqa` directive (unused: {listed})"
    kept = [c for c in directive.codes if c.code not in unused]
    if kept:
        edit = Edit(
            ", ".join(dict.fromkeys(c.code for c in kept)),
            Location(directive.row, directive.codes[0].start + 1),
            Location(directive.row, directive.codes[-1].end + 1),
        )
        return _diagnostic(directive, message, edit, display)
    return _diagnostic(directive, message, _removal(directive, lines), display)


def _diagnostic(directive: Directive, message: str, edit: Edit, display: str) -> Diagnostic:
    rule = all_rules()[UNUSED_NOQA]
    return Diagnostic(
        code=UNUSED_NOQA,
        name=rule.name,
        message=message,
        path=display,
        start=Location(directive.row, directive.start + 1),
        end=Location(directive.row, directive.end + 1),
        fix=Fix("safe", "Remove unused `noqa` directive", (edit,)),
        noqa_row=directive.row,
    )


def _removal(directive: Directive, lines: Sequence[str]) -> Edit:
    """The edit that deletes ``directive`` from its line and keeps any other comment."""
    row = directive.row
    line = lines[row - 1].rstrip("\r\n")
    before = line[directive.comment_start : directive.start]
    after = line[directive.end :]
    if before.strip():  # after another comment: cut from where that one ends
        cut = directive.comment_start + len(before.rstrip())
        return Edit("", Location(row, cut + 1), Location(row, directive.end + 1))
    if after.lstrip().startswith("#"):  # another comment follows: keep it
        end = directive.end + len(after) - len(after.lstrip())
        return Edit("", Location(row, directive.start + 1), Location(row, end + 1))
    if after.strip():  # an explanation follows: keep it as a comment
        return Edit("#", Location(row, directive.start + 1), Location(row, directive.end + 1))
    code = line[: directive.comment_start]
    if code.strip():
        cut = len(code.rstrip())
        return Edit("", Location(row, cut + 1), Location(row, len(line) + 1))
    if line != lines[row - 1]:  # a line holding only the directive goes, with its ending
        return Edit("", Location(row, 1), Location(row + 1, 1))
    return Edit("", Location(row, 1), Location(row, len(line) + 1))


# --- --add-noqa ----------------------------------------------------------------------------


@dataclass
class AddNoqaResult:
    """What ``--add-noqa`` did: directives added, and one line per diagnostic it could not."""

    added: int = 0
    problems: list[str] = field(default_factory=list)
    not_added: int = 0

    def skip(self, count: int, message: str) -> None:
        self.not_added += count
        self.problems.append(message)


def add_noqa(diagnostics: Iterable[Diagnostic]) -> AddNoqaResult:
    """Add ``# noqa: CODE`` to each diagnostic's line, file by file, merging directives."""
    result = AddNoqaResult()
    by_file: dict[str, list[Diagnostic]] = defaultdict(list)
    for diagnostic in diagnostics:
        by_file[diagnostic.path].append(diagnostic)
    for path, found in sorted(by_file.items()):
        if path.endswith(".ipynb"):
            result.skip(len(found), f"{path}: --add-noqa does not support notebooks yet")
            continue
        _add_to_file(Path(path), found, result)
    return result


def _add_to_file(path: Path, found: list[Diagnostic], result: AddNoqaResult) -> None:
    target = path.resolve()  # write through a symlink, not over it
    try:
        data = target.read_bytes()
        source = decode(data)
    except (OSError, UnreadableSource) as error:
        result.skip(len(found), f"{path}: not changed: {error}")
        return
    codes: dict[int, set[str]] = defaultdict(set)
    for diagnostic in found:
        if diagnostic.code in ENGINE_CODES or diagnostic.code == UNUSED_NOQA:
            why = (
                "a noqa comment cannot silence it"
                if diagnostic.code in ENGINE_CODES
                else ("fix it with --fix instead")
            )
            result.skip(1, f"{path}:{diagnostic.start.row}: {diagnostic.code} not added: {why}")
            continue
        codes[diagnostic.noqa_row or diagnostic.start.row].add(diagnostic.code)
    if not codes:
        return
    lines = split_lines(source.text)
    blocked = _rows_continued(source.text)
    directives = line_directives(source.text)
    added = 0
    for row, new_codes in sorted(codes.items()):
        if row > len(lines):
            result.skip(len(new_codes), f"{path}:{row}: not added: no such line")
            continue
        line = lines[row - 1]
        content = line.rstrip("\r\n")
        if blocked is None or row in blocked:
            why = (
                "the file does not tokenize"
                if blocked is None
                else ("the line ends inside a string or with a backslash")
            )
            result.skip(len(new_codes), f"{path}:{row}: not added: {why}")
            continue
        directive = directives.get(row)
        if directive is not None and directive.codes:
            existing = [c.code for c in directive.codes]
            merged = ", ".join(existing + sorted(new_codes - set(existing)))
            first, last = directive.codes[0].start, directive.codes[-1].end
            content = content[:first] + merged + content[last:]
        else:
            content = f"{content.rstrip()}  # noqa: {', '.join(sorted(new_codes))}"
        lines[row - 1] = content + line[len(line.rstrip("\r\n")) :]
        added += len(new_codes)
    if added == 0:
        return
    try:
        write_atomically(target, "".join(lines).encode(source.encoding), data)
    except ChangedOnDisk as error:
        result.skip(added, str(error))
        return
    except (OSError, UnicodeEncodeError) as error:
        reason = getattr(error, "strerror", None) or error
        result.skip(added, f"{path}: not changed: {reason}")
        return
    result.added += added


def _rows_continued(text: str) -> set[int] | None:
    """Rows whose line ends inside a token (a multi-line string) or with a backslash
    continuation, where a comment cannot go; None when ``text`` does not tokenize."""
    rows: set[int] = set()
    commented: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline="").readline):
            if token.type == tokenize.COMMENT:
                commented.add(token.start[0])
            elif token.end[0] > token.start[0] and token.type not in _LINE_ENDS:
                rows.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        return None
    for row, line in enumerate(split_lines(text), start=1):
        if line.rstrip("\r\n").endswith("\\") and row not in commented:
            rows.add(row)
    return rows


_LINE_ENDS = (tokenize.NL, tokenize.NEWLINE)
