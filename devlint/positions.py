"""Line and column ranges of a parsed module's nodes, as libcst's ``PositionProvider`` gives.

Diagnostics and fixes need the position of a node. libcst computes positions with a
metadata visit of the whole tree followed by a code generation that builds two position
objects and a range object for every node; on the timm corpus that costs about three times
the parse itself (8.7x a plain ``module.code``), for every file with a finding.

``positions_of`` runs the same code generation once, with a state that counts lines and
columns, stores each node's range as integers keyed by the node's identity, and builds
libcst's ``CodeRange`` only for the nodes asked about: 6x faster (timm: 22.6 s -> 3.6 s
CPU for every file). The ranges are libcst's own definition (the syntactic position where
a node records one, the whitespace-inclusive one otherwise): tests/test_positions.py
compares both for every node of the fixtures and of tricky sources.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import field
from types import TracebackType

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodePosition, CodeRange

from devlint.records import record

_NEWLINE = re.compile(r"\r\n?|\n")

Span = tuple[int, int, int, int, cst.CSTNode]  # start line and column, end line and column


@record
class _CountingState(CodegenState):
    """A code generation state that moves a cursor and records where nodes start and end."""

    line: int = 1  # one-indexed
    column: int = 0  # zero-indexed
    spans: dict[int, Span] = field(default_factory=dict)
    starts: list[tuple[int, int]] = field(default_factory=list)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)  # the module's code generation reads them at its end
        if "\n" not in value and "\r" not in value:
            self.column += len(value)
            return
        segments = _NEWLINE.split(value)
        self.line += len(segments) - 1
        self.column = len(segments[-1])

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.starts.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        line, column = self.starts.pop()  # popped whatever happens: the stack stays paired
        key = id(node)
        if key not in self.spans:  # a syntactic position recorded inside wins
            self.spans[key] = (line, column, self.line, self.column, node)

    def record_syntactic_position(  # type: ignore[override]
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> _SyntacticPosition:
        return _SyntacticPosition(self, node, start_node, end_node)


class _SyntacticPosition:
    """The context manager a node's code generation wraps its syntactic part in (a class,
    not a generator: it runs for most nodes of the tree)."""

    __slots__ = ("column", "end_node", "line", "node", "start_node", "state")

    def __init__(
        self,
        state: _CountingState,
        node: cst.CSTNode,
        start_node: cst.CSTNode | None,
        end_node: cst.CSTNode | None,
    ) -> None:
        self.state = state
        self.node = node
        self.start_node = start_node
        self.end_node = end_node
        self.line = state.line
        self.column = state.column

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        state = self.state
        line, column = self.line, self.column
        if self.start_node is not None:
            line, column = state.spans[id(self.start_node)][:2]
        end_line, end_column = state.line, state.column
        if self.end_node is not None:
            end_line, end_column = state.spans[id(self.end_node)][2:4]
        state.spans[id(self.node)] = (line, column, end_line, end_column, self.node)


class Positions(Mapping[cst.CSTNode, CodeRange]):
    """Node -> ``CodeRange`` for the nodes of one module (each span holds its node, so
    the identities that key them stay unique)."""

    def __init__(self, spans: dict[int, Span]) -> None:
        self._spans = spans

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        line, column, end_line, end_column, _ = self._spans[id(node)]
        return CodeRange(CodePosition(line, column), CodePosition(end_line, end_column))

    def __contains__(self, node: object) -> bool:
        return id(node) in self._spans

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return (span[4] for span in self._spans.values())

    def __len__(self) -> int:
        return len(self._spans)


def positions_of(module: cst.Module) -> Positions:
    """The position of every node of ``module``, in one code generation pass."""
    state = _CountingState(
        default_indent=module.default_indent, default_newline=module.default_newline
    )
    module._codegen(state)
    return Positions(state.spans)
