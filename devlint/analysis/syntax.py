"""Small readers of libcst syntax shared by the analysis: names, literals, parameters.

Nothing here knows about devices or torch; it turns syntax into plain Python values.
The checks use ``type(node) is`` rather than ``isinstance``: libcst's node classes are
ABCs, whose failing ``isinstance`` checks go through ABCMeta (a hot path).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import libcst as cst


def dotted_name(expr: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else None."""
    parts: list[str] = []
    while type(expr) is cst.Attribute:
        parts.append(expr.attr.value)
        expr = expr.value
    if type(expr) is not cst.Name:
        return None
    parts.append(expr.value)
    return ".".join(reversed(parts))


def module_name(expr: cst.BaseExpression | None) -> str:
    """The dotted name of an import's module (empty for ``from . import x``)."""
    if expr is None:
        return ""
    return dotted_name(expr) or ""


_EMPTY = cst.Module(body=[])


def source_of(node: cst.CSTNode) -> str:
    """The source code of a node."""
    return _EMPTY.code_for_node(node)


def leaf_of(name: str) -> str:
    """``c`` for ``a.b.c``."""
    return name.rsplit(".", 1)[-1]


def string_value(expr: cst.BaseExpression) -> str | None:
    """The value of a string literal; plain ones without ``literal_eval`` (a hot path)."""
    if type(expr) is cst.SimpleString:
        raw = expr.value
        if raw[0] in "'\"" and "\\" not in raw:
            return raw[3:-3] if raw[:3] in ('"""', "'''") else raw[1:-1]
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def number_value(node: cst.Integer | cst.Float) -> object:
    """The value of a number literal, without ``literal_eval`` where plain."""
    try:
        text = node.value.replace("_", "")
        return int(text, 0) if type(node) is cst.Integer else float(text)
    except ValueError:  # 0o17-style octal is fine for int(..., 0); this is the rest
        return node.evaluated_value


def subscript_key(node: cst.Subscript) -> str | None:
    """``cfg.[cuda]`` for ``cfg["cuda"]``: a constant string key read like an attribute."""
    base = dotted_name(node.value)
    if base is None or len(node.slice) != 1:
        return None
    index = node.slice[0].slice
    if type(index) is not cst.Index:
        return None
    key = string_value(index.value)
    return f"{base}.[{key}]" if key is not None else None


def parameters(params: cst.Parameters) -> list[cst.Param]:
    """Every parameter of a function, ``*args`` and ``**kwargs`` included."""
    result = [*params.posonly_params, *params.params, *params.kwonly_params]
    if isinstance(params.star_arg, cst.Param):
        result.append(params.star_arg)
    if params.star_kwarg is not None:
        result.append(params.star_kwarg)
    return result


def child_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The children of a node: the nodes libcst's ``children`` lists, in field order rather
    than source order, read from its fields (``children`` runs a visitor over the node,
    costly on a hot path). For questions that do not depend on order."""
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = tuple(field.name for field in dataclasses.fields(node))
    for name in names:
        value = getattr(node, name)
        if type(value) is tuple or type(value) is list:
            yield from (item for item in value if isinstance(item, cst.CSTNode))
        elif isinstance(value, cst.CSTNode):
            yield value


_FIELDS: dict[type, tuple[str, ...]] = {}


def encloses(root: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Whether ``node`` is ``root`` or lies inside it."""
    stack = [root]
    while stack:
        current = stack.pop()
        if current is node:
            return True
        stack.extend(child_nodes(current))
    return False


def strings_in(node: cst.CSTNode) -> list[cst.SimpleString | cst.FormattedStringText]:
    """Every string literal (and f-string text part) under ``node``."""
    if isinstance(node, cst.SimpleString | cst.FormattedStringText):
        return [node]
    return [found for child in node.children for found in strings_in(child)]


