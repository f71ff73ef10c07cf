"""What a loop does: whether it trains, and which of its branches run on every training
iteration (``Site.loop``, ``Site.inner_loop``; DEV002, DEV012).

A loop trains when its body steps an optimizer, runs ``backward()`` or clears an
optimizer's gradients outside ``no_grad`` and hands it to a helper (the step is then a
scaler's of another module: ``loss_scaler(loss, optimizer)``),
itself or through one of the file's functions that does (``steps``). A branch runs on every iteration when
its test is a setting fixed before the loop, or when it is the gate of gradient
accumulation. These are syntactic scans, on a hot path: they walk statements by type,
not with libcst's visitors, except for ``_TrainingStep``.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from devlint.analysis import name_guesses
from devlint.analysis.syntax import dotted_name, own_nodes, source_of
from devlint.records import record


@record(slots=True)
class Loop:
    """A ``for`` or ``while`` loop (``Site.loop``: one over a data loader, whose batch
    elements start on the CPU; ``Site.inner_loop``: the innermost loop of any kind)."""

    node: cst.For | cst.While
    over_loader: bool = False
    # Whether a function of this file, by name, steps an optimizer or runs ``backward()``
    # itself (``backwards(loss, optimizer)``): calling one in the body is a training step.
    stepping: Callable[[str], bool] | None = None
    _trains: bool | None = None
    _bound: frozenset[str] | None = None
    _training_tests: frozenset[str] | None = None  # tests of the ``if``s its steps are in
    _step_gates: frozenset[str] | None = None  # those that step without ``backward()``
    _rolls_out: bool | None = None

    @property
    def rolls_out(self) -> bool:
        """An environment rollout: its body steps an environment (``env.step(action)``,
        ``envs.step(...)``): its syncs hand actions over, once per environment step."""
        if self._rolls_out is None:
            self._rolls_out = any(
                type(node) is cst.Call
                and type(node.func) is cst.Attribute
                and node.func.attr.value == "step"
                and bool(node.args)
                and name_guesses.names_an_environment(dotted_name(node.func.value) or "")
                for node in own_nodes(self.node.body)
            )
        return self._rolls_out

    @property
    def trains(self) -> bool:
        """A training loop: its body steps an optimizer or runs ``backward()`` (not an
        evaluation or sampling loop). A loop over a loader trains where a loop nested in it
        steps (``for _ in range(n_critic)``); any other loop only by its own steps (a loop
        in it that steps each optimizer it iterates over is one of them): an epoch loop
        around a training loop runs its own statements once per epoch."""
        if self._trains is None:
            finder = _TrainingStep(nested=self.over_loader, stepping=self.stepping)
            self.node.body.visit(finder)
            self._trains = finder.steps
        return self._trains

    def every_training_iteration(self, test: cst.BaseExpression, taken: bool) -> bool:
        """Whether one branch of an ``if`` in this loop's body (``taken``: its body, else
        the ``else``) runs on every iteration of a training run of the loop.

        Its test must be a setting fixed before the loop (``if is_train:``,
        ``if config["log"]:``, ``if phase == Phase.TRAIN:``), made of names the loop does
        not bind, attributes, constant subscripts, ``not``, ``and``/``or``, comparisons
        and conversions (``int(version[0])``); a counter test (``if step % 100 == 0:``)
        or another call varies (periodic logging). And where the loop trains only under that test (a loop shared by
        training and validation), its ``else`` is the validation pass. The body of an
        ``if`` that steps the optimizer after a ``backward()`` outside it (gradient
        accumulation) runs on every training step, whatever its test.
        """
        if _presence_test(test) == taken:
            # ``if heatmaps_losses[idx] is not None:`` (HigherHRNet's optional loss terms):
            # present on every step of a run that computes it, not a periodic gate
            return True
        fixed = _fixed(test, frozenset())
        if not fixed and not taken:
            return False  # not made of settings at all: no need to scan the loop
        if self._bound is None or self._training_tests is None or self._step_gates is None:
            scan = _LoopScan()
            scan.statement(self.node)
            self._bound, self._training_tests = frozenset(scan.bound), frozenset(scan.tests)
            self._step_gates = frozenset(scan.step_gates)
        if taken and self._step_gates and source_of(test) in self._step_gates:
            # The gate of gradient accumulation (``if (i + 1) % accumulate == 0:
            # optimizer.step()``, ``backward()`` outside it): its body runs once per
            # training step, a counter test or not. A gate that runs its own
            # ``backward()`` is a second update on some iterations (a GAN's generator).
            return True
        if not fixed or not _fixed(test, self._bound):
            return False
        return taken or not self._training_tests or source_of(test) not in self._training_tests


def _presence_test(test: cst.BaseExpression) -> bool | None:
    """True for ``x is not None``, False for ``x is None``; None for any other test."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    if not (type(target.comparator) is cst.Name and target.comparator.value == "None"):
        return None
    if type(target.operator) is cst.IsNot:
        return True
    return False if type(target.operator) is cst.Is else None


