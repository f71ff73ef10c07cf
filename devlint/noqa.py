"""``# noqa`` directives: finding them, suppressing with them, unused ones, ``--add-noqa``.

A line directive is ``# noqa`` (blanket) or ``# noqa: DEV001, DEV005`` in a comment on the
reported line (flake8's syntax); the file directive is a ``# devlint: noqa[: codes]`` line.
Directives are read from comment tokens, so ``"# noqa"`` inside a string suppresses nothing.

Line directives are read as ruff reads them: codes are upper-case letters followed by
digits, and the first word that is not a code ends the list (``# noqa: DEV001 see #12``).
``# noqa: some words`` names no code at all: it is an *invalid* directive, which
suppresses nothing and is reported as a warning (``Invalid `# noqa` directive on
path:line: ...``), rather than a blanket ``# noqa`` that would hide every rule.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import field
from pathlib import Path

from devlint import log
from devlint.diagnostics import Diagnostic, Edit, Fix, Location
from devlint.records import record
from devlint.rule import all_rules
from devlint.source import (
    ChangedOnDisk,
    UnreadableSource,
    decode,
    split_lines,
    write_atomically,
)

UNUSED_NOQA = "DEV015"
# Engine diagnostics are about the whole file (or stop the analysis): a line noqa cannot
# be placed for them by --add-noqa.
ENGINE_CODES = frozenset({"DEV900", "DEV901", "DEV902"})

_FILE_NOQA = re.compile(
    r"^\s*#\s*devlint:\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?\s*$",
    re.IGNORECASE | re.MULTILINE,
)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
_DEVLINT_CODE = re.compile(r"DEV[0-9]+")


@record(frozen=True, slots=True)
class Code:
    """One code of a directive and its 0-based column span on the line."""

    code: str
    start: int
    end: int


@record(frozen=True, slots=True)
class Directive:
    """A ``# noqa`` directive on one line; columns are 0-based character offsets."""

    row: int
    start: int  # the directive's ``#``
    end: int  # just past its last code (or ``noqa``)
    comment_start: int  # the comment token it is part of
    codes: tuple[Code, ...] | None  # None: a blanket directive, no codes
    in_comment: bool = True  # False: found by a plain text search (tokenizing failed)


@record(frozen=True, slots=True)
class FileDirective:
    """``# devlint: noqa`` lines: everything, or the union of their codes."""

    everything: bool
    codes: frozenset[str]


def file_directive(text: str) -> FileDirective:
    codes: set[str] = set()
    for match in _FILE_NOQA.finditer(text):
        if match.group("codes") is None:
            return FileDirective(True, frozenset())
        codes |= {code.upper() for code in _CODE.findall(match.group("codes"))}
    return FileDirective(False, frozenset(codes))


@record(frozen=True, slots=True)
class InvalidDirective:
    """A ``# noqa`` comment that cannot be read: it suppresses nothing."""

    row: int
    reason: str


# Why a directive is invalid, in ruff's words (with devlint's codes in the example).
MISSING_CODES = "expected a comma-separated list of codes (e.g., `# noqa: DEV001, DEV005`)."
INVALID_SUFFIX = (
    "expected `:` followed by a comma-separated list of codes (e.g., `# noqa: DEV001, DEV005`)."
)
INVALID_CODE_SUFFIX = (
    "expected code to consist of uppercase letters followed by digits only (e.g. `DEV001`)"
)


def line_directives(text: str) -> dict[int, Directive]:
    """The ``# noqa`` directive of each line that has a valid one, by 1-based row."""
    return scan_directives(text)[0]


def scan_directives(text: str) -> tuple[dict[int, Directive], list[InvalidDirective]]:
    """The valid ``# noqa`` directives by row, and the invalid ones."""
    comments = _comments(text)
    in_comment = comments is not None
    if comments is None:  # not tokenizable: search every line, strings included
        lines = split_lines(text, keepends=True)
        comments = [(row, 0, line) for row, line in enumerate(lines, start=1) if "#" in line]
    directives: dict[int, Directive] = {}
    invalid: list[InvalidDirective] = []
    for row, column, comment in comments:
        parsed = _parse(row, column, comment, in_comment)
        if isinstance(parsed, Directive):
            directives[row] = parsed
        elif isinstance(parsed, str):
            invalid.append(InvalidDirective(row, parsed))
    return directives, invalid


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


def _parse(row: int, column: int, comment: str, in_comment: bool = True) -> Directive | str | None:
    """The directive in ``comment`` (at ``column``), an error message, or None (no noqa)."""
    start = _noqa_start(comment)
    if start is None:
        return None
    after = start + comment[start:].lower().index("noqa") + len("noqa")
    rest = comment[after:]
    body = rest.lstrip()
    if not rest or rest.startswith("#") or (rest[0].isspace() and not body.startswith(":")):
        blanket = Directive(row, column + start, column + after, column, None, in_comment)
        return blanket  # a bare noqa, or noqa then a note: everything
    if not body.startswith(":"):
        return INVALID_SUFFIX  # a code glued to the keyword, or `;` for the colon
    first = after + len(rest) - len(body) + 1
    codes = _lex_codes(comment, first)
    if isinstance(codes, str):
        return codes
    if not codes:
        return MISSING_CODES
    shifted = tuple(Code(c.code, column + c.start, column + c.end) for c in codes)
    return Directive(row, column + start, shifted[-1].end, column, shifted, in_comment)


