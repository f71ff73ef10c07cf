"""The interpreter's statements: blocks, assignments, loops, ``with``, ``try``, ``match``.

A block stops at a statement that always leaves (``return``, ``raise``...); branches of
``try`` and ``match`` run in copies of the environment, joined after without those that
leave. Loops run to a fixpoint. ``if`` goes to ``branches.py``, imports to
``imports.py``, ``def`` and ``class`` to ``definitions.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import libcst as cst

from devlint.analysis import guards, name_guesses, torch_api
from devlint.analysis.facts import Branch
from devlint.analysis.interpreter import Env, Interpreter, Scope, element_of
from devlint.analysis.loops import Loop
from devlint.analysis.syntax import dotted_name, item_moves, string_value
from devlint.analysis.values import (
    MPS,
    UNKNOWN,
    Kind,
    Value,
    chain,
    is_empty_container,
    join_placement,
    join_placements,
    joined_inference,
    may_be_accelerator,
)

# Methods that add a part to a module container (``nn.Sequential``, ``nn.ModuleList``).
_ADDS_MODULES = frozenset({"add_module", "register_module", "append", "extend", "insert"})
# What ends a block early on some path: a check after it may never run.
_EARLY_EXITS = (cst.Return, cst.Break, cst.Continue)
# Statements before an ``if`` its record keeps: a default it overrides may sit a few lines
# up (``device = "cpu"``, ``use_cuda = True``, ``if use_cuda and avail:``; DeepCTR).
PRECEDING = 3
_MAYBE_TENSOR = (Kind.TENSOR, Kind.UNKNOWN)


class Statements:
    """Statement handlers (see the module docstring)."""

    def __init__(self, core: Interpreter) -> None:
        self.core = core
        self.refuses_without_cuda = False  # a function here refuses to run without CUDA
        # of the running ``if`` statement: the statements before it in its block, nearest first
        self.preceding: tuple[cst.BaseStatement, ...] = ()
        # One ``Loop`` per loop statement and kind, however often its code runs: what it
        # computes about its body is computed once.
        self.loops: dict[tuple[int, bool], Loop] = {}

    def block(self, statements: Sequence[cst.BaseStatement]) -> bool:
        """Run a block; True when it always leaves (return, raise, continue, break, exit)."""
        exits = False
        with Scope(self.core, {}):  # what an early exit narrows ends with the block
            for index, statement in enumerate(statements):
                following = statements[index + 1] if index + 1 < len(statements) else None
                is_if = type(statement) is cst.If
                if is_if:
                    self.preceding = tuple(statements[max(index - PRECEDING, 0) : index][::-1])
                if self.statement(statement, following):
                    exits = True
                if self.guards_rest_of_block(statement):
                    self.core.narrow(guarded=True)
                    if self.core.ctx.function is not None and guards.refusal_names_cuda(statement):
                        self.refuses_without_cuda = True
                if is_if:
                    self.validate_flag(statement)
                left_behind = self.backend_left_behind(statement)
                if left_behind:
                    self.core.narrow(backends_tested=self.core.ctx.backends_tested | left_behind)
        return exits

    def backend_left_behind(self, statement: cst.BaseStatement) -> frozenset[str]:
        """``if mps_available: return "mps"``: what follows is the else of that test."""
        if type(statement) is cst.If and statement.orelse is None:
            test = self.core.rec.values.get(id(statement.test), UNKNOWN)
            if test.kind is Kind.GUARD and test.qualname and guards.always_exits(statement.body):
                return frozenset({test.qualname})
        return frozenset()

    def validate_flag(self, statement: cst.BaseStatement) -> None:
        """``if args.cuda and not torch.cuda.is_available(): raise ...``, or ``if args.cuda:``
        whose block checks availability first (``if not torch.cuda.is_available(): raise``):
        from here on the user's flag implies CUDA, so it guards like an availability test."""
        if type(statement) is not cst.If:
            return
        test = statement.test
        key = dotted_name(test)
        if (
            key is not None
            and self.core.rec.values.get(id(test), UNKNOWN).kind in (Kind.UNKNOWN, Kind.CONSTANT)
            and self.checks_first(statement.body)
        ):
            self.core.store(key, guards.CUDA_AVAILABLE)
            return
        if statement.orelse is not None:
            return
        if not (type(test) is cst.BooleanOperation and type(test.operator) is cst.And):
            return
        values = self.core.rec.values
        for tested, check in ((test.left, test.right), (test.right, test.left)):
            # ``if device.type == "cuda" and not torch.cuda.is_available(): return cpu``
            # (cleanrl's ``get_device``): from here on, a CUDA default of ``device`` is
            # used only where CUDA is available.
            placement = guards.placement_test(tested)
            if (
                placement is not None
                and placement[1:] == ("cuda", +1)
                and guards.is_cuda_guard(values.get(id(check), UNKNOWN), -1)
                and guards.always_exits(statement.body)
            ):
                device = self.core.lookup(placement[0])
                if device is not None and device.cuda_defaults:
                    self.core.env[placement[0]] = replace(device, cuda_defaults=())
        for flag, check in ((test.left, test.right), (test.right, test.left)):
            key = dotted_name(flag)
            if (
                key is not None
                and guards.is_cuda_guard(values.get(id(check), UNKNOWN), -1)
                and values.get(id(flag), UNKNOWN).kind is not Kind.GUARD
                and guards.always_exits(statement.body)
            ):
                self.core.store(key, guards.CUDA_AVAILABLE)

    def checks_first(self, body: cst.BaseSuite) -> bool:
        """A block that leaves without CUDA (``if not torch.cuda.is_available(): raise``,
        ``assert``) before anything could leave it early (a ``return``, ``break``...)."""
        if type(body) is not cst.IndentedBlock:
            return False
        for statement in body.body:
            if self.guards_rest_of_block(statement):
                return True
            if type(statement) is not cst.SimpleStatementLine or any(
                type(small) in _EARLY_EXITS for small in statement.body
            ):
                return False
        return False

    def guards_rest_of_block(self, statement: cst.BaseStatement) -> bool:
        """``if not cuda: return`` / ``assert torch.cuda.is_available()``. The ``if`` may
        go on with ``elif``/``else`` branches (VAR's ``initialize``): past it, its first
        test was false, whichever branch ran."""
        if type(statement) is cst.If:
            test = self.core.rec.values.get(id(statement.test), UNKNOWN)
            return guards.exits_without_cuda(statement, test)
        if type(statement) is cst.SimpleStatementLine:
            values = self.core.rec.values
            for small in statement.body:
                if type(small) is cst.Assert:
                    test = values.get(id(small.test), UNKNOWN)
                    if guards.is_cuda_guard(test, +1):
                        return True
                elif type(small) in (cst.Assign, cst.Expr):
                    # ``fabric = L.Fabric(accelerator="cuda")`` raises without CUDA
                    built = values.get(id(small.value), UNKNOWN)  # type: ignore[attr-defined]
                    if guards.requires_cuda(built):
                        return True
        return False

    def suite(self, body: cst.BaseSuite) -> bool:
        if type(body) is cst.IndentedBlock:
            return self.block(body.body)
        assert isinstance(body, cst.SimpleStatementSuite)
        return any(self.small_statement(small) for small in body.body)

    def statement(self, stmt: cst.BaseStatement, following: cst.BaseStatement | None) -> bool:
        kind = type(stmt)
        if kind is cst.SimpleStatementLine:
            assert isinstance(stmt, cst.SimpleStatementLine)
            exits = any(self.small_statement(small) for small in stmt.body)
            if len(stmt.body) == 1 and type(stmt.body[0]) is cst.Expr:
                record = self.core.rec.calls.get(id(stmt.body[0].value))
                if record is not None:
                    record.own_line = record.discarded
            return exits
        if kind is cst.If:
            assert isinstance(stmt, cst.If)
            exits = self.core.branches.if_statement(stmt, following)
            self.core.branches.clamp_to_count(stmt)
            return exits
        if kind is cst.With:
            assert isinstance(stmt, cst.With)
            default = self.core.default_device
            for item in stmt.items:
                value = self.core.expressions.expr(item.item)
                if item.asname is not None:
                    self.core.bind(item.asname.name, value)
                record = self.core.rec.calls.get(id(item.item))
                if record is None:
                    continue
                record.entered = True
                if record.callee in torch_api.DEVICE_CONTEXTS:
                    self.core.default_device = value.where  # ``with torch.device("cuda"):``
            try:
                return self.suite(stmt.body)
            finally:
                self.core.default_device = default
        handler = _COMPOUND_HANDLERS.get(kind)
        if handler is not None:
            handler(self, stmt)
        elif kind is cst.FunctionDef:
            assert isinstance(stmt, cst.FunctionDef)
            self.core.definitions.function_def(stmt, class_name=None)
        elif kind is cst.ClassDef:
            assert isinstance(stmt, cst.ClassDef)
            self.core.definitions.class_def(stmt)
        return False

    def small_statement(self, small: cst.BaseSmallStatement) -> bool:
        """Run one simple statement; True when it leaves the block."""
        kind = type(small)
        if kind is cst.Expr:
            assert isinstance(small, cst.Expr)
            self.expression_statement(small.value)
            return guards.is_exit_call(small.value)
        if kind is cst.Assign:
            assert isinstance(small, cst.Assign)
            self.assign(small)
        elif kind is cst.AnnAssign:
            assert isinstance(small, cst.AnnAssign)
            if small.value is not None:
                value = self.core.expressions.expr(small.value)
                if any(default is small.value for default in value.cuda_defaults):
                    self.core.rec.definition_literals.add(id(small.value))
                if value.kind is Kind.UNKNOWN and value.where is None:
                    # ``self._stats: PerfStats = stats``: an object of this file's class
                    value = self.core.definitions.annotated_instance(small.annotation) or value
                self.core.bind(small.target, value)
        elif kind is cst.AugAssign:
            assert isinstance(small, cst.AugAssign)
            current, value = (
                self.core.expressions.expr(small.target),
                self.core.expressions.expr(small.value),
            )
            operands = [(small.target, current), (small.value, value)]
            result = self.core.operators.combine(small, operands)
            if current.kind is Kind.TENSOR:
                # ``count += mask.sum()`` works in place: the tensor keeps its device and
                # its shape (a 0-dim CPU count still mixes with any device).
                base = result if result.kind is Kind.TENSOR else current
                result = replace(base, where=current.where, scalar=current.scalar)
            self.core.bind(small.target, result)
        elif kind is cst.Return:
            assert isinstance(small, cst.Return)
            self.return_statement(small)
            return True
        elif kind is cst.Raise:
            assert isinstance(small, cst.Raise)
            if small.exc is not None:
                self.core.expressions.expr(small.exc)
            return True
        elif kind is cst.Break or kind is cst.Continue:
            return True
        elif kind is cst.Assert:
            assert isinstance(small, cst.Assert)
            self.core.expressions.expr(small.test)
            if small.msg is not None:
                self.core.expressions.expr(small.msg)
            self.core.branches.refine(guards.placement_test(small.test), +1)
        elif kind is cst.Import:
            assert isinstance(small, cst.Import)
            self.core.imports.import_names(small)
        elif kind is cst.ImportFrom:
            assert isinstance(small, cst.ImportFrom)
            self.core.imports.import_from(small)
        elif kind is cst.Del:
            assert isinstance(small, cst.Del)
            self.core.expressions.expr(small.target)
        elif kind is cst.Global and self.core.ctx.function is not None:
            assert isinstance(small, cst.Global)
            function = id(self.core.ctx.function)
            self.core.declared_globals.update((function, item.name.value) for item in small.names)
        return False

    def assign(self, small: cst.Assign) -> None:
        if len(small.targets) == 1 and self.core.bind_pairwise(
            small.targets[0].target, small.value
        ):
            return
        value = self.core.expressions.expr(small.value)
        if any(default is small.value for default in value.cuda_defaults):
            self.core.rec.definition_literals.add(id(small.value))  # ``device = "cuda"``
        if (
            value.scalar
            and value.origins == (small.value,)
            and len(small.targets) == 1
            and not _from_literal_number(small.value)
        ):
            # ``rewards = torch.tensor(r)``: the name it gets says it holds several
            # (``tokens = torch.tensor(0)`` is 0-dim whatever its name).
            name = dotted_name(small.targets[0].target) or ""
            value = replace(value, scalar=not name_guesses.names_a_sequence(name))
        if value.kind is Kind.CONSTANT and value.constant is True:
            value = self.core.branches.flag_set_with_cuda(value)
        for target in small.targets:
            self.core.bind(target.target, value)
            if type(small.value) is cst.IfExp:
                self.core.note_path_stores(target.target, small.value)
        self.note_module_marks(small, value)
        self.note_device_choice(small, value)
        kind = type(small.value)
        if kind is cst.Call:
            self.core.imports.bind_returned_flags(small)  # ``args = get_args()``: ``args.cuda``
            assert isinstance(small.value, cst.Call)
            self.module_moved_too(small.value)
        elif kind is cst.IfExp and any(
            name_guesses.is_device_like_name(name) or name_guesses.names_an_accelerator(name)
            for name in (dotted_name(t.target) or "" for t in small.targets)
        ):
            self.core.rec.device_named.add(id(small.value))  # ``device = 0 if avail else -1``
        elif kind is cst.Dict:
            assert isinstance(small.value, cst.Dict)
            for target in small.targets:
                self.bind_dict_keys(target.target, small.value)

    def note_module_marks(self, small: cst.Assign, value: Value) -> None:
        """``pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(), ...), ...]`` at
        module level: pytest skips every test of the module without CUDA."""
        names = {dotted_name(t.target) for t in small.targets}
        ctx = self.core.ctx
        if torch_api.PYTEST_MODULE_MARKS not in names or ctx.function or ctx.class_name:
            return  # a class's own marks are its decorators' business
        marks = [value]
        if isinstance(small.value, cst.List | cst.Tuple):
            values = self.core.rec.values
            marks = [values.get(id(e.value), UNKNOWN) for e in small.value.elements]
        if any(guards.is_cuda_guard(mark, +1) for mark in marks):
            self.core.definitions.tests_need_cuda = True

    def note_device_choice(self, small: cst.Assign, value: Value) -> None:
        """``device = "mps"`` (``Records.mps_assigned``), and the name a conditional
        expression is bound to, as itself or as a call's argument
        (``device = torch.device("cuda" if avail else "cpu")``: ``Conditional.binds``)."""
        if len(small.targets) != 1 or type(small.targets[0].target) is not cst.Name:
            return
        name = small.targets[0].target.value
        if value.kind is Kind.DEVICE and value.where == MPS:
            function = self.core.ctx.function
            self.core.rec.mps_assigned.add((id(function) if function is not None else 0, name))
        choice: cst.BaseExpression = small.value
        if type(choice) is cst.Call and choice.args and choice.args[0].keyword is None:
            choice = choice.args[0].value
        conditional = (
            self.core.rec.conditionals.get(id(choice)) if type(choice) is cst.IfExp else None
        )
        if conditional is not None:
            conditional.binds = name

    def bind_dict_keys(self, target: cst.BaseExpression, literal: cst.Dict) -> None:
        """``cfg = {"cuda": torch.cuda.is_available()}``: ``cfg["cuda"]`` is a guard."""
        name = dotted_name(target)
        if name is None:
            return
        for element in literal.elements:
            if isinstance(element, cst.DictElement):
                key = string_value(element.key)
                value = self.core.rec.values.get(id(element.value), UNKNOWN)
                if key is not None and value.kind is Kind.GUARD:
                    self.core.store(f"{name}.[{key}]", value)

    def return_statement(self, small: cst.Return) -> None:
        if small.value is not None:
            returned = self.core.expressions.expr(small.value)
            self.core.mark_reference(small.value)
            if self.core.returns is not None:
                self.core.returns.append(returned)
        if not (self.core.cuda_required or self.core.ctx.guarded):
            self.core.exits_without_cuda = True

    def expression_statement(self, expr: cst.BaseExpression) -> None:
        """A bare call: a discarded result, and the in-place effects of module methods."""
        self.core.expressions.expr(expr)
        if type(expr) is not cst.Call:
            return
        record = self.core.rec.calls.get(id(expr))
        if record is not None:
            record.discarded = True
        if type(expr.func) is not cst.Attribute:
            return
        func = expr.func
        while func.attr.value in torch_api.MODULE_SELF_METHODS:  # ``model.to(dev).eval()``
            inner = func.value
            if not (type(inner) is cst.Call and type(inner.func) is cst.Attribute):
                break
            expr, func = inner, inner.func
        key = dotted_name(func.value)
        if key is not None:
            self.in_place_effect(expr, key, func.attr.value)

    def module_moved_too(self, call: cst.Call) -> None:
        """``m = model.to(device)``: ``nn.Module.to`` moves the module in place and returns
        it, so ``model`` is on the device too (ng-video-lecture's ``bigram.py``)."""
        func = call.func
        if type(func) is not cst.Attribute or func.attr.value not in torch_api.MOVE_METHODS:
            return
        key = dotted_name(func.value)
        receiver = self.core.lookup(key) if key is not None else None
        if key is not None and receiver is not None and receiver.kind is Kind.MODULE:
            self.in_place_effect(call, key, func.attr.value)

    def in_place_effect(self, call: cst.Call, key: str, method: str) -> None:
        """``model.to(device)`` moves a module in place; containers grow with their parts."""
        receiver = self.core.lookup(key) or UNKNOWN
        values = self.core.rec.values
        if method in torch_api.MOVE_METHODS and (
            receiver.kind is not Kind.TENSOR or receiver.whole_batch
        ):
            self.core.env[key] = values.get(id(call), receiver)
        elif method == "backward" and receiver.kind in _MAYBE_TENSOR and receiver.where is None:
            # ``loss.backward()``: a tensor computed in this step, on the device the loop
            # moved its inputs to (``x = x.to(device)`` before ``loss = self.step(x)``)
            moved = self.moved_in_loop()
            if moved is not None:
                self.core.env[key] = moved
        elif receiver.kind is Kind.MODULE and method in _ADDS_MODULES and call.args:
            # ``seq.add_module("conv", layer)``: the container also lives where the part does.
            part = values.get(id(call.args[-1].value), UNKNOWN)
            where = join_placement(receiver.where, part.where) if part.kind is Kind.MODULE else None
            self.core.env[key] = Value(Kind.MODULE, where)
        elif method in ("append", "extend", "insert") and call.args:
            item = values.get(id(call.args[-1].value), UNKNOWN)
            if method == "extend":
                item = element_of(item)
            holds_tensors = receiver.kind is Kind.TENSOR or is_empty_container(receiver)
            if item.kind is Kind.TENSOR and holds_tensors:
                where = join_placement(receiver.where, item.where)
                self.core.env[key] = Value(
                    Kind.TENSOR,
                    where,
                    placed=chain(receiver.placed, item.placed),
                    computed_from=joined_inference(receiver, item),
                    listed=receiver.listed or is_empty_container(receiver),
                )
            elif holds_tensors:
                self.core.env[key] = UNKNOWN  # ``models.append(Net())``: not a tensor container

    def moved_in_loop(self) -> Value | None:
        """The tensors the innermost loop's body has moved to a device that may be an
        accelerator so far (None: none), as one value."""
        loop = self.core.ctx.inner_loop
        if loop is None:
            return None
        values = self.core.rec.values
        moved = [
            values[id(record.node)]
            for record in self.core.rec.calls.values()
            if record.site.inner_loop is loop
            and record.method in ("to", "cuda")
            and not record.casts_only
            and id(record.node) in values
        ]
        moved = [v for v in moved if v.kind in _MAYBE_TENSOR and may_be_accelerator(v.where)]
        if not moved:
            return None
        where = join_placements(v.where for v in moved)
        return Value(Kind.TENSOR, where, placed=moved[0].placed)

    def for_statement(self, node: cst.For) -> None:
        iterable = self.core.expressions.expr(node.iter)
        element, is_loader = self.core.expressions.iteration_element(node.iter, iterable)
        ctx, required = self.core.ctx, self.core.cuda_required
        loop = self.loop_of(node, is_loader)
        changes: dict[str, object] = {
            "inner_loop": loop,
            "inner_conditional": False,
            "outer_loop": None if ctx.inner_conditional else ctx.inner_loop,
        }
        if is_loader:
            changes.update(loop=loop, conditional=False)
        if guards.is_cuda_guard(self.core.rec.values.get(id(node.iter), UNKNOWN), +1):
            changes["guarded"] = True  # ``for i in range(torch.cuda.device_count())``

        def run_once() -> None:
            self.core.cuda_required = required  # the body may not run at all
            self.core.expressions.bind_loop_target(node.target, node.iter, element)
            self.suite(node.body)

        with self.core.scope(**changes):
            self.core.loop_body(run_once)
        self.core.cuda_required = required
        del ctx
        if iterable.from_batch:
            self.batch_moved_by_loop(node)
        if node.orelse is not None:
            self.suite(node.orelse.body)

    def batch_moved_by_loop(self, node: cst.For) -> None:
        """``for t in targets: ... t[k] = v.to(device)``: the batch element's items were
        replaced by moved copies, in place (DETR-style target dicts)."""
        if type(node.target) is not cst.Name or type(node.iter) is not cst.Name:
            return
        moves = [move for name, move in item_moves(node.body) if name == node.target.value]
        if not moves:
            return
        values = [self.core.rec.values.get(id(move), UNKNOWN) for move in moves]
        where = join_placements([value.where for value in values])
        self.core.bind(node.iter, Value(Kind.TENSOR, where))

    def loop_of(self, node: cst.For | cst.While, over_loader: bool) -> Loop:
        key = (id(node), over_loader)
        loop = self.loops.get(key)
        if loop is None:
            stepping = functools.partial(
                self.core.definitions.steps, class_name=self.core.ctx.class_name
            )
            loop = self.loops[key] = Loop(node, over_loader=over_loader, stepping=stepping)
        return loop

    def while_statement(self, node: cst.While) -> None:
        required = self.core.cuda_required
        outer, outer_conditional = self.core.ctx.inner_loop, self.core.ctx.inner_conditional
        loop = self.loop_of(node, False)

        def run_once() -> None:
            self.core.cuda_required = required
            test = self.core.expressions.expr(node.test)
            guarded = self.core.ctx.guarded or guards.is_cuda_guard(test, +1)
            with self.core.scope(
                guarded=guarded,
                inner_loop=loop,
                inner_conditional=False,
                outer_loop=None if outer_conditional else outer,
            ):
                self.suite(node.body)

        self.core.loop_body(run_once)
        self.core.cuda_required = required
        if node.orelse is not None:
            self.suite(node.orelse.body)

    def try_statement(self, node: cst.Try | cst.TryStar) -> None:
        original, before = self.core.env, dict(self.core.env)
        ctx, required = self.core.ctx, self.core.cuda_required
        probes = guards.probes_for_cuda(node)
        with self.core.scope(
            guarded=ctx.guarded or probes, branches=(*ctx.branches, Branch(node, node.body))
        ):
            body_exits = self.suite(node.body)
        if node.orelse is not None and not body_exits:
            self.suite(node.orelse.body)
        after_body = dict(self.core.env)
        outcomes = [(after_body, self.core.cuda_required, body_exits)]
        for handler in node.handlers:
            self.core.env = self.core.join_envs([before, after_body])
            self.core.cuda_required = required  # the body stopped anywhere
            if handler.type is not None:
                self.core.expressions.expr(handler.type)
            with self.core.scope(branches=(*ctx.branches, Branch(node, handler))):
                exits = self.suite(handler.body)
            outcomes.append((self.core.env, self.core.cuda_required, exits))
        stand_ins = _stood_in(before, after_body, [env for env, _, exits in outcomes[1:]])
        self.core.join_outcomes(original, before, outcomes, required)
        self.core.env.update({k: v for k, v in stand_ins.items() if k in self.core.env})
        if node.finalbody is not None:
            self.suite(node.finalbody.body)

    def match_statement(self, node: cst.Match) -> None:
        self.core.expressions.expr(node.subject)
        original, before = self.core.env, dict(self.core.env)
        required = self.core.cuda_required
        outcomes: list[Env] = []
        for case in node.cases:
            self.core.env = dict(before)
            self.core.cuda_required = required
            if not self.suite(case.body):
                outcomes.append(self.core.env)
        self.core.settle(original, self.core.join_envs([*outcomes, before]))
        self.core.cuda_required = required