def _fixed(expr: cst.BaseExpression, bound: frozenset[str]) -> bool:
    kind = type(expr)
    if kind in (cst.SimpleString, cst.Integer, cst.Float):
        return True
    if kind is cst.Name or kind is cst.Attribute:
        name = dotted_name(expr)
        if name is None:
            return False
        parts = name.split(".")
        return not any(".".join(parts[:end]) in bound for end in range(1, len(parts) + 1))
    if kind is cst.Subscript:
        assert isinstance(expr, cst.Subscript)
        return _fixed(expr.value, bound) and all(
            type(element.slice) is cst.Index
            and type(element.slice.value) in (cst.SimpleString, cst.Integer)
            for element in expr.slice
        )
    if kind is cst.UnaryOperation:
        assert isinstance(expr, cst.UnaryOperation)
        return type(expr.operator) is cst.Not and _fixed(expr.expression, bound)
    if kind is cst.BooleanOperation:
        assert isinstance(expr, cst.BooleanOperation)
        return _fixed(expr.left, bound) and _fixed(expr.right, bound)
    if kind is cst.Comparison:
        assert isinstance(expr, cst.Comparison)
        return _fixed(expr.left, bound) and all(
            _fixed(target.comparator, bound) for target in expr.comparisons
        )
    if kind is cst.Call:  # ``int(version[0]) > 0``: a conversion of a setting is one too
        assert isinstance(expr, cst.Call)
        func = expr.func
        if not expr.args:  # ``if dist.is_primary():``: which process this is
            name = dotted_name(func)
            return name is not None and name_guesses.asks_which_process(name)
        return (
            isinstance(func, cst.Name)
            and func.value in _CONVERSIONS
            and all(arg.keyword is None and _fixed(arg.value, bound) for arg in expr.args)
        )
    return False


_CONVERSIONS = frozenset({"int", "float", "str", "bool", "len"})


class _LoopScan:
    """One walk of a loop's statements (not its expressions, not libcst's visitors: a hot
    path): the names it binds (dotted: ``self.step``) and the tests (as source) of the
    ``if`` statements whose body steps an optimizer or runs ``backward()`` (an expression
    statement: ``loss.backward()``, ``scaler.step(optimizer)``) and whose ``else`` does
    not."""

    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.tests: set[str] = set()
        # Of those, the ``if``s that step an optimizer without running ``backward()``: the
        # gate of gradient accumulation, which completes the step of every iteration.
        self.step_gates: set[str] = set()

    def statement(self, node: cst.CSTNode) -> bool:
        """Scan a statement (or block); whether it steps, outside nested loops."""
        kind = type(node)
        if kind is cst.SimpleStatementLine or kind is cst.SimpleStatementSuite:
            return any([self.small(small) for small in node.body])  # type: ignore[attr-defined]
        if kind is cst.IndentedBlock or kind is cst.Else or kind is cst.Finally:
            body = node.body  # type: ignore[attr-defined]
            return any(
                [self.statement(line) for line in (body if kind is cst.IndentedBlock else [body])]
            )
        if kind is cst.If:
            assert isinstance(node, cst.If)
            body = self.statement(node.body)
            orelse = node.orelse is not None and self.statement(node.orelse)
            if body and not orelse:
                self.tests.add(source_of(node.test))
                if not _runs_backward(node.body):
                    self.step_gates.add(source_of(node.test))
            return body or orelse
        if kind is cst.For or kind is cst.While:
            if kind is cst.For:
                self.bind(node.target)  # type: ignore[attr-defined]
            self.statement(node.body)  # type: ignore[attr-defined]
            return False  # a nested loop's steps stay there
        if kind is cst.With:
            assert isinstance(node, cst.With)
            for item in node.items:
                if item.asname is not None:
                    self.bind(item.asname.name)
            return self.statement(node.body)
        if kind is cst.Try or kind is cst.TryStar:
            parts = [node.body, *node.handlers, node.orelse, node.finalbody]  # type: ignore[attr-defined]
            return any(
                [
                    self.statement(part.body if type(part) in _HANDLERS else part)
                    for part in parts
                    if part is not None
                ]
            )
        return False  # a nested ``def`` or ``class``: not this loop's code

    def small(self, small: cst.BaseSmallStatement) -> bool:
        kind = type(small)
        if kind is cst.Assign:
            assert isinstance(small, cst.Assign)
            for target in small.targets:
                self.bind(target.target)
        elif kind is cst.AugAssign or kind is cst.AnnAssign:
            self.bind(small.target)  # type: ignore[attr-defined]
        method = _called_method(small)
        if method == "step":
            call = small.value  # type: ignore[attr-defined]
            receiver = dotted_name(call.func.value) or ""
            return _steps_optimizer(call) and not name_guesses.names_a_scheduler(receiver)
        return method == "backward"

    def bind(self, target: cst.BaseExpression) -> None:
        if type(target) in (cst.Tuple, cst.List):
            for element in target.elements:  # type: ignore[attr-defined]
                self.bind(element.value)
        elif type(target) is cst.StarredElement:
            self.bind(target.value)
        elif (name := dotted_name(target)) is not None:
            self.bound.add(name)