def is_main_test(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"``."""
    if type(test) is not cst.Comparison:
        return False
    sides = {dotted_name(test.left), string_value(test.comparisons[0].comparator)}
    return sides == {"__name__", "__main__"}


class _MethodShape(cst.CSTVisitor):
    """Whether a method reads ``self.<...>`` and whether it moves or converts anything."""

    def __init__(self) -> None:
        self.reads_self = False
        self.moves = False
        self.places = False  # ``.to(...)``, ``.cuda(...)``

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if type(node.value) is cst.Name and node.value.value == "self":
            self.reads_self = True

    def visit_Call(self, node: cst.Call) -> None:
        if type(node.func) is cst.Attribute and node.func.attr.value in _MOVES_OR_CONVERTS:
            self.moves = True
            self.places = self.places or node.func.attr.value in ("to", "cuda")


_MOVES_OR_CONVERTS = frozenset({"to", "cuda", "cpu", "numpy", "tolist", "item"})


def decorator_name(decorator: cst.Decorator) -> str | None:
    """``pyrallis.wrap`` for ``@pyrallis.wrap()`` and ``@pyrallis.wrap``."""
    target = decorator.decorator
    return dotted_name(target.func if type(target) is cst.Call else target)


def changes_binding(decorator: cst.Decorator) -> bool:
    """``@staticmethod``, ``@property``, ``@x.setter``: not a plain method of the instance
    (``@torch.no_grad()`` and other wrappers are)."""
    name = decorator_name(decorator) or ""
    return leaf_of(name) in ("staticmethod", "classmethod", "property", "cached_property", "setter")


def moves_to_a_device(function: cst.FunctionDef) -> bool:
    """Whether a function's body (nested functions included) moves something with
    ``.to(...)`` or ``.cuda(...)``."""
    shape = _MethodShape()
    function.body.visit(shape)
    return shape.places


def lambda_moves(call: cst.Call) -> list[cst.Call]:
    """The moves of the one lambda among a call's arguments that moves its one parameter
    to a device (``lambda x: x.to(device)``; ``lambda t: t.cuda() if torch.is_tensor(t)
    else t``), handed with the data to apply it to (``dict_apply(batch, lambda x: ...)``);
    none when the lambda does anything else."""
    lambdas = [arg.value for arg in call.args if type(arg.value) is cst.Lambda]
    if len(lambdas) != 1 or len(call.args) < 2:
        return []
    function = lambdas[0]
    assert isinstance(function, cst.Lambda)
    params = function.params
    starred = isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None
    if len(params.params) != 1 or starred or params.kwonly_params or params.posonly_params:
        return []
    name = params.params[0].name.value
    body = function.body
    branches = (body.body, body.orelse) if type(body) is cst.IfExp else (body,)
    moves = [
        branch for branch in branches if isinstance(branch, cst.Call) and _moves_name(branch, name)
    ]
    kept = [branch for branch in branches if type(branch) is cst.Name and branch.value == name]
    return moves if moves and len(moves) + len(kept) == len(branches) else []


def _moves_name(node: cst.Call, name: str) -> bool:
    """``name.to(...)``, ``name.cuda()`` (``.mps()``, ``.xpu()``)."""
    if type(node.func) is not cst.Attribute:
        return False
    receiver = node.func.value
    placing = node.func.attr.value in ("to", "cuda", "mps", "xpu")
    return placing and type(receiver) is cst.Name and receiver.value == name


def computes_on_parameters(method: cst.FunctionDef) -> bool:
    """A module method that reads ``self.<...>`` (its layers, buffers) and neither moves
    nor converts anything: called on a moved module, its inputs meet the module's
    device and its result stays there. One that moves its inputs itself
    (``x.to(self.device)``) or hands back host data (``.cpu().numpy()``) is not one."""
    shape = _MethodShape()
    method.body.visit(shape)
    return shape.reads_self and not shape.moves


def receivers(call: cst.Call) -> Iterator[cst.BaseExpression]:
    """The receivers of a method chain, from the outside in: ``x.float().to(d)`` gives
    ``x.float()``, then ``x``. The walk ends at the first receiver that is not itself a
    method call (``x``, ``make()``, ``torch``)."""
    node: cst.BaseExpression = call
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        node = node.func.value
        yield node


def operand_roots(node: cst.CSTNode | None) -> set[str]:
    """The names an operand computes from: ``x`` for ``x``, ``x.data``, ``x[0]``,
    ``-x``, ``x.std()``, ``0.5 * x.std()`` (not a hot path: ``isinstance`` reads best)."""
    while True:
        if isinstance(node, cst.Attribute | cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call):
            node = node.func
        elif isinstance(node, cst.UnaryOperation):
            node = node.expression
        elif isinstance(node, cst.BinaryOperation):
            return operand_roots(node.left) | operand_roots(node.right)
        else:
            return {node.value} if isinstance(node, cst.Name) else set()


def own_nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under ``root`` (itself included) outside nested ``def``, ``class`` and
    ``lambda`` bodies, in no particular order."""
    pending = [root]
    while pending:
        node = pending.pop()
        yield node
        if type(node) not in (cst.FunctionDef, cst.ClassDef, cst.Lambda) or node is root:
            pending.extend(child_nodes(node))


def items_moved_in_place(function: cst.FunctionDef) -> dict[int, frozenset[str]]:
    """The positional parameters whose items the body replaces by moved copies
    (``batch["x"] = batch["x"].cuda()``), by index, with the move methods it calls."""
    positional = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    moves: dict[int, set[str]] = {}
    for name, move in item_moves(function.body):
        if name in positional and isinstance(move.func, cst.Attribute):
            moves.setdefault(positional.index(name), set()).add(move.func.attr.value)
    return {index: frozenset(methods) for index, methods in moves.items()}


def item_moves(root: cst.CSTNode) -> Iterator[tuple[str, cst.Call]]:
    """``name[...] = <expr>.cuda()`` / ``.to(...)`` under ``root``: the name whose item is
    replaced by a moved copy, and the move."""
    for node in own_nodes(root):
        if type(node) is not cst.Assign:
            continue
        value = node.value
        if type(value) is not cst.Call or type(value.func) is not cst.Attribute:
            continue
        if value.func.attr.value not in ("cuda", "to"):
            continue
        for target in node.targets:
            item = target.target
            if type(item) is cst.Subscript and type(item.value) is cst.Name:
                yield item.value.value, value
