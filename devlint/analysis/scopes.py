"""Which device value is in scope at a node, and where a new one would go.

Fix edits ask here instead of keeping their own model of names. ``Scopes.device_at(row)``
answers, in this order:

1. ``device`` bound in the enclosing function: a parameter called ``device``, or a local
   whose every assignment there is a device (the analysis' verdict, or the shapes fixes
   write: ``x.device``, ``next(m.parameters()).device``) and comes before the row;
2. in a method, ``self.device`` when its class stores a device there (in ``__init__``, or
   earlier in the same method);
3. a parameter that every call of the function in this file passes a device to;
4. a module-level device variable, assigned or bound by a resolved ``from utils import *``
   (above the row, for code that runs at import);
5. when a function of this file owns its own device (``main()`` building it from flags)
   and calls this one with a model: that model's device,
   ``device = next(model.parameters()).device`` added at the top of the function, so the
   user's choice is followed instead of a second selection that ignores it;
6. otherwise a new module-level selection (``NEW``) after the imports (``new_device_row``).
   The device is not threaded through signatures: a function whose callers own a device
   but pass nothing that carries it gets the module-level selection (documented gap).

``torch_at`` answers the same question for the name ``torch`` is imported as (or
star-imported with a project module).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Final

import libcst as cst
from libcst.metadata import CodeRange

from devlint.analysis.facts import CallRecord, FileFacts
from devlint.analysis.values import Kind, Value
from devlint.records import record

DEVICE_NAME: Final = "device"
_EMPTY = cst.Module(body=[])


@record(frozen=True, slots=True)
class DeviceInScope:
    """A device expression code at some row can use, and how it got there."""

    expression: str  # ``device``, ``self.device``, ``dev``
    origin: str  # parameter | local | attribute | argument | module | passed-in
    # passed-in: the statement to add the binding above, and the binding's text
    hoist: tuple[cst.BaseStatement, str] | None = None


NEW: Final = DeviceInScope("", "new")  # none in scope: add a module-level selection


class Scopes:
    """Name-in-scope queries over one parsed file (computed lazily, once per file)."""

    def __init__(
        self, module: cst.Module, positions: Mapping[cst.CSTNode, CodeRange], facts: FileFacts
    ) -> None:
        self.module, self.positions, self.facts = module, positions, facts
        self._definitions: list[tuple[int, int, cst.FunctionDef | cst.ClassDef]] | None = None
        self._module_names: set[str] | None = None

    # -- the device

    def device_at(self, row: int) -> DeviceInScope | None:
        """The device for code at ``row``; ``NEW`` to add one; None: ``device`` means
        something else here, so no device can be written."""
        function, klass = self.enclosing(row)
        if function is not None:
            decided, found = self._in_function(function, klass, row)
            if decided:
                return found
        for name, end_row in self._module_devices():
            if function is not None or end_row < row:
                return DeviceInScope(name, "module")
        if function is not None:
            passed = self._passed_in(function)
            if passed is not None:
                return passed
        if DEVICE_NAME in self.module_bindings() or DEVICE_NAME in self._star_bound_names():
            return None  # ``device`` already means something else here
        return NEW

    def _in_function(
        self, function: cst.FunctionDef, klass: cst.ClassDef | None, row: int
    ) -> tuple[bool, DeviceInScope | None]:
        """What the function's own scope says: (decided, the answer)."""
        if DEVICE_NAME in _parameters(function):
            return True, DeviceInScope(DEVICE_NAME, "parameter")
        if DEVICE_NAME in _local_names(function):
            stores = list(_stores_of(function.body, DEVICE_NAME))
            if stores and all(self._is_device(value) for _, value in stores):
                first = min(self.positions[target].start.line for target, _ in stores)
                return True, DeviceInScope(DEVICE_NAME, "local") if first < row else None
            return True, None  # ``device`` is something else here
        if klass is not None and self._class_has_device(klass.name.value, function, row):
            return True, DeviceInScope("self.device", "attribute")
        argument = self._device_argument(function)
        return argument is not None, DeviceInScope(argument, "argument") if argument else None

    def _is_device(self, value: cst.BaseExpression) -> bool:
        known = self.facts.value_of(value)
        if known.kind is Kind.DEVICE:
            return _may_be_cuda(known)
        return _device_of_value(value) is not None  # what ``_passed_in`` writes

    def _class_has_device(self, klass: str, function: cst.FunctionDef, row: int) -> bool:
        params = function.params.params
        if not params or params[0].name.value != "self":
            return False
        for store in self.facts.attribute_stores:
            if (store.class_name, store.attribute) != (klass, DEVICE_NAME):
                continue
            if store.value.kind is not Kind.DEVICE or not _may_be_cuda(store.value):
                return False
            if store.method != function.name.value:
                return store.method == "__init__"
            return self.positions[store.target].start.line < row
        return False

    def _device_argument(self, function: cst.FunctionDef) -> str | None:
        """A parameter that every call of ``function`` in this file passes a device to."""
        calls, local = self._calls_of(function), _local_names(function)
        for name in _parameters(function):
            values = [self._argument(call, function, name) for call in calls]
            devices = [v for v in values if v is not None and v.kind is Kind.DEVICE]
            if calls and len(devices) == len(calls) and name not in local:
                return name
        return None

    def _passed_in(self, function: cst.FunctionDef) -> DeviceInScope | None:
        """The device of a model that callers owning a device pass to ``function``."""
        calls = self._calls_of(function)
        owners = [call.site.function for call in calls]
        if not calls or not any(owner is not None and self._owns_device(owner) for owner in owners):
            return None
        body = function.body
        if not isinstance(body, cst.IndentedBlock) or DEVICE_NAME in _local_names(function):
            return None
        anchor, local = _first_statement(body), _local_names(function)
        for name in _parameters(function):
            values = [self._argument(call, function, name) for call in calls]
            modules = [v for v in values if v is not None and v.kind is Kind.MODULE]
            stateless = any(v.stateless for v in modules)
            if len(modules) == len(calls) and not stateless and anchor and name not in local:
                text = f"{DEVICE_NAME} = next({name}.parameters()).device"
                return DeviceInScope(DEVICE_NAME, "passed-in", (anchor, text))
        return None

    def _owns_device(self, function: cst.FunctionDef) -> bool:
        if DEVICE_NAME in _parameters(function):
            return True
        stores = list(_stores_of(function.body, DEVICE_NAME))
        return bool(stores) and all(self._is_device(value) for _, value in stores)

    def _calls_of(self, function: cst.FunctionDef) -> list[CallRecord]:
        """This file's calls of a module-level ``function`` by its name."""
        if function not in self.module.body:
            return []
        name = function.name.value
        return [
            call
            for call in self.facts.calls
            if isinstance(call.node.func, cst.Name) and call.node.func.value == name
        ]

    @staticmethod
    def _argument(call: CallRecord, function: cst.FunctionDef, name: str) -> Value | None:
        """The value ``call`` passes to parameter ``name`` (None: not passed or unknown)."""
        params = function.params
        positional = [p.name.value for p in (*params.posonly_params, *params.params)]
        for index, arg in enumerate(call.node.args):
            if arg.star:
                return None
            if arg.keyword is not None and arg.keyword.value == name:
                return call.keywords.get(name)
            if arg.keyword is None and index < len(positional) and positional[index] == name:
                return call.args[index] if index < len(call.args) else None
        return None

    def _module_devices(self) -> list[tuple[str, int]]:
        """Module-level device variables and the row where their first binding ends."""
        found = []
        for statement in self.module.body:
            for name in [*_assigned_names(statement), *self._star_imported(statement)]:
                value = self.facts.module_names.get(name)
                if (
                    value is not None
                    and value.kind is Kind.DEVICE
                    and _may_be_cuda(value)
                    and not any(_one_gpu_of_several(rhs) for _, rhs in _stores_of(statement, name))
                ):
                    found.append((name, self.positions[statement].end.line))
        found.sort(key=lambda item: (item[0] != DEVICE_NAME, item[1]))
        return found

    def _star_bound_names(self) -> set[str]:
        """Every name the module's star imports of project modules bind."""
        return {name for names in self.facts.star_bound().values() for name in names}

    def _star_imported(self, statement: cst.CSTNode) -> list[str]:
        """Names a top-level ``from utils import *`` of a project module binds."""
        if not isinstance(statement, cst.SimpleStatementLine):
            return []
        bindings = self.facts.star_bound()
        return sorted(name for small in statement.body for name in bindings.get(id(small), ()))

    # -- torch, module names, enclosing definitions

    def torch_at(self, row: int) -> tuple[str, bool] | None:
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
            for name in self._star_imported(top):  # ``from utils import *`` brings torch
                bound[name] = True
        for name, value in self.facts.module_names.items():
            if value.kind is Kind.IMPORTED and value.qualname == "torch" and name in bound:
                return name, bound[name]
        return None

    def module_bindings(self) -> set[str]:
        """Names bound at module level."""
        if self._module_names is None:
            collector = _Bindings()
            for statement in self.module.body:
                statement.visit(collector)
            self._module_names = collector.names
        return self._module_names

    def enclosing(self, row: int) -> tuple[cst.FunctionDef | None, cst.ClassDef | None]:
        """The innermost function around ``row``, and the class it is a method of."""
        if self._definitions is None:
            self._definitions = [
                (span.start.line, span.end.line, node)
                for node, span in self.positions.items()
                if isinstance(node, cst.FunctionDef | cst.ClassDef)
            ]
        function: cst.FunctionDef | None = None
        klass: cst.ClassDef | None = None
        best = -1
        for start, end, node in self._definitions:
            if start <= row <= end and isinstance(node, cst.FunctionDef) and start > best:
                function, best = node, start
        if function is not None:
            owner = -1
            for start, end, node in self._definitions:
                if not isinstance(node, cst.ClassDef) or not start <= best <= end:
                    continue
                if start > owner and function in klass_methods(node):
                    klass, owner = node, start
        return function, klass

    # -- where a new module-level line goes

    def new_device_row(self, before_row: int) -> int:
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