_HANDLERS = (cst.ExceptHandler, cst.ExceptStarHandler)


def _runs_backward(node: cst.CSTNode) -> bool:
    """Whether a block runs ``x.backward()`` as a statement, outside nested loops."""
    kind = type(node)
    if kind is cst.SimpleStatementLine or kind is cst.SimpleStatementSuite:
        return any(_called_method(small) == "backward" for small in node.body)  # type: ignore[attr-defined]
    if kind is cst.IndentedBlock:
        return any(_runs_backward(line) for line in node.body)  # type: ignore[attr-defined]
    if kind is cst.With or kind is cst.Else:
        return _runs_backward(node.body)  # type: ignore[attr-defined]
    if kind is cst.If:  # its ``elif``s and ``else`` too
        assert isinstance(node, cst.If)
        return _runs_backward(node.body) or (
            node.orelse is not None and _runs_backward(node.orelse)
        )
    return False


def _steps_each(loop: cst.For) -> bool:
    """A loop over optimizers that steps each (``for opt, sched in zip(optimizers,
    schedulers): opt.step()``): one training step of the loop around it, not a loop of its
    own."""
    target = loop.target
    targets = [e.value for e in target.elements] if isinstance(target, cst.Tuple) else [target]
    names = {t.value for t in targets if isinstance(t, cst.Name)}
    body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else ()
    for line in body:
        for small in line.body if isinstance(line, cst.SimpleStatementLine) else ():
            call = small.value if isinstance(small, cst.Expr) else None
            if isinstance(call, cst.Call) and _is_optimizer_step(call):
                receiver = call.func.value  # type: ignore[attr-defined]
                if isinstance(receiver, cst.Name) and receiver.value in names:
                    return True
    return False


def _steps_optimizer(call: cst.Call) -> bool:
    """``optimizer.step()`` or ``scaler.step(optimizer)``; not ``scheduler.step(loss.item())``
    (a plateau scheduler's step takes the metric, a value, not an optimizer)."""
    if not call.args:
        return True
    if len(call.args) != 1 or call.args[0].keyword is not None:
        return False
    return type(call.args[0].value) in (cst.Name, cst.Attribute)


def _is_optimizer_step(call: cst.Call) -> bool:
    """``x.step()``: an optimizer's (or a scheduler's) step takes no argument; an
    environment's ``env.step(action)`` is a rollout's, not a training step."""
    func = call.func
    return type(func) is cst.Attribute and func.attr.value == "step" and not call.args


def _called_method(small: cst.BaseSmallStatement) -> str | None:
    """``backward`` for ``loss.backward()`` as a statement: the method a call statement calls."""
    call = small.value if type(small) is cst.Expr else None
    if type(call) is not cst.Call or type(call.func) is not cst.Attribute:
        return None
    return call.func.attr.value