def _stood_in(before: Env, body: Env, handlers: list[Env]) -> Env:
    """``try: autocast = torch.cuda.amp.autocast`` / ``except: class autocast: ...``: what
    the body imports, where every handler defines a stand-in of its own (for an older
    torch), is the library's everywhere the library has it (RAFT, eval/blind52)."""
    return {
        name: value
        for name, value in body.items()
        if value.kind is Kind.IMPORTED
        and value.qualname
        and before.get(name) is not value
        and handlers
        and all((env.get(name) or UNKNOWN).kind in (Kind.CLASS, Kind.FUNCTION) for env in handlers)
    }


# The handler of each compound statement of this module (functions and classes:
# ``definitions.py``), as plain functions.
_COMPOUND_HANDLERS: dict[type, Callable[[Statements, Any], None]] = {
    cst.For: Statements.for_statement,
    cst.While: Statements.while_statement,
    cst.Try: Statements.try_statement,
    cst.TryStar: Statements.try_statement,
    cst.Match: Statements.match_statement,
}


def _from_literal_number(value: cst.BaseExpression) -> bool:
    """``torch.tensor(0, dtype=...)``: a factory call whose data is a number literal, or
    arithmetic of one with a name (``torch.tensor(0.03 / steps)``: a number, whatever the
    names say; learn2learn's MAML++ stores it as ``self._msl_min_value_for_..._losses``)."""
    if type(value) is not cst.Call:
        return False
    assert isinstance(value, cst.Call)
    data = value.args[0].value if value.args and value.args[0].keyword is None else None
    if type(data) is cst.BinaryOperation:
        assert isinstance(data, cst.BinaryOperation)
        sides = (data.left, data.right)
        named = [side for side in sides if type(side) in (cst.Name, cst.Attribute)]
        literal = any(type(side) in (cst.Integer, cst.Float) for side in sides)
        return literal and len(named) == 1
    return type(data) in (cst.Integer, cst.Float)