def _noqa_start(comment: str) -> int | None:
    """Where the first ``#`` that opens a ``noqa`` directive is in ``comment``."""
    position = comment.find("#")
    while position != -1:
        word = comment[position + 1 :].lstrip()
        if word[:4].lower() == "noqa":
            return position
        position = comment.find("#", position + 1)
    return None


def _lex_codes(comment: str, position: int) -> list[Code] | str:
    """The codes from ``position`` on, up to the first word that is not a code."""
    codes: list[Code] = []
    glued = False  # the last code ran straight into this one: `DEV001DEV003`
    end = len(comment)
    while position < end:
        while position < end and (comment[position].isspace() or comment[position] == ","):
            position += 1
        start = position
        while position < end and "A" <= comment[position] <= "Z":
            position += 1
        letters = position
        while position < end and comment[position].isdigit() and comment[position].isascii():
            position += 1
        if letters == start or position == letters:  # not a code: a comment follows
            if glued and letters > start:
                return INVALID_CODE_SUFFIX
            break
        codes.append(Code(comment[start:position], start, position))
        following = comment[position] if position < end else " "
        glued = "A" <= following <= "Z"
        if not (glued or following.isspace() or following in ",#"):
            return INVALID_CODE_SUFFIX  # `DEV001abc`
        if following == "#":
            break
    return codes


# --- suppression and unused directives ---------------------------------------------------

# Each noqa comment to the end of its line: read without tokenizing first, so that a file whose
# directives are all valid (the usual case) is not tokenized just to look for invalid ones.
_MENTION = re.compile(r"#[ \t]*(?i:noqa)[^\r\n]*")


def _may_have_invalid(text: str) -> bool:
    return any(isinstance(_parse(0, 0, m.group()), str) for m in _MENTION.finditer(text))


def warn_invalid(
    text: str, display: str, locate: Callable[[int], tuple[int, int]] | None = None
) -> list[str]:
    """Log (and return) a warning for each invalid ``# noqa`` directive, as ruff does.

    ``locate`` maps a row of a notebook's joined cells to (cell, row in the cell).
    """
    if "noqa" not in text.lower() or not _may_have_invalid(text):
        return []
    warnings = []
    for invalid in scan_directives(text)[1]:
        where = f"{display}:{invalid.row}"
        if locate is not None:
            cell, row = locate(invalid.row)
            where = f"{display}:cell {cell}:{row}"
        warnings.append(f"Invalid `# noqa` directive on {where}: {invalid.reason}")
    for warning in warnings:
        log.logger().warning(warning)
    return warnings


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
        lines = split_lines(text, keepends=True)
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
    # or for another selection of rules. A DEV code that no rule has is a typo.
    known = all_rules()
    unused = [c for c in codes if c in known and c in selected and c not in used]
    unknown = [c for c in codes if _DEVLINT_CODE.fullmatch(c) and c not in known]
    if not unused and not unknown:
        return None
    reasons = [
        f"{label}: " + ", ".join(f"`{code}`" for code in dict.fromkeys(group))
        for label, group in (("unused", unused), ("unknown", unknown))
        if group
    ]
    message = f"Unused `noqa` directive ({'; '.join(reasons)})"
    unused += unknown
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


@record
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
    """Add the ``# noqa`` comments ``found`` asks for to one file, written once."""
    target = path.resolve()  # write through a symlink, not over it
    try:
        data = target.read_bytes()
        source = decode(data)
    except (OSError, UnreadableSource) as error:
        result.skip(len(found), f"{path}: not changed: {error}")
        return
    codes = _codes_by_row(path, found, result)
    if not codes:
        return
    lines = split_lines(source.text, keepends=True)
    added = _add_directives(path, source.text, lines, codes, result)
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


def _codes_by_row(
    path: Path, found: list[Diagnostic], result: AddNoqaResult
) -> dict[int, set[str]]:
    """The codes to add on each row; a problem for each diagnostic no noqa may silence."""
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
    return codes


def _add_directives(
    path: Path, text: str, lines: list[str], codes: dict[int, set[str]], result: AddNoqaResult
) -> int:
    """Add each row's codes to ``lines`` (of ``text``) in place; the number of codes added."""
    blocked = rows_continued(text)
    directives = line_directives(text)
    added = 0
    for row, new_codes in sorted(codes.items()):
        if row > len(lines):
            result.skip(len(new_codes), f"{path}:{row}: not added: no such line")
            continue
        if blocked is None or row in blocked:
            why = (
                "the file does not tokenize"
                if blocked is None
                else ("the line ends inside a string or with a backslash")
            )
            result.skip(len(new_codes), f"{path}:{row}: not added: {why}")
            continue
        lines[row - 1] = _with_codes(lines[row - 1], directives.get(row), new_codes)
        added += len(new_codes)
    return added


def _with_codes(line: str, directive: Directive | None, new_codes: set[str]) -> str:
    """``line`` with ``new_codes`` merged into its noqa directive, or in a new one."""
    content = line.rstrip("\r\n")
    if directive is not None and directive.codes:
        existing = [c.code for c in directive.codes]
        merged = ", ".join(existing + sorted(new_codes - set(existing)))
        first, last = directive.codes[0].start, directive.codes[-1].end
        content = content[:first] + merged + content[last:]
    else:
        content = f"{content.rstrip()}  # noqa: {', '.join(sorted(new_codes))}"
    return content + line[len(line.rstrip("\r\n")) :]


def rows_continued(text: str) -> set[int] | None:
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
    for row, line in enumerate(split_lines(text, keepends=True), start=1):
        if line.rstrip("\r\n").endswith("\\") and row not in commented:
            rows.add(row)
    return rows


_LINE_ENDS = (tokenize.NL, tokenize.NEWLINE)