def steps(function: cst.FunctionDef) -> bool:
    """Whether a function's own body (not its nested loops) steps an optimizer or runs
    ``backward()``: ``def backwards(loss, optimizer): loss.backward(); optimizer.step()``."""
    finder = _TrainingStep(nested=False)
    function.body.visit(finder)
    return finder.steps


class _TrainingStep(cst.CSTVisitor):
    """Finds ``loss.backward()``, ``optimizer.step()``, ``scaler.scale(loss).backward()``,
    ``optimizer.zero_grad()`` outside ``no_grad`` (the step itself may be a helper's:
    ``loss_scaler(loss, optimizer)``), and calls of this file's functions that do."""

    def __init__(self, nested: bool, stepping: Callable[[str], bool] | None = None) -> None:
        self.found = False
        self.nested = nested  # look into nested loops
        self.stepping = stepping  # whether one of this file's functions steps
        # Not looking into nested loops: one that steps each optimizer it iterates over
        # (``for opt in optimizers: opt.step()``), and one that steps on its own (the
        # training loop of an epoch loop, where such a loop only steps the schedulers).
        self.steps_each = self.inner_steps = False
        self.no_grad = 0  # inside ``with torch.no_grad():`` (a stray ``zero_grad()`` there)
        # ``optimizer.zero_grad()`` outside ``no_grad``, and what calls are handed
        # (``loss_scaler(loss, optimizer)``): an optimizer cleared and handed on is stepped
        self.cleared: set[str] = set()
        self.handed: set[str] = set()

    @property
    def steps(self) -> bool:
        """Whether the code visited steps: itself, through a helper handed the optimizer
        it clears, or by a loop over its optimizers where no other loop in it steps on its
        own."""
        handed_on = bool(self.cleared & self.handed)
        return self.found or handed_on or (self.steps_each and not self.inner_steps)

    def visit_Call(self, node: cst.Call) -> bool:
        func = node.func
        method = func.attr.value if type(func) is cst.Attribute else None
        for arg in node.args:
            handed = dotted_name(arg.value)
            if handed is not None:
                self.handed.add(handed)
        if method == "backward" or _is_optimizer_step(node):
            self.found = True
        elif method == "zero_grad" and not self.no_grad and isinstance(func, cst.Attribute):
            cleared = dotted_name(func.value)
            if cleared is not None:  # ``loss_scaler(loss, optimizer)`` steps it
                self.cleared.add(cleared)
        elif not self.found and self.stepping is not None:
            if type(func) is cst.Name:
                self.found = self.stepping(func.value)
            elif method is not None and isinstance(func, cst.Attribute):
                receiver = func.value
                if isinstance(receiver, cst.Name) and receiver.value == "self":
                    self.found = self.stepping(f"self.{method}")
        return not self.found

    def visit_With(self, node: cst.With) -> None:
        self.no_grad += _disables_grad(node)

    def leave_With(self, original_node: cst.With) -> None:
        self.no_grad -= _disables_grad(original_node)

    def visit_For(self, node: cst.For) -> bool:
        if not self.nested and _steps_each(node):
            self.steps_each = True  # ``for opt in optimizers: opt.step()``
        elif not self.nested:
            self.inner_steps = self.inner_steps or _steps_an_optimizer(node)
        return self.nested and not self.found

    def visit_While(self, node: cst.While) -> bool:
        if not self.nested:
            self.inner_steps = self.inner_steps or _steps_an_optimizer(node)
        return self.nested and not self.found


def _disables_grad(node: cst.With) -> bool:
    """``with torch.no_grad():`` / ``torch.inference_mode()``."""
    return any(
        type(item.item) is cst.Call
        and (dotted_name(item.item.func) or "").rsplit(".", 1)[-1] in ("no_grad", "inference_mode")
        for item in node.items
    )


class _OptimizerStep(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Call(self, node: cst.Call) -> bool:
        self.found = self.found or _is_optimizer_step(node)
        return not self.found


def _steps_an_optimizer(loop: cst.For | cst.While) -> bool:
    """Whether a loop's body, nested loops included, calls ``x.step()``."""
    finder = _OptimizerStep()
    loop.body.visit(finder)
    return finder.found