def klass_methods(klass: cst.ClassDef) -> list[cst.CSTNode]:
    return [s for s in klass.body.body if isinstance(s, cst.FunctionDef)]


def _may_be_cuda(value: Value) -> bool:
    """A device a fix may write in place of CUDA: one that may be CUDA (a selection, or
    one not known), not a device fixed elsewhere (``device = "cpu"``: moving there would
    take the code off the GPU where it ran)."""
    return value.where is None or "cuda" in value.where


def _one_gpu_of_several(value: cst.BaseExpression) -> bool:
    """A CUDA device by its index (``"cuda:%d" % rank``, ``f"cuda:{rank}"``, ``"cuda:1"``,
    ``torch.device("cuda", rank)``): not the device to write for ``"cuda"``, which is the
    current one (a remap target kept beside the real device, Cutie's trainer)."""
    if isinstance(value, cst.BinaryOperation | cst.FormattedString | cst.ConcatenatedString):
        return True
    if isinstance(value, cst.SimpleString):
        text = value.evaluated_value
        return isinstance(text, str) and text.startswith("cuda:") and text != "cuda:0"
    if isinstance(value, cst.Call) and len(value.args) > 1:
        index = value.args[1].value
        return not (isinstance(index, cst.Integer) and index.evaluated_value == 0)
    return False


