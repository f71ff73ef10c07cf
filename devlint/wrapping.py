"""Keeping the lines a fix writes within the line length.

When an edit would make a line longer than ``line-length`` (and longer than it was; a
trailing comment does not count), the code around the edit is laid out again, in the
order a formatter such as ruff's would try:

1. the value of an assignment or ``return`` in parentheses, on a line of its own (unless
   it is a call whose arguments can be split instead);
2. a call around the edit, outermost first: its arguments together on a line of their
   own, then one a line with a trailing comma, then with a conditional-expression
   argument one part a line (``"cuda"`` / ``if ...`` / ``else ...``);
3. a conditional expression one part a line, inside its parentheses (added around the
   value of an assignment).

The first layout that fits is written; where none does (or the code holds comments or
backslashes, which need a real formatter), the edit stays as it was.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping

import libcst as cst
from libcst.metadata import CodeRange

from devlint.diagnostics import Edit, Location
from devlint.source import LINE_BREAK

_STATEMENT_VALUES = (cst.Assign, cst.AnnAssign, cst.Return)
_COMMENT = re.compile(r"\s+#[^'\"]*$")
_PRAGMA = re.compile(r"#\s*(noqa|type:|pyright:|pylint:|mypy:|pragma:|isort:|nosec|fmt:)", re.I)

Candidates = Callable[["_Layout", cst.BaseExpression, bool], Iterator[cst.BaseExpression]]


class Wrapper:
    """Re-lays out edits of one file that would not fit the line length."""

    def __init__(
        self,
        module: cst.Module,
        code: str,
        positions: Mapping[cst.CSTNode, CodeRange],
        line_length: int,
    ) -> None:
        self.module, self.code, self.positions, self.limit = module, code, positions, line_length
        self.lines = LINE_BREAK.split(code)
        self.strict = True  # within the limit; else no longer than the lines replaced
        self.starts = [0, 0, *(found.end() for found in LINE_BREAK.finditer(code))]

    def fit(self, node: cst.CSTNode, statement: cst.CSTNode | None, edit: Edit) -> Edit:
        """``edit`` (made at ``node``, in ``statement``), wrapped if it is too long: the
        first layout within the limit; where none is, the edit as it is if its lines are
        no longer than the longest it replaces, else the first layout that is."""
        self.strict = True
        if self._fits(edit) or statement is None:
            return edit
        wrapped = self._layout(node, statement, edit)
        if wrapped is not None:
            return wrapped
        self.strict = False
        try:
            return edit if self._fits(edit) else self._layout(node, statement, edit) or edit
        finally:
            self.strict = True

    def _layout(self, node: cst.CSTNode, statement: cst.CSTNode, edit: Edit) -> Edit | None:
        path = list(_path(statement, node))
        pairs = list(zip([None, *path], path, strict=False))
        steps: list[tuple[Candidates, list[tuple[cst.CSTNode | None, cst.CSTNode]]]] = [
            (_Layout.value_in_parens, pairs),
            (_Layout.call, pairs),
            (_Layout.conditional, pairs[::-1]),
        ]
        parameters = [  # of a ``def``: a lambda's have no brackets to break lines in
            node
            for parent, node in pairs
            if isinstance(node, cst.Parameters) and isinstance(parent, cst.FunctionDef)
        ]
        wrapped = self._parameters(parameters[-1], edit) if parameters else None
        for candidates, order in steps:
            for parent, outer in order:
                wrapped = wrapped or self._wrap(outer, parent, edit, candidates)
        return wrapped

    def _parameters(self, node: cst.Parameters, edit: Edit) -> Edit | None:
        """A ``def`` whose parameters the edit made too long: one parameter a line."""
        span = self.positions[node]
        start = Location(span.start.line, span.start.column + 1)
        end = Location(span.end.line, span.end.column + 1)
        if start.row != end.row or not self.lines[start.row - 1].lstrip().startswith("def "):
            return None  # parameters already on lines of their own: the edit wraps alone
        text = self._text(start, edit.start) + edit.content + self._text(edit.end, end)
        if "#" in text or "\\" in text:
            return None
        try:
            parsed = cst.parse_statement(f"def _({text}): pass")
        except cst.ParserSyntaxError:
            return None
        assert isinstance(parsed, cst.FunctionDef)
        params = parsed.params
        if params.posonly_params or not isinstance(params.star_arg, cst.MaybeSentinel):
            return None  # ``/`` and ``*`` markers: left alone
        every = [*params.params, *params.kwonly_params, *filter(None, [params.star_kwarg])]
        indent = _indent(self.lines[start.row - 1])
        layout = _Layout(indent, indent + self.module.default_indent)
        for depth in range(3):
            laid = [
                param.with_changes(
                    default=param.default and layout._deep(param.default, depth),
                    comma=cst.MaybeSentinel.DEFAULT,
                    whitespace_after_param=cst.SimpleWhitespace(""),
                )
                for param in every
            ]
            code = "".join(
                self.module.default_newline + layout.inner + self.module.code_for_node(param) + ","
                for param in laid
            )
            result = Edit(code + self.module.default_newline + indent, start, end)
            if self._fits(result):
                return result
        return None

    def _wrap(
        self,
        node: cst.CSTNode,
        parent: cst.CSTNode | None,
        edit: Edit,
        candidates: Candidates,
    ) -> Edit | None:
        """``edit`` with ``node`` (the edit applied) laid out anew, if that fits."""
        statement = isinstance(node, cst.Expr | cst.Assign | cst.Return)
        if not (isinstance(node, cst.BaseExpression) or statement) or node not in self.positions:
            return None
        span = self.positions[node]
        start = Location(span.start.line, span.start.column + 1)
        end = Location(span.end.line, span.end.column + 1)
        if not start <= edit.start <= edit.end <= end:
            return None
        text = self._text(start, edit.start) + edit.content + self._text(edit.end, end)
        if "#" in text or "\\" in text:
            return None  # comments and backslashes would need a real formatter
        parsed = _parse(text, statement)
        if parsed is None:
            return None
        value, rebuild = parsed
        indent = _indent(self.lines[start.row - 1])
        layout = _Layout(indent, indent + self.module.default_indent)
        alone = isinstance(parent, _STATEMENT_VALUES) and getattr(parent, "value", None) is node
        alone = alone or (statement and not isinstance(node, cst.Expr))
        if candidates == _Layout.conditional:  # the last resort for a default or an argument
            alone = alone or (isinstance(parent, cst.Param) and node is parent.default)
            alone = alone or (isinstance(parent, cst.Arg) and node is parent.value)
        for wrapped in candidates(layout, value, alone):
            result = Edit(self.module.code_for_node(rebuild(wrapped)), start, end)
            if self._fits(result):
                return result
        return None

    def _fits(self, edit: Edit) -> bool:
        """Whether the lines ``edit`` touches are within the limit (or no longer than before)."""
        before = self.lines[edit.start.row - 1 : edit.end.row]
        after = (
            self.lines[edit.start.row - 1][: edit.start.column - 1]
            + edit.content
            + self.lines[edit.end.row - 1][edit.end.column - 1 :]
        )
        longest = self.limit if self.strict else max(self.limit, *map(_width, before))
        return all(_width(line) <= longest for line in LINE_BREAK.split(after))

    def _text(self, start: Location, end: Location) -> str:
        first = self.starts[start.row] + start.column - 1
        return self.code[first : self.starts[end.row] + end.column - 1]


class _Layout:
    """The layouts tried for one expression, its lines at ``outer`` and ``inner``."""

    def __init__(self, outer: str, inner: str) -> None:
        self.outer, self.inner = outer, inner

    def value_in_parens(
        self, node: cst.BaseExpression, alone: bool
    ) -> Iterator[cst.BaseExpression]:
        splittable = isinstance(node, cst.Call) and bool(node.args)
        if alone and not node.lpar and not splittable:
            yield node.with_changes(
                lpar=[cst.LeftParen(whitespace_after=_newline(self.inner))],
                rpar=[cst.RightParen(whitespace_before=_newline(self.outer))],
            )

    def call(self, node: cst.BaseExpression, alone: bool) -> Iterator[cst.BaseExpression]:
        if not isinstance(node, cst.Call) or node.lpar or not node.args:
            return
        if any(arg.star for arg in node.args):
            return
        yield self._together(node)
        for depth in range(3):
            yield self._one_per_line(node, depth)

    def _together(self, call: cst.Call) -> cst.Call:
        """``f(a, b)`` as ``f(`` / ``a, b`` / ``)``."""
        last = call.args[-1].with_changes(
            comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=_newline(self.outer)
        )
        return call.with_changes(
            whitespace_before_args=_newline(self.inner), args=[*call.args[:-1], last]
        )

    def _one_per_line(self, call: cst.Call, depth: int) -> cst.Call:
        """``f(a, b)`` as ``f(`` / ``a,`` / ``b,`` / ``)`` (one argument: no comma), the
        arguments themselves laid out ``depth`` levels down."""
        if len(call.args) == 1:
            laid = self._together(call)
            return laid.with_changes(
                args=[arg.with_changes(value=self._deep(arg.value, depth)) for arg in laid.args]
            )
        args = []
        for index, arg in enumerate(call.args):
            last = index == len(call.args) - 1
            comma = cst.Comma(whitespace_after=_newline(self.outer if last else self.inner))
            value = self._deep(arg.value, depth)
            args.append(
                arg.with_changes(
                    value=value, comma=comma, whitespace_after_arg=cst.SimpleWhitespace("")
                )
            )
        return call.with_changes(whitespace_before_args=_newline(self.inner), args=args)

    def _deep(self, value: cst.BaseExpression, depth: int) -> cst.BaseExpression:
        """An argument laid out: conditionals split, calls wrapped one level deeper."""
        if depth == 0:
            return value
        if isinstance(value, cst.IfExp):
            return self._split(value)
        nested = _Layout(self.inner, self.inner + self.inner[len(self.outer) :])
        if isinstance(value, cst.Call) and value.args and not value.lpar:
            if any(arg.star for arg in value.args):
                return value
            if depth == 1:
                return nested._together(value)
            return nested._one_per_line(value, depth - 1)
        return value

    def conditional(self, node: cst.BaseExpression, alone: bool) -> Iterator[cst.BaseExpression]:
        if isinstance(node, cst.IfExp) and node.lpar:
            yield self._split(node.with_changes(lpar=(), rpar=())).with_changes(
                lpar=[node.lpar[0].with_changes(whitespace_after=_newline(self.inner))],
                rpar=[node.rpar[-1].with_changes(whitespace_before=_newline(self.outer))],
            )
        elif isinstance(node, cst.IfExp) and alone:
            yield self._split(node).with_changes(
                lpar=[cst.LeftParen(whitespace_after=_newline(self.inner))],
                rpar=[cst.RightParen(whitespace_before=_newline(self.outer))],
            )

    def _split(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """``a if t else b if u else c`` one part a line."""
        if not isinstance(node, cst.IfExp) or node.lpar:
            return node
        return node.with_changes(
            whitespace_before_if=_newline(self.inner),
            whitespace_before_else=_newline(self.inner),
            orelse=self._split(node.orelse),
        )


def _parse(
    text: str, statement: bool
) -> tuple[cst.BaseExpression, Callable[[cst.BaseExpression], cst.CSTNode]] | None:
    """The expression to lay out in ``text``, and how to put it back in its statement."""
    try:
        if not statement:
            return cst.parse_expression(text), lambda value: value
        line = cst.parse_statement(text)
    except cst.ParserSyntaxError:
        return None
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    small = line.body[0]
    if not isinstance(small, cst.Expr | cst.Assign | cst.Return) or small.value is None:
        return None
    return small.value, lambda value: small.with_changes(value=value)


def _width(line: str) -> int:
    """A line's length as ruff's E501 counts it: a trailing pragma comment (``# noqa``,
    ``# type:``...) does not count (a guess that ignores ``#`` in strings only when no quote
    follows it)."""
    comment = _COMMENT.search(line)
    if comment is not None and _PRAGMA.match(comment.group().lstrip()):
        return comment.start()
    return len(line)


def _path(root: cst.CSTNode, target: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes from ``root`` down to ``target`` (nothing if it is not below ``root``)."""
    stack: list[tuple[cst.CSTNode, list[cst.CSTNode]]] = [(root, [root])]
    while stack:
        node, trail = stack.pop()
        if node is target:
            yield from trail
            return
        stack.extend((child, [*trail, child]) for child in node.children)


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _newline(indent: str) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(),
        indent=False,
        last_line=cst.SimpleWhitespace(indent),
    )
