"""From a rule's ``FixPlan`` to text edits.

Rules describe a fix as replacements of nodes (``devlint.rule.Replace``). Here they become
``Edit`` s at rows and columns, with what a rule cannot know on its own filled in: the
device in scope at the edit (``{device}``, asked of ``devlint.analysis.scopes``: reused
when the code has one, otherwise one device selection is added after the module's
imports), the name ``torch`` is imported as (``{torch}``) and the file's layout (newline,
indentation: ``BLOCK_INDENT`` becomes the indentation of the edit's block). An edit that
would make a line longer than ``line-length`` is laid out again (``devlint.wrapping``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field

import libcst as cst
from libcst.metadata import CodeRange

from devlint.analysis.facts import FileFacts
from devlint.analysis.scopes import DEVICE_NAME, NEW, Scopes
from devlint.diagnostics import Applicability, Edit, Fix, Location
from devlint.records import record
from devlint.rule import BLOCK_INDENT, FixPlan
from devlint.source import LINE_BREAK
from devlint.wrapping import Wrapper

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
# The same choices as a device string (``"cuda"``/``"mps"``/``"cpu"``), for code that keeps
# its device as a string: compares it with strings, tests ``"cuda" in device``, or lets a
# configurator override it with a string of the same type.
STRING_SELECTIONS = {
    "three-way": (
        '"cuda" if {torch}.cuda.is_available() '
        'else "mps" if {torch}.backends.mps.is_available() else "cpu"'
    ),
    "torch.accelerator": (
        "{torch}.accelerator.current_accelerator().type "
        'if {torch}.accelerator.is_available() else "cpu"'
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


def selection_code(
    accelerator_api: str, torch_name: str, source: str = "", *, string: bool = False
) -> str:
    """The device-selection expression fixes write (docs/design.md §5), for ``accelerator-api``; with
    ``string``, the same choice as a device string."""
    table = STRING_SELECTIONS if string else SELECTIONS
    return table[_api(accelerator_api, source)].format(torch=torch_name)


def _api(accelerator_api: str, source: str) -> str:
    if accelerator_api == "auto":
        return "torch.accelerator" if ".accelerator." in source else "three-way"
    return accelerator_api


@record(slots=True)
class FixContext:
    """What turning replacements into edits needs to know about one parsed file."""

    module: cst.Module
    code: str  # the module's source (``module.code``, which costs a code generation)
    positions: Mapping[cst.CSTNode, CodeRange]
    facts: FileFacts
    accelerator_api: str = "auto"
    line_length: int = 88  # a line a fix writes is no longer, unless it already was
    header_row: int = 0  # new lines go before this row (set by ``build_all``)
    scopes: Scopes = field(init=False)
    wrapper: Wrapper = field(init=False)
    _lines: list[str] | None = None
    _statements: list[tuple[int, int, int, int, cst.BaseStatement]] | None = None

    def __post_init__(self) -> None:
        self.scopes = Scopes(self.module, self.positions, self.facts)
        self.wrapper = Wrapper(self.module, self.code, self.positions, self.line_length)

    def build_all(self, plans: Sequence[tuple[FixPlan, Applicability]]) -> list[Fix | None]:
        """Each plan as a fix (None where it cannot be written safely here).

        Every fix that needs a new line (``import torch``, the device selection) adds it
        at the same place, above the first edit of any of them, so that one round of
        fixing adds it once.
        """
        rows = [
            min(self.positions[edit.node].start.line for edit in plan.edits)
            for plan, _ in plans
            if any(_names_needed(edit.template) for edit in plan.edits)
        ]
        self.header_row = self.scopes.new_device_row(min(rows)) if rows else 0
        return [self.build(plan, applicability) for plan, applicability in plans]

    def build(self, plan: FixPlan, applicability: Applicability) -> Fix | None:
        texts = [edit.template for edit in plan.edits]
        needed = set().union(*(_names_needed(text) for text in texts))
        first_row = min(self.positions[edit.node].start.line for edit in plan.edits)
        header: list[str] = []
        names: dict[str, str] = {}
        hoisted: list[Edit] = []
        if needed:
            found = self.scopes.torch_at(first_row)
            torch_name, unconditional = found if found else (None, True)
            if torch_name is None:
                if "torch" in self.scopes.module_bindings():
                    return None  # ``torch`` is something else, or only sometimes torch, here
                torch_name = "torch"
                header.append("import torch")
            names["torch"] = torch_name
        if "selection" in needed:
            selection = selection_code(self.accelerator_api, names["torch"], self.code)
            atomic = selection.startswith(f"{names['torch']}.device(")
            names["selection"] = selection if atomic else f"({selection})"
        if "selection_str" in needed:
            choice = selection_code(self.accelerator_api, names["torch"], self.code, string=True)
            names["selection_str"] = choice
        if any("{device_or_cpu}" in text or "{device_is_cuda}" in text for text in texts):
            existing = self.scopes.device_at(first_row)
            plain = existing is not None and existing is not NEW and existing.hoist is None
            names["device_or_cpu"] = existing.expression if plain and existing else '"cpu"'
            # a device string or a torch.device alike (not ``device.type``: a string has none)
            if "torch" in names:  # asked for ``{device_is_cuda}``
                names["device_is_cuda"] = (
                    f'str({existing.expression}).startswith("cuda")'
                    if plain and existing
                    else f"{names['torch']}.cuda.is_available()"
                )
        if "device" in needed:
            device = self.scopes.device_at(first_row)
            if device is None:
                return None
            if device is NEW:
                if not unconditional:
                    return None  # a selection at module level would run without torch
                header.append(f"{DEVICE_NAME} = {self._selection(names['torch'])}")
                names["device"] = DEVICE_NAME
            else:
                names["device"] = device.expression
            if device.hoist is not None:
                anchor, binding = device.hoist
                at = self._span(anchor)[0]
                newline = self.module.default_newline
                hoisted.append(Edit(binding + newline + self._indent(at.row), at, at))
        edits = []
        for edit, template in zip(plan.edits, texts, strict=True):
            start, end = self._span(edit.node)
            layout = {"nl": self.module.default_newline, "tab": self.module.default_indent}
            layout["indent"] = self._indent(start.row)
            if edit.where != "replace":
                start = end = start if edit.where == "before" else end
            content = template.format(**names, **layout)
            if BLOCK_INDENT in content:
                if BLOCK_INDENT in self.code:
                    return None  # the file has the marker's character itself
                content = content.replace(BLOCK_INDENT, self._block_indent(edit.node))
            statement = self._statement_of(edit.node)
            edits.append(self.wrapper.fit(edit.node, statement, Edit(content, start, end)))
        if header:
            edits.append(self._header_edit(header))
        edits += hoisted
        return Fix(applicability, plan.message, tuple(sorted(edits, key=_edit_key)))

    def _selection(self, torch_name: str, width: int = len(f"{DEVICE_NAME} = ")) -> str:
        """The device selection, wrapped when it would not fit after ``width`` columns."""
        code = selection_code(self.accelerator_api, torch_name, self.code)
        if width + len(code) <= self.line_length:
            return code
        layout = {"nl": self.module.default_newline, "tab": self.module.default_indent}
        api = _api(self.accelerator_api, self.code)
        return WRAPPED_SELECTIONS[api].format(torch=torch_name, **layout)

    def _span(self, node: cst.CSTNode) -> tuple[Location, Location]:
        span = self.positions[node]
        return (
            Location(span.start.line, span.start.column + 1),
            Location(span.end.line, span.end.column + 1),
        )

    def _statement_of(self, node: cst.CSTNode) -> cst.BaseStatement | None:
        """The innermost statement that holds ``node`` (or is it)."""
        if self._statements is None:
            self._statements = [
                (span.start.line, span.start.column, span.end.line, span.end.column, statement)
                for statement, span in self.positions.items()
                if isinstance(statement, cst.BaseStatement)
            ]
        span = self.positions[node]
        first, last = (span.start.line, span.start.column), (span.end.line, span.end.column)
        holding = [
            (row, column, statement)
            for row, column, end_row, end_column, statement in self._statements
            if (row, column) <= first and last <= (end_row, end_column)
        ]
        return max(holding, key=lambda item: item[:2])[2] if holding else None

    def _block_indent(self, node: cst.CSTNode) -> str:
        """The indentation of the block ``node`` is in: that of its innermost statement."""
        statement = self._statement_of(node)
        return self._indent(self.positions[statement].start.line) if statement else ""

    def _indent(self, row: int) -> str:
        if self._lines is None:
            self._lines = LINE_BREAK.split(self.code)  # not splitlines(): \x0c
        line = self._lines[row - 1] if 0 < row <= len(self._lines) else ""
        return line[: len(line) - len(line.lstrip(" \t"))]

    # -- where new lines go

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
    needed = {
        name
        for name in ("torch", "device", "selection", "selection_str")
        if "{" + name + "}" in text
    }
    return needed | {"torch"} if "{device_is_cuda}" in text else needed


def _edit_key(edit: Edit) -> tuple[Location, Location]:
    return (edit.start, edit.end)
