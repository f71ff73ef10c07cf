"""From a rule's ``FixPlan`` to text edits.

Rules describe a fix as replacements of nodes (``devlint.rule.Replace``). Here they become
``Edit`` s at rows and columns, with what a rule cannot know on its own filled in: the
device variable in scope at the edit (``{device}``: reused when the code has one,
otherwise one device selection is added after the module's imports), the name ``torch``
is imported as (``{torch}``) and the file's layout (newline, indentation).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import CodeRange

from devlint.analysis.facts import FileFacts
from devlint.analysis.values import Kind
from devlint.diagnostics import Applicability, Edit, Fix, Location
from devlint.rule import BLOCK_INDENT, FixPlan
from devlint.source import LINE_BREAK

SELECTIONS = {
    "three-way": (
        '{torch}.device("cuda" if {torch}.cuda.is_available() '
        'else "mps" if {torch}.backends.mps.is_available() else "cpu")'
    ),
    "torch.accelerator": (
        "{torch}.accelerator.current_accelerator() if {torch}.accelerator.is_available() "
        'else {torch}.device("cpu")'
    ),
}
# The same selections, one part a line, for when one line would be too long.
WRAPPED_SELECTIONS = {
    "three-way": (
        '{torch}.device({nl}{tab}"cuda"{nl}{tab}if {torch}.cuda.is_available(){nl}'
        '{tab}else "mps"{nl}{tab}if {torch}.backends.mps.is_available(){nl}{tab}else "cpu"{nl})'
    ),
    "torch.accelerator": (
        "({nl}{tab}{torch}.accelerator.current_accelerator(){nl}"
        "{tab}if {torch}.accelerator.is_available(){nl}"
        '{tab}else {torch}.device("cpu"){nl})'
    ),
}
DEVICE_NAME = "device"


def selection_code(accelerator_api: str, torch_name: str, source: str = "") -> str:
    """The device-selection expression fixes write (SPEC §5), for ``accelerator-api``."""
    return SELECTIONS[_api(accelerator_api, source)].format(torch=torch_name)


def _api(accelerator_api: str, source: str) -> str:
    if accelerator_api == "auto":
        return "torch.accelerator" if ".accelerator." in source else "three-way"
    return accelerator_api


@dataclass(slots=True)
class FixContext:
    """What turning replacements into edits needs to know about one parsed file."""

    module: cst.Module
    positions: Mapping[cst.CSTNode, CodeRange]
    facts: FileFacts
    accelerator_api: str = "auto"
    line_length: int = 88  # a line a fix writes is no longer, unless it already was
    header_row: int = 0  # new lines go before this row (set by ``build_all``)
    _scopes: list[tuple[int, int, cst.FunctionDef | cst.ClassDef]] | None = None
    _lines: list[str] | None = None
    _statements: list[tuple[int, int, int, int]] | None = None
    _module_names: set[str] | None = None

    def build_all(self, plans: Sequence[tuple[FixPlan, Applicability]]) -> list[Fix | None]:
        """Each plan as a fix (None where it cannot be written safely here).

        Every fix that needs a new line (``import torch``, the device selection) adds it
        at the same place, above the first edit of any of them, so that one round of
        fixing adds it once.
        """
        rows = [
            min(self.positions[edit.node].start.line for edit in plan.edits)
            for plan, _ in plans
            if any(_names_needed(edit.text) for edit in plan.edits)
        ]
        self.header_row = self._header_row(min(rows)) if rows else 0
        return [self.build(plan, applicability) for plan, applicability in plans]

    def build(self, plan: FixPlan, applicability: Applicability) -> Fix | None:
        texts = [edit.text for edit in plan.edits]
        needed = set().union(*(_names_needed(text) for text in texts))
        first_row = min(self.positions[edit.node].start.line for edit in plan.edits)
        header: list[str] = []
        names: dict[str, str] = {}
        if needed:
            found = self._torch_name(first_row)
            torch_name, unconditional = found if found else (None, True)
            if torch_name is None:
                if "torch" in self._module_bindings():
                    return None  # ``torch`` is something else, or only sometimes torch, here
                torch_name = "torch"
                header.append("import torch")
            names["torch"] = torch_name
        if "selection" in needed:
            selection = selection_code(self.accelerator_api, names["torch"], self.module.code)
            atomic = selection.startswith(f"{names['torch']}.device(")
            names["selection"] = selection if atomic else f"({selection})"
        if any("{device_or_cpu}" in text for text in texts):
            existing = self._device_name(first_row)
            names["device_or_cpu"] = existing or '"cpu"'
        if "device" in needed:
            device = self._device_name(first_row)
            if device is None:
                return None
            if device == "":
                if not unconditional:
                    return None  # a selection at module level would run without torch
                device = DEVICE_NAME
                header.append(f"{device} = {self._selection(names['torch'])}")
            names["device"] = device
        edits = []
        for edit in plan.edits:
            start, end = self._span(edit.node)
            layout = {"nl": self.module.default_newline, "tab": self.module.default_indent}
            layout["indent"] = self._indent(start.row)
            if edit.where != "replace":
                start = end = start if edit.where == "before" else end
            content = edit.text.format(**names, **layout)
            if BLOCK_INDENT in content:
                if BLOCK_INDENT in self.module.code:
                    return None  # the file has the marker's character itself
                content = content.replace(BLOCK_INDENT, self._block_indent(edit.node))
            edits.append(Edit(content, start, end))
        if header:
            edits.append(self._header_edit(header))
        return Fix(applicability, plan.message, tuple(sorted(edits, key=_edit_key)))

    def _selection(self, torch_name: str, width: int = len(f"{DEVICE_NAME} = ")) -> str:
        """The device selection, wrapped when it would not fit after ``width`` columns."""
        code = selection_code(self.accelerator_api, torch_name, self.module.code)
        if width + len(code) <= self.line_length:
            return code
        layout = {"nl": self.module.default_newline, "tab": self.module.default_indent}
        api = _api(self.accelerator_api, self.module.code)
        return WRAPPED_SELECTIONS[api].format(torch=torch_name, **layout)

    def _span(self, node: cst.CSTNode) -> tuple[Location, Location]:
        span = self.positions[node]
        return (
            Location(span.start.line, span.start.column + 1),
            Location(span.end.line, span.end.column + 1),
        )

    def _block_indent(self, node: cst.CSTNode) -> str:
        """The indentation of the block ``node`` is in: that of its innermost statement."""
        if self._statements is None:
            self._statements = [
                (span.start.line, span.start.column, span.end.line, span.end.column)
                for statement, span in self.positions.items()
                if isinstance(statement, cst.BaseStatement)
            ]
        span = self.positions[node]
        first, last = (span.start.line, span.start.column), (span.end.line, span.end.column)
        rows = [
            (row, column)
            for row, column, end_row, end_column in self._statements
            if (row, column) <= first and last <= (end_row, end_column)
        ]
        return self._indent(max(rows)[0]) if rows else ""

    def _indent(self, row: int) -> str:
        if self._lines is None:
            self._lines = LINE_BREAK.split(self.module.code)  # not splitlines(): \x0c
        line = self._lines[row - 1] if 0 < row <= len(self._lines) else ""
        return line[: len(line) - len(line.lstrip(" \t"))]

    # -- names in scope

    def _module_bindings(self) -> set[str]:
        """Names bound at module level (computed once per file, not once per fix)."""
        if self._module_names is None:
            collector = _Bindings()
            for statement in self.module.body:
                statement.visit(collector)
            self._module_names = collector.names
        return self._module_names

    def _torch_name(self, row: int) -> tuple[str, bool] | None:
        """The name torch is imported as at module level, and whether unconditionally.

        Imports in a module-level ``try:`` count; those in the first branch of a module-level
        ``if`` (``if is_torch_available(): import torch``) only for edits outside that ``if``;
        other branches never (the name may be unbound where the edit is).
        """
        bound: dict[str, bool] = {}
        for top in self.module.body:
            blocks: list[tuple[Sequence[cst.CSTNode], bool]] = [([top], True)]
            if isinstance(top, cst.Try):
                blocks = [(top.body.body, True)]
            elif isinstance(top, cst.If):
                span = self.positions[top]
                inside = span.start.line <= row <= span.end.line
                typing_only = "TYPE_CHECKING" in self.module.code_for_node(top.test)
                blocks = [] if inside or typing_only else [(top.body.body, False)]
            for statements, unconditional in blocks:
                for name in _torch_import_names(statements):
                    bound[name] = bound.get(name, False) or unconditional
        for name, value in self.facts.module_names.items():
            if value.kind is Kind.IMPORTED and value.qualname == "torch" and name in bound:
                return name, bound[name]
        return None

    def _device_name(self, row: int) -> str | None:
        """The device variable for an edit at ``row``; "" for "add one"; None: cannot fix."""
        function, klass = self._enclosing(row)
        if function is not None:
            bound = _bound_names(function)
            if DEVICE_NAME in bound:
                return DEVICE_NAME if bound[DEVICE_NAME] else None
            if klass is not None and self._class_has_device(klass.name.value, function, row):
                return "self.device"
        for name, end_row in self._module_devices():
            if function is not None or end_row < row:
                return name
        if DEVICE_NAME in self._module_bindings():
            return None  # ``device`` already means something else here
        return ""

    def _class_has_device(self, klass: str, function: cst.FunctionDef, row: int) -> bool:
        params = function.params.params
        if not params or params[0].name.value != "self":
            return False
        for store in self.facts.attribute_stores:
            if (store.class_name, store.attribute) != (klass, "device"):
                continue
            if store.value.kind is not Kind.DEVICE:
                return False
            if store.method != function.name.value:
                return store.method == "__init__"
            return self.positions[store.target].start.line < row
        return False

    def _module_devices(self) -> list[tuple[str, int]]:
        """Module-level device variables and the row where their first binding ends."""
        found = []
        for statement in self.module.body:
            for name in _assigned_names(statement):
                value = self.facts.module_names.get(name)
                if value is not None and value.kind is Kind.DEVICE:
                    found.append((name, self.positions[statement].end.line))
        found.sort(key=lambda item: (item[0] != DEVICE_NAME, item[1]))
        return found

    def _enclosing(self, row: int) -> tuple[cst.FunctionDef | None, cst.ClassDef | None]:
        if self._scopes is None:
            self._scopes = [
                (span.start.line, span.end.line, node)
                for node, span in self.positions.items()
                if isinstance(node, cst.FunctionDef | cst.ClassDef)
            ]
        function: cst.FunctionDef | None = None
        klass: cst.ClassDef | None = None
        best = -1
        for start, end, node in self._scopes:
            if start <= row <= end and isinstance(node, cst.FunctionDef) and start > best:
                function, best = node, start
        if function is not None:
            owner = -1
            for start, end, node in self._scopes:
                if not isinstance(node, cst.ClassDef) or not start <= best <= end:
                    continue
                if start > owner and function in _methods(node):
                    klass, owner = node, start
        return function, klass

    # -- where new lines go

    def _header_row(self, before_row: int) -> int:
        """The row after the last top-level import (or docstring) above ``before_row``."""
        row = 0
        for statement in self.module.body:
            span = self.positions[statement]
            if span.start.line >= before_row:
                break
            if _is_import(statement) or _is_docstring(statement, self.module):
                row = span.end.line
            elif isinstance(statement, cst.Try) and any(map(_is_import, statement.body.body)):
                row = span.end.line  # try: import torch / except ImportError: ...
        if row == 0 and self.module.body:  # after the header comments (shebang, cookie)
            return self.positions[self.module.body[0]].start.line
        return row + 1

    def _header_edit(self, lines: list[str]) -> Edit:
        newline = self.module.default_newline
        text = newline.join(lines) + newline
        if self.header_row > 1 and self._after_import():
            text = newline + text
        where = Location(self.header_row, 1)
        return Edit(text, where, where)

    def _after_import(self) -> bool:
        return any(
            self.positions[statement].end.line == self.header_row - 1
            for statement in self.module.body
        )


def _names_needed(text: str) -> set[str]:
    """The placeholders in a template that need ``torch`` in scope or a device variable."""
    return {name for name in ("torch", "device", "selection") if "{" + name + "}" in text}


def _edit_key(edit: Edit) -> tuple[Location, Location]:
    return (edit.start, edit.end)


def _torch_import_names(statements: Sequence[cst.CSTNode]) -> set[str]:
    """The names that ``import torch`` / ``import torch as T`` among ``statements`` bind."""
    names = set()
    for statement in statements:
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            for alias in small.names if isinstance(small, cst.Import) else ():
                if alias.asname is None and alias.evaluated_name.split(".")[0] == "torch":
                    names.add("torch")
                elif alias.asname is not None and alias.evaluated_name == "torch":
                    names.add(str(alias.evaluated_alias))
    return names


def _is_import(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, cst.Import | cst.ImportFrom) for small in statement.body
    )


def _is_docstring(statement: cst.CSTNode, module: cst.Module) -> bool:
    return bool(module.body) and statement is module.body[0] and module.get_docstring() is not None


def _methods(klass: cst.ClassDef) -> list[cst.CSTNode]:
    return [s for s in klass.body.body if isinstance(s, cst.FunctionDef)]


def _assigned_names(statement: cst.CSTNode) -> Iterable[str]:
    """Names a top-level statement binds with ``=`` (also inside top-level if/try blocks)."""
    if isinstance(statement, cst.SimpleStatementLine):
        for small in statement.body:
            if isinstance(small, cst.Assign):
                for target in small.targets:
                    if isinstance(target.target, cst.Name):
                        yield target.target.value
            elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                yield from [small.target.value] if small.value is not None else []
    elif isinstance(statement, cst.If | cst.Try):
        for child in statement.children:
            if isinstance(child, cst.BaseSuite | cst.If | cst.Else | cst.ExceptHandler):
                yield from _assigned_names(child)
    elif isinstance(statement, cst.IndentedBlock | cst.Else | cst.ExceptHandler):
        body = statement.body if isinstance(statement, cst.IndentedBlock) else statement.body.body
        for inner in body:
            yield from _assigned_names(inner)


def _bound_names(function: cst.FunctionDef) -> dict[str, bool]:
    """Names bound in a function's own scope -> whether the binding is plainly a device.

    A parameter called ``device`` counts as a device; other bindings of the name do not,
    since without the analysis' verdict at that point a fix must not guess.
    """
    bound: dict[str, bool] = {}
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        bound[param.name.value] = param.name.value == DEVICE_NAME
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            bound[star.name.value] = False
    collector = _Bindings()
    function.body.visit(collector)
    for name in collector.names:
        bound.setdefault(name, False)
    return bound


class _Bindings(cst.CSTVisitor):
    """Names assigned in one function body, not descending into nested scopes."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.names.add(node.name.value)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.names.add(node.name.value)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._add(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._add(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._add(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._add(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._add(node.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._add(node.target)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:
            self.names.add(cst.Module(body=[]).code_for_node(node.name).split(".")[0])

    def _add(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.names.add(target.value)
        elif isinstance(target, cst.Tuple | cst.List):
            for element in target.elements:
                self._add(element.value)
        elif isinstance(target, cst.StarredElement):
            self._add(target.value)