def _device_of_value(value: cst.BaseExpression) -> str | None:
    """``x.device`` / ``next(m.parameters()).device``: the device of a value (or None)."""
    if isinstance(value, cst.Attribute) and value.attr.value == DEVICE_NAME:
        return _EMPTY.code_for_node(value.value)
    return None


def _first_statement(body: cst.IndentedBlock) -> cst.BaseStatement | None:
    """The statement a binding goes above: the first one after the docstring."""
    statements = list(body.body)
    if statements and _is_docstring_statement(statements[0]):
        statements = statements[1:]
    return statements[0] if statements else None


def _is_docstring_statement(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, cst.SimpleString | cst.ConcatenatedString)
    )


def _parameters(function: cst.FunctionDef) -> list[str]:
    params = function.params
    names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    names += [
        s.name.value for s in (params.star_arg, params.star_kwarg) if isinstance(s, cst.Param)
    ]
    return names


def _local_names(function: cst.FunctionDef) -> set[str]:
    """Names bound in a function's own body (not in nested scopes)."""
    collector = _Bindings()
    function.body.visit(collector)
    return collector.names


def _stores_of(
    node: cst.CSTNode, name: str
) -> Iterator[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """``name = value`` in ``node``'s own scope: (target, value) pairs; other bindings
    (``for``, ``with``, augmented or tuple targets) as (target, target): never a device."""
    if isinstance(node, cst.Assign):
        for target in node.targets:
            if isinstance(target.target, cst.Name) and target.target.value == name:
                yield target.target, node.value
            elif name in _names_in(target.target):
                yield target.target, target.target
    elif isinstance(node, cst.AnnAssign | cst.AugAssign | cst.For | cst.NamedExpr | cst.AsName):
        bound = node.name if isinstance(node, cst.AsName) else node.target
        if isinstance(bound, cst.BaseExpression) and name in _names_in(bound):
            value = node.value if isinstance(node, cst.AnnAssign) and node.value else bound
            yield bound, value
    for child in node.children:
        if not isinstance(child, cst.FunctionDef | cst.ClassDef | cst.Lambda):
            yield from _stores_of(child, name)


def _names_in(target: cst.CSTNode) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    return set().union(*(_names_in(child) for child in target.children))


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


class _Bindings(cst.CSTVisitor):
    """Names assigned in one scope's body, not descending into nested scopes."""

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
            self.names.add(_EMPTY.code_for_node(node.name).split(".")[0])

    def _add(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.names.add(target.value)
        elif isinstance(target, cst.Tuple | cst.List):
            for element in target.elements:
                self._add(element.value)
        elif isinstance(target, cst.StarredElement):
            self._add(target.value)
