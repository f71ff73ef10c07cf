"""The interpreter's operators: arithmetic, boolean operators and comparisons.

Operators over tensors ``combine`` their operands: the result may be wherever any operand
may be, and several tensors meeting are recorded as a ``Mix`` (DEV006 reads them), as is
a CPU tensor indexed by device indices. Boolean operators and comparisons over
availability tests compute guard values (``guards.py``); a comparison's operands are read
to test them, not to place anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import libcst as cst

from devlint.analysis import guards, torch_api
from devlint.analysis.facts import Mix, Operand
from devlint.analysis.interpreter import Interpreter
from devlint.analysis.syntax import source_of
from devlint.analysis.values import (
    CPU,
    CUDA,
    UNKNOWN,
    Kind,
    Placement,
    Value,
    chain,
    follow_operands,
    join,
    may_be_accelerator,
    placed_on_accelerator,
)

FOLLOWING = (Kind.TENSOR, Kind.UNKNOWN)  # what may follow a flag into a result


class Operators:
    """Operator handlers (see the module docstring)."""

    def __init__(self, core: Interpreter) -> None:
        self.core = core

    def index_mix(
        self, node: cst.Subscript, base: Value, index_node: cst.BaseExpression, index: Value
    ) -> None:
        """``cpu_tensor[device_indices]`` fails ("indices should be either on cpu or on the
        same device as the indexed tensor"); a device tensor takes CPU indices."""
        if (
            base.kind is Kind.TENSOR
            and base.where == CPU
            and not base.scalar
            and index.kind is Kind.TENSOR
            and may_be_accelerator(index.where)
        ):
            operands = (Operand(node.value, base), Operand(index_node, index))
            self.core.rec.mixes[id(node)] = Mix(node, operands, self.core.site())

    def binary_operation(self, node: cst.BinaryOperation) -> Value:
        expr = self.core.expressions.expr
        # Left-nested chains (a + b + c + ...) are flattened so that long ones cannot
        # exhaust the recursion limit.
        chain: list[cst.BinaryOperation] = []
        current: cst.BaseExpression = node
        while type(current) is cst.BinaryOperation:
            assert isinstance(current, cst.BinaryOperation)
            chain.append(current)
            current = current.left
        left_node: cst.BaseExpression = current
        left = expr(current)
        for operation in reversed(chain):
            right = expr(operation.right)
            if _indexes_device(operation, left):
                left = replace(left, constant=None)  # ``"cuda:" + str(rank)``: that device
            elif _formats_cuda(operation, left):  # ``"cuda:%d" % gpu_id``
                left = Value(
                    Kind.DEVICE,
                    CUDA,
                    cuda_defaults=self.core.expressions.unguarded(left_node, CUDA),
                )
            elif _concatenates(operation, left_node):
                left = join(left, right)  # ``(t,) + u.split(n)``: a sequence of both
            else:
                left = self.combine(operation, [(left_node, left), (operation.right, right)])
            self.core.rec.values[id(operation)] = left
            left_node = operation
        return left

    def combine(
        self, node: cst.CSTNode, operands: Sequence[tuple[cst.BaseExpression | None, Value]]
    ) -> Value:
        """The result of an operation over tensors; records a ``Mix`` when several meet."""
        tensors = [(n, v) for n, v in operands if v.kind is Kind.TENSOR]
        if not tensors:
            arrays = [v for _, v in operands if v.kind is Kind.ARRAY]
            if arrays:  # NumPy arithmetic: float64 if an operand is
                return Value(Kind.ARRAY, float64=next((a.float64 for a in arrays if a.float64), ""))
            return _computed_from_moved([v for _, v in operands])
        if len(tensors) > 1:  # 0-dim tensors from numbers mix with any device
            tensors = [(n, v) for n, v in tensors if not v.scalar] or tensors[:1]
        if len(tensors) >= 2:
            operands_ = tuple(Operand(n, v) for n, v in tensors)
            self.core.rec.mixes[id(node)] = Mix(node, operands_, self.core.site())
        # A value of unknown kind that was moved (``x.to(device)``, a parameter ``x``) is
        # placed like a tensor: where the result may be, not a mix to compare.
        moved = [v.where for _, v in operands if v.kind is Kind.UNKNOWN and v.where]
        known = [v.where for _, v in tensors if v.where is not None] + moved
        where: Placement = None
        if known and (
            len(known) == len(tensors) + len(moved) or any(w and w != CPU for w in known)
        ):
            # On an accelerator if any operand may be; CPU only when every operand is
            # (a CPU tensor meeting one of unknown placement gives unknown).
            where = frozenset().union(*known)
        # A result computed from CPU factories (and values of unknown placement, such as
        # the inputs of ``forward``) still comes from those factories.
        cpu_only = where is None or where == CPU
        origins = tuple(o for _, v in tensors for o in v.origins) if cpu_only else ()
        from_batch = all(v.from_batch for _, v in tensors)
        scalar = all(v.scalar for _, v in tensors) and not _gives_shape(node)
        # a CPU vector scaled by what it is computed with (``d / (norm(d) + 1e-7)``): still
        # a vector, whose items are 0-dim (what a mismatch report would rest on is absent)
        vector = (
            any(v.vector for _, v in tensors)
            and all(v.where == CPU for _, v in tensors)
            and not _gives_shape(node)
        )
        float64 = next((v.float64 for _, v in tensors if v.float64), "")
        placed = chain(*(v.placed for _, v in tensors if may_be_accelerator(v.where)))
        # placed only by what unseen functions returned (``(1 - lam) * x``): still inferred
        evident = [v for _, v in operands if placed_on_accelerator(v)]
        inferred = where if may_be_accelerator(where) and not evident else None
        result = Value(
            Kind.TENSOR,
            where,
            from_batch=from_batch,
            scalar=scalar,
            vector=vector and not scalar,
            origins=origins,
            float64=float64,
            placed=placed,
            computed_from=inferred,
        )
        return follow_operands(result, [v for _, v in operands if v.kind in FOLLOWING])

    def boolean_operation(self, node: cst.BooleanOperation) -> Value:
        expr = self.core.expressions.expr
        left = expr(node.left)
        is_and = type(node.operator) is cst.And
        guarded = guards.is_cuda_guard(left, +1 if is_and else -1)
        required = self.core.cuda_required
        if guards.cuda_ids_test(node.left) == (+1 if is_and else -1):
            self.core.cuda_required = True
        with self.core.scope(guarded=self.core.ctx.guarded or guarded):
            right = expr(node.right)  # may not run: what it requires stays with it
        self.core.cuda_required = required
        combined = guards.boolean(left, right, is_and)
        if (
            combined is not None
            and is_and
            and (left.kind is Kind.GUARD) != (right.kind is Kind.GUARD)
        ):
            # ``not args.no_cuda and torch.cuda.is_available()``: gated by the user's part.
            setting = node.right if left.kind is Kind.GUARD else node.left
            return guards.gated(combined, source_of(setting), self.core.ctx.function)
        if combined is not None:
            return combined
        return join(left, right) if left.kind is right.kind else UNKNOWN

    def comparison(self, node: cst.Comparison) -> Value:
        expr = self.core.expressions.expr
        comparing, self.core.comparing = self.core.comparing, True
        try:  # ``device == torch.device("cuda")`` reads ``device`` to test it, not to place
            left = expr(node.left)
            operands: list[tuple[cst.BaseExpression | None, Value]] = [(node.left, left)]
            for target in node.comparisons:
                operands.append((target.comparator, expr(target.comparator)))
        finally:
            self.core.comparing = comparing
        for operand, _ in operands:
            self.core.mark_reference(operand)
        if len(node.comparisons) == 1:
            first = node.comparisons[0]
            guard = guards.overridden_setting(
                first.operator, first.comparator, left
            ) or guards.comparison(node.left, first.operator, first.comparator, left)
            if guard is not None:
                return guard
            queried = left
            if type(node.left) is cst.Call:  # ``platform.system() == "Darwin"``
                queried = self.core.rec.values.get(id(node.left.func), UNKNOWN)
            subject = queried.qualname if queried.kind is Kind.IMPORTED else None
            guard = guards.macos_test(subject, first.operator, first.comparator)
            if guard is not None:
                return guard
        return self.combine(node, operands)


def _gives_shape(node: cst.CSTNode) -> bool:
    """``t.view(1, 3)``, ``t.expand(...)``: the result of a 0-dim tensor is no longer 0-dim."""
    return (
        type(node) is cst.Call
        and type(node.func) is cst.Attribute
        and node.func.attr.value in torch_api.SHAPING_METHODS
    )


def _computed_from_moved(values: list[Value]) -> Value:
    """An operation over values of unknown kind moved to a device that may be an
    accelerator (modules have no arithmetic): a tensor computed where they are
    (``loss(learner(x), labels)``); else unknown. Still inferred (``computed_from``) when
    only unseen functions' results placed it."""
    moved = [v for v in values if v.kind is Kind.UNKNOWN and v.where]
    if not moved or not all(may_be_accelerator(v.where) for v in moved):
        return UNKNOWN
    where: frozenset[str] = frozenset().union(*(v.where or () for v in moved))
    inferred = where if all(v.computed_from for v in moved) else None
    return Value(
        Kind.TENSOR, where, placed=chain(*(v.placed for v in moved)), computed_from=inferred
    )


def _indexes_device(operation: cst.BinaryOperation, left: Value) -> bool:
    """``"cuda:" + str(rank)``: a device string with its index appended."""
    return (
        type(operation.operator) is cst.Add
        and left.kind is Kind.DEVICE
        and isinstance(left.constant, str)
        and left.constant.endswith(":")
    )


def _formats_cuda(operation: cst.BinaryOperation, left: Value) -> bool:
    """``"cuda:%d" % rank``: a CUDA device name with its index formatted in."""
    return (
        type(operation.operator) is cst.Modulo
        and left.kind in (Kind.CONSTANT, Kind.DEVICE)
        and isinstance(left.constant, str)
        and left.constant.startswith("cuda:%")
    )


def _concatenates(node: cst.BinaryOperation, left: cst.BaseExpression) -> bool:
    """``+`` with a literal tuple or list on either side: sequences joined, no tensor
    arithmetic."""
    sequences = (cst.Tuple, cst.List)
    return isinstance(node.operator, cst.Add) and (
        isinstance(left, sequences) or isinstance(node.right, sequences)
    )
