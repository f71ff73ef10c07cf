"""Applying fixes to a text, to a fixpoint, never producing code that does not parse.

``fix_text`` applies the compatible fixes of one round (overlapping ones wait for the
next), re-checks, and repeats until nothing is left to fix; a round whose result does not
parse is dropped. Files and notebooks are read and written by ``api``.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import libcst as cst

from devlint.diagnostics import Diagnostic, Fix, Location
from devlint.engine import CheckOptions, check_text, unvalidated_nodes
from devlint.source import line_starts

MAX_ROUNDS = 10


def _offset(starts: list[int], location: Location) -> int:
    row = min(location.row, len(starts) - 1)
    return starts[row] + location.column - 1


def apply_fixes(text: str, fixes: Sequence[Fix]) -> tuple[str, list[int]]:
    """Apply the fixes that do not overlap an earlier one; return the text and their indices.

    Identical edits (two fixes adding the same device selection) are applied once.
    """
    starts = line_starts(text)
    taken: dict[tuple[int, int], str] = {}
    applied: list[int] = []
    for index, fix in enumerate(fixes):
        spans = [(_offset(starts, e.start), _offset(starts, e.end), e.content) for e in fix.edits]
        if all(_compatible(start, end, content, taken) for start, end, content in spans):
            for start, end, content in spans:
                taken[(start, end)] = content
            applied.append(index)
    for (start, end), content in sorted(taken.items(), reverse=True):
        text = text[:start] + content + text[end:]
    return text, applied


def _compatible(start: int, end: int, content: str, taken: dict[tuple[int, int], str]) -> bool:
    for (other_start, other_end), other in taken.items():
        if (other_start, other_end) == (start, end):
            if other != content:
                return False
        elif start < other_end and other_start < end:
            return False
        elif start == end == other_start or other_start == other_end == start:
            return False  # two insertions at one point, or one at the edge of a replacement
    return True


@dataclass(slots=True)
class FixResult:
    """The outcome of fixing one text."""

    text: str
    applied: Counter[str] = field(default_factory=Counter)  # fixes applied, per rule
    diagnostics: list[Diagnostic] = field(default_factory=list)  # what is left


def fixes_enabled(diagnostic: Diagnostic, unsafe: bool) -> bool:
    fix = diagnostic.fix
    return fix is not None and (fix.applicability == "safe" or unsafe)


def fix_text(
    text: str,
    display: str,
    options: CheckOptions,
    unsafe: bool = False,
) -> FixResult:
    """Apply fixes to ``text`` until none is left (or ``MAX_ROUNDS``)."""
    result = FixResult(text)

    def check(source: str) -> list[Diagnostic]:
        return check_text(source, display, options)

    diagnostics = check(text)
    for _ in range(MAX_ROUNDS):
        fixable = [d for d in diagnostics if fixes_enabled(d, unsafe)]
        if not fixable:
            break
        fixed, applied = apply_fixes(result.text, [d.fix for d in fixable if d.fix])
        if not applied or fixed == result.text or not _parses(fixed):
            break
        result.text = fixed
        result.applied.update(fixable[index].code for index in applied)
        diagnostics = check(fixed)
    if result.applied:
        cleaned = drop_unused_imports(text, result.text)
        if cleaned != result.text:
            result.text = cleaned
            diagnostics = check(cleaned)
    result.diagnostics = diagnostics
    return result


def drop_unused_imports(before: str, after: str) -> str:
    """Remove the module-level imports that ``before`` used and the fixes made unused."""
    unused = _imported_names(after) & (_used_names(before) - _used_names(after))
    if not unused:
        return after
    with unvalidated_nodes():
        cleaned = cst.parse_module(after).visit(_ImportRemover(unused)).code
    return cleaned if _parses(cleaned) else after


def _imported_names(text: str) -> set[str]:
    names = set()
    for statement in ast.parse(text).body:
        if isinstance(statement, ast.Import | ast.ImportFrom):
            for alias in statement.names:
                names.add(alias.asname or alias.name.split(".")[0])
    return names - {"*"}


def _used_names(text: str) -> set[str]:
    return {node.id for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Name)}


class _ImportRemover(cst.CSTTransformer):
    """Drops the given names from module-level import statements (and empty statements)."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.comments: list[cst.EmptyLine] = []  # above a removed statement: kept

    def on_visit(self, node: cst.CSTNode) -> bool:
        return not isinstance(node, cst.BaseCompoundStatement)  # module level only

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> Any:
        result = super().on_leave(original, updated)
        if isinstance(updated, cst.SimpleStatementLine) and not updated.body:
            self.comments += [line for line in updated.leading_lines if line.comment]
            return cst.RemoveFromParent()
        if self.comments and isinstance(result, cst.Module):
            return result.with_changes(footer=[*self.comments, *result.footer])
        if self.comments and isinstance(
            result, cst.SimpleStatementLine | cst.BaseCompoundStatement
        ):
            lines = [*self.comments, *result.leading_lines]
            self.comments = []
            return result.with_changes(leading_lines=lines)
        return result

    def leave_Import(
        self, original: cst.Import, updated: cst.Import
    ) -> cst.Import | cst.RemovalSentinel:
        return self._without(updated)

    def leave_ImportFrom(
        self, original: cst.ImportFrom, updated: cst.ImportFrom
    ) -> cst.ImportFrom | cst.RemovalSentinel:
        if isinstance(updated.names, cst.ImportStar) or updated.module is None:
            return updated
        if isinstance(updated.module, cst.Name) and updated.module.value == "__future__":
            return updated
        return self._without(updated)

    def _without(self, node: _Import) -> _Import | cst.RemovalSentinel:
        assert not isinstance(node.names, cst.ImportStar)
        kept = [alias for alias in node.names if _binding(alias) not in self.names]
        if len(kept) == len(node.names):
            return node
        if not kept:
            return cst.RemoveFromParent()
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return node.with_changes(names=kept)


_Import = TypeVar("_Import", cst.Import, cst.ImportFrom)


def _binding(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return _EMPTY.code_for_node(alias.name).split(".")[0]


_EMPTY = cst.Module(body=[])


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
