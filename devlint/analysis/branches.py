"""The interpreter's ``if`` statements: both branches, their join and what a test narrows.

Each branch runs in a copy of the environment; the copies are joined after, without the
branches that always leave (``return``, ``raise``...), so an early exit on a negated
availability test guards the rest of its block (``guards.py``). A test refines what it
tests in each branch: ``if x.is_cuda: ... else: ...`` knows ``x`` is not on CUDA in the
``else``, ``if loader is None:`` that it is None, ``if torch.is_tensor(v):`` that ``v``
is a tensor. Values moved under a flag (``if args.cuda: x = x.cuda()``) follow that flag
past the ``if`` (``Value.follows``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import libcst as cst

from devlint.analysis import guards
from devlint.analysis.facts import Branch, Conditional
from devlint.analysis.interpreter import Env, Interpreter
from devlint.analysis.loops import Loop
from devlint.analysis.releases import version_test_answer
from devlint.analysis.syntax import dotted_name, parameters
from devlint.analysis.values import CUDA, UNKNOWN, Kind, Value, is_cpu


def _counts(test: cst.BaseExpression) -> bool:
    """A counter test (``step % 100 == 0``): its branches run on some iterations only."""
    while isinstance(test, cst.UnaryOperation):
        test = test.expression
    if isinstance(test, cst.BooleanOperation):
        return _counts(test.left) or _counts(test.right)
    if not isinstance(test, cst.Comparison):
        return False
    sides = [test.left, *(comparison.comparator for comparison in test.comparisons)]
    return any(
        isinstance(side, cst.BinaryOperation) and isinstance(side.operator, cst.Modulo)
        for side in sides
    )


def _off_by_default(test: cst.BaseExpression, function: cst.FunctionDef | None) -> bool:
    """A parameter of ``function`` whose default is ``False`` or ``None``: a branch the
    caller has to ask for (verbose logging)."""
    if type(test) is not cst.Name or function is None:
        return False
    for param in parameters(function.params):
        if param.name.value == test.value:
            default = param.default
            return isinstance(default, cst.Name) and default.value in ("False", "None")
    return False


def _flags_set_by(test: Value, body: Env, orelse: Env) -> Env:
    """``if torch.cuda.is_available(): use_cuda = 1`` / ``else: use_cuda = 0``: a name set
    to a truthy constant where the test holds and a falsy one where it does not is the
    test itself (``guards.conditional``), as ``use_cuda = 1 if avail else 0`` would be."""
    flags: Env = {}
    for key, value in body.items():
        other = orelse.get(key)
        if value.kind is Kind.CONSTANT and other is not None and other.kind is Kind.CONSTANT:
            flag = guards.conditional(test, value, other)
            if flag is not None:
                flags[key] = flag
    return flags


def _switched_off(test: Value, body: Env, orelse: Env, before: Env) -> Env:
    """``if not torch.cuda.is_available(): use_cuda = False`` (the other branch leaving it
    alone): past the ``if`` the switch is false wherever CUDA is absent, so where it is
    true CUDA is available, whatever the caller asked for (PatchTST's ``get_device``)."""
    if guards.is_cuda_guard(test, -1):
        absent, present = body, orelse
    elif guards.is_cuda_guard(test, +1):
        absent, present = orelse, body
    else:
        return {}
    return {
        key: guards.CUDA_AVAILABLE
        for key, value in absent.items()
        if value.kind is Kind.CONSTANT
        and not value.constant
        and key in before
        and present.get(key) is before[key]
        and before[key] is not value
    }


def _unfollowed(
    body_followed: dict[str, tuple[Value, Value]],
    else_followed: dict[str, tuple[Value, Value]],
    body: Env,
    orelse: Env,
) -> Env:
    """The values a flag test narrowed in both branches and neither branch rebound: as
    they were before the test (still following the flag)."""
    return {
        name: original
        for name, (original, here) in body_followed.items()
        if body.get(name) is here
        and name in else_followed
        and orelse.get(name) is else_followed[name][1]
    }


_FOLLOWING_KINDS = (Kind.TENSOR, Kind.MODULE, Kind.UNKNOWN)


def _following(
    flag: tuple[str, int], body: Env, orelse: Env, skip: object
) -> dict[str, tuple[str, Value, Value]]:
    """After ``if flag: x = x.cuda()``: ``x`` where the flag holds and where it does not
    (``Value.follows``), for the values whose placement the two branches left different."""
    key, polarity = flag
    found: dict[str, tuple[str, Value, Value]] = {}
    for name, value in body.items():
        other = orelse.get(name)
        if (
            other is None
            or other is value
            or name in skip  # type: ignore[operator]
            or value.where == other.where
            or value.kind not in _FOLLOWING_KINDS
            or other.kind not in _FOLLOWING_KINDS
        ):
            continue
        holds, fails = (value, other) if polarity > 0 else (other, value)
        found[name] = (key, replace(holds, follows=None), replace(fails, follows=None))
    return found


@dataclass(frozen=True)
class _Sides:
    """An ``if`` being run: its test's value, the flag it tests, and whether each side
    (body, else) is conditional within the loop around it, and within the innermost."""

    node: cst.If
    test: Value
    flag: tuple[str, int] | None  # ``guards.flag_test``
    placement: tuple[str, str, int] | None  # ``guards.placement_test``
    ids_test: int  # ``guards.cuda_ids_test``
    conditional: list[bool]
    inner: list[bool]


@dataclass(frozen=True)
class _Ran:
    """What running one side of an ``if`` left besides its environment."""

    exits: bool  # every path through it leaves (``return``, ``raise``, ``continue``)
    followed: dict[str, tuple[Value, Value]]  # the values it moved by the tested flag
    refined: Env  # the body's environment as its test narrowed it (a guard with no else)


def _flags_after(
    sides: _Sides, body: tuple[_Ran, Env], orelse: tuple[_Ran, Env], before: Env
) -> tuple[Env, dict[str, tuple[str, Value, Value]]]:
    """Past an ``if`` that both sides fall out of: the flags its sides set (a guard's test
    copied into a flag), and the values that follow the tested flag from here on."""
    (body_ran, body_env), (else_ran, else_env) = body, orelse
    flags: Env = {}
    marks: dict[str, tuple[str, Value, Value]] = {}
    if body_ran.exits or else_ran.exits:
        return flags, marks
    if sides.test.kind is Kind.GUARD:
        flags = _flags_set_by(sides.test, body_env, else_env)
        flags.update(_switched_off(sides.test, body_env, else_env, before))
    if sides.flag is not None:
        # Where the flag says, again: values the branches left alone are as before the
        # ``if``; values one branch moved follow the flag from here on.
        flags.update(_unfollowed(body_ran.followed, else_ran.followed, body_env, else_env))
        marks = _following(sides.flag, body_env, else_env, flags.keys())
    return flags, marks


def _moved_to_cpu(sides: _Sides, body: _Ran, body_env: Env) -> Env:
    """``if device != "cpu": x = x.cpu()``: the untaken branch is the CPU case (not so
    for ``if not torch.cuda.is_available(): device = "cpu"``). Only what the body moved,
    not what its test narrowed (``if device == "cpu":`` leaves it)."""
    test = sides.test
    if sides.node.orelse is not None or test.kind is not Kind.GUARD or test.polarity < 0:
        return {}
    if body.exits:
        return {}
    return {k: v for k, v in body_env.items() if is_cpu(v.where) and body.refined.get(k) is not v}


class Branches:
    """The ``if`` handler (see the module docstring)."""

    def __init__(self, core: Interpreter) -> None:
        self.core = core

    def branch_conditions(self, node: cst.If) -> tuple[list[bool], list[bool]]:
        """``Context.conditional`` and ``inner_conditional`` in the body and in the ``else``
        of an ``if``: inside a loop, a branch runs on some iterations only, unless the test
        is a setting fixed for the whole loop (``if is_train:``)."""
        ctx = self.core.ctx
        # ``if iteration_loss:`` of a parameter ``iteration_loss=False``: logging on request.
        asked = _off_by_default(node.test, ctx.function)

        def varies(loop: Loop | None, taken: bool) -> bool:
            if loop is None:
                return False
            return (taken and asked) or not loop.every_training_iteration(node.test, taken)

        conditional = [ctx.conditional or varies(ctx.loop, taken) for taken in (True, False)]
        inner_conditional = [
            ctx.inner_conditional or varies(ctx.inner_loop, taken) for taken in (True, False)
        ]
        return conditional, inner_conditional

    def if_statement(self, node: cst.If, following: cst.BaseStatement | None) -> bool:
        taken = version_test_answer(node.test, self.core.target_torch)
        if taken is not None:
            # ``if LooseVersion(torch.__version__) >= LooseVersion("1.6.0"):``: every torch
            # the code runs on takes the same side; the other is for another release
            self.core.expressions.expr(node.test)
            return self.core.statements.suite(node.body) if taken else self.else_part(node.orelse)
        test = self.core.expressions.expr(node.test)
        ctx = self.core.ctx
        self.core.rec.conditionals[id(node)] = Conditional(
            node,
            test,
            ctx.backends_tested,
            following,
            self.core.site(),
            self.core.statements.preceding,
        )
        original, before = self.core.env, dict(self.core.env)
        required = self.core.cuda_required
        sides = _Sides(
            node,
            test,
            guards.flag_test(node.test),
            guards.placement_test(node.test),
            guards.cuda_ids_test(node.test),
            *self.branch_conditions(node),
        )
        body = self.run_body(sides, required)
        body_env, body_required = self.core.env, self.core.cuda_required
        self.core.env = dict(before)
        orelse = self.run_else(sides, required)
        flags, marks = _flags_after(sides, (body, body_env), (orelse, self.core.env), before)
        moved_to_cpu = _moved_to_cpu(sides, body, body_env)
        overridden = self.overridden_without_cuda(sides, body.exits, body_env)
        outcomes = [
            (body_env, body_required, body.exits),
            (self.core.env, self.core.cuda_required, orelse.exits),
        ]
        self.core.join_outcomes(original, before, outcomes, required)
        for key, value in overridden.items():
            if key in self.core.env:
                self.core.env[key] = replace(self.core.env[key], absent=value.constant)
        self.core.env.update(moved_to_cpu)
        self.core.env.update({key: value for key, value in flags.items() if key in self.core.env})
        for name, mark in marks.items():
            if name in self.core.env:
                self.core.env[name] = replace(self.core.env[name], follows=mark)
        refused = self.refuses_cuda_without_it(node, body.exits)
        if refused is not None:
            self.drop_cuda_defaults(refused)
        if node.orelse is None and body.exits and _counts(node.test):
            # ``if (step + 1) % every != 0: continue``: the rest of the loop's body runs
            # on the iterations the counter lets through, as an ``else`` would
            self.core.narrow(conditional=sides.conditional[1], inner_conditional=sides.inner[1])
        return body.exits and orelse.exits

    def run_body(self, sides: _Sides, required: bool) -> _Ran:
        """The ``if``'s body, where its test holds: guarded by it, values refined by it."""
        node, test, ctx, placement = sides.node, sides.test, self.core.ctx, sides.placement
        with self.core.scope(
            guarded=ctx.guarded
            or guards.may_guard_cuda(test, +1)
            or self.core.expressions.inherited_flag(node.test),
            backends_tested=guards.tested_where_absent(ctx.backends_tested, test, +1),
            conditional=sides.conditional[0],
            inner_conditional=sides.inner[0],
            branches=(*ctx.branches, Branch(node, node.body)),
        ):
            self.core.cuda_required = required or sides.ids_test > 0
            self.refine(placement, +1)
            self.guard_if_cuda_device(placement)
            self.refine_to_none(node.test, +1)
            host_typed = self.refine_by_type(node.test)
            self.drop_checked_default(node.test)
            followed = self.follow_flag(sides.flag, +1)
            narrowed = node.orelse is None and test.kind is Kind.GUARD
            refined = dict(self.core.env) if narrowed else {}
            exits = self.core.statements.suite(node.body)
            if host_typed is not None and self.core.env.get(host_typed[0]) is host_typed[2]:
                # Not rebound: past the ``if``, the same object as before it.
                self.core.env[host_typed[0]] = host_typed[1]
        return _Ran(exits, followed, refined)

    def run_else(self, sides: _Sides, required: bool) -> _Ran:
        """The ``else`` part (or nothing), where the test fails."""
        node, test, ctx, placement = sides.node, sides.test, self.core.ctx, sides.placement
        else_branches = ctx.branches
        if node.orelse is not None:
            else_branches = (*ctx.branches, Branch(node, node.orelse))
        with self.core.scope(
            guarded=ctx.guarded or guards.is_cuda_guard(test, -1),
            conditional=sides.conditional[1],
            inner_conditional=sides.inner[1],
            backends_tested=guards.tested_where_absent(ctx.backends_tested, test, -1),
            branches=else_branches,
        ):
            self.core.cuda_required = required or sides.ids_test < 0
            self.refine(placement, -1)
            self.guard_if_cuda_device(placement)
            self.refine_to_none(node.test, -1)
            followed = self.follow_flag(sides.flag, -1)
            exits = self.else_part(node.orelse)
        return _Ran(exits, followed, {})

    def overridden_without_cuda(self, sides: _Sides, body_exits: bool, body_env: Env) -> Env:
        """``if not torch.cuda.is_available(): device = "cpu"``: past the ``if``, what the
        body replaced is as before only where CUDA is available (its CUDA defaults are
        dropped here); the constants it set hold wherever CUDA is absent (returned)."""
        overridden: Env = {}
        if sides.node.orelse is not None or body_exits or not guards.is_cuda_guard(sides.test, -1):
            return overridden
        for key, value in body_env.items():
            kept = self.core.env.get(key)
            if kept is not None and kept is not value and kept.cuda_defaults:
                self.core.env[key] = replace(kept, cuda_defaults=())
            if kept is not value and isinstance(value.constant, str):
                overridden[key] = value  # ``args.mode = "cpu"``: so wherever CUDA is absent
        return overridden

    def refuses_cuda_without_it(self, node: cst.If, body_exits: bool) -> str | None:
        """The device ``name`` of ``if "cuda" in name and not torch.cuda.is_available():
        raise ...`` or of ``if name.startswith("cuda"): assert torch.cuda.is_available()``:
        past it, a CUDA device in ``name`` is used only where CUDA is available."""
        if node.orelse is not None:
            return None
        values, test = self.core.rec.values, node.test
        if type(test) is cst.BooleanOperation and type(test.operator) is cst.And and body_exits:
            for named, other in ((test.left, test.right), (test.right, test.left)):
                name = guards.names_cuda(named)
                if name is not None and guards.is_cuda_guard(values.get(id(other), UNKNOWN), -1):
                    return name
            return None
        name = guards.names_cuda(test)
        body = node.body.body
        first = body[0] if body else None
        if name is None or type(first) is not cst.SimpleStatementLine:
            return None
        asserted = first.body[0]
        tested = values.get(id(asserted.test), UNKNOWN) if type(asserted) is cst.Assert else UNKNOWN
        return name if guards.is_cuda_guard(tested, +1) else None

    def drop_checked_default(self, test: cst.BaseExpression) -> None:
        """In the branch of ``avail or device == "cpu"``, ``device``'s CUDA default is used
        only where CUDA is available (``Value.cuda_defaults``); ``args.device`` of a
        ``--device`` option too."""
        holder = guards.available_or_cpu(test, self.core.rec.values)
        if holder is not None:
            self.drop_cuda_defaults(holder)

    def drop_cuda_defaults(self, holder: str) -> None:
        """``holder``'s CUDA default is used only where CUDA is available from here on."""
        for name in (holder, f"{holder}.device"):  # ``device == "cpu"``, ``args.device == ...``
            value = self.core.lookup(name)
            if value is None and "." in name:  # ``args.device`` of a ``--device`` option
                value = self.core.option_defaults.get(name.rsplit(".", 1)[-1])
            if value is not None and value.kind is Kind.DEVICE and value.cuda_defaults:
                self.core.env[name] = replace(value, cuda_defaults=())

    def follow_flag(
        self, flag: tuple[str, int] | None, branch: int
    ) -> dict[str, tuple[Value, Value]]:
        """In one branch of a test of ``flag``, the values moved under that flag earlier
        are where the flag puts them (``Value.follows``); what was changed, by key (the
        value before and the one here)."""
        if flag is None:
            return {}
        key, polarity = flag
        holds = polarity == branch
        changed = {}
        for name, value in self.core.env.items():
            follows = value.follows
            if follows is not None and follows[0] == key:
                here = follows[1] if holds else follows[2]
                changed[name] = (value, here)
        for name, (_, here) in changed.items():
            self.core.env[name] = here
        return changed

    def clamp_to_count(self, node: cst.If) -> None:
        """``if n_gpu_use > n_gpu: n_gpu_use = n_gpu`` with ``n_gpu =
        torch.cuda.device_count()`` (pytorch-template's ``_prepare_device``): past it the
        name holds at most the count, and tests like ``min(n_gpu_use, n_gpu)`` does."""
        clamped = _clamped(node)
        bound = self.core.lookup(clamped[1]) if clamped is not None else None
        if clamped is not None and bound is not None and bound.kind is Kind.GUARD:
            self.core.store(clamped[0], bound)

    def else_part(self, orelse: cst.If | cst.Else | None) -> bool:
        if type(orelse) is cst.If:
            assert isinstance(orelse, cst.If)
            return self.if_statement(orelse, None)
        if type(orelse) is cst.Else:
            assert isinstance(orelse, cst.Else)
            return self.core.statements.suite(orelse.body)
        return False

    def refine(self, test: tuple[str, str, int] | None, branch: int) -> None:
        """Narrow the value a device test names, in one of its branches (``guards.py``)."""
        if test is None:
            return
        name, device, polarity = test
        value = self.core.lookup(name)
        if value is None or value.kind not in (Kind.TENSOR, Kind.MODULE, Kind.DEVICE):
            return
        if polarity == branch:
            where = frozenset({device})
        elif value.where and value.where - {device}:
            where = value.where - {device}
        else:
            return
        self.core.env[name] = replace(value, where=where)

    def guard_if_cuda_device(self, test: tuple[str, str, int] | None) -> None:
        """A branch where the tested device is CUDA and nothing else (the ``else`` of
        ``if device == "cpu":`` for ``device`` from ``["cuda:0", "cpu"]``) is SPEC's
        ``device.type == "cuda"`` branch: guarded."""
        if test is None or self.core.ctx.guarded:
            return
        value = self.core.lookup(test[0])
        if value is not None and value.kind is Kind.DEVICE and value.where == CUDA:
            self.core.narrow(guarded=True)

    def refine_to_none(self, test: cst.BaseExpression, branch: int) -> None:
        """``if loader is None:`` (``is not None``: its else): there, ``loader`` is None, so
        past the ``if`` it is what the other branch made of it (``values.join``)."""
        if type(test) is not cst.Comparison or len(test.comparisons) != 1:
            return
        operator, compared = test.comparisons[0].operator, test.comparisons[0].comparator
        polarity = {cst.Is: +1, cst.IsNot: -1}.get(type(operator))
        name = dotted_name(test.left)
        if polarity == branch and name is not None and dotted_name(compared) == "None":
            self.core.env[name] = Value(Kind.CONSTANT, constant=None)

    def refine_by_type(self, test: cst.BaseExpression) -> tuple[str, Value, Value] | None:
        """``if torch.is_tensor(v):`` / ``isinstance(v, torch.Tensor)`` (or the left of an
        ``and``): in the body, ``v`` is a tensor, wherever it is. ``isinstance(v, list)``
        (``np.ndarray``, ``str``...): there, ``v`` is no tensor, so nothing is known of
        where it is: that name, its value before and the one in the body, returned.
        """
        while type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
            test = test.left
        record = self.core.rec.calls.get(id(test))
        if record is None or not record.args or type(test) is not cst.Call:
            return None
        name = dotted_name(test.args[0].value)
        if name is None:
            return None
        if record.callee == "torch.is_tensor" or (
            dotted_name(test.func) == "isinstance"
            and len(record.args) == 2
            and record.args[1].qualname == "torch.Tensor"
        ):
            if (self.core.lookup(name) or UNKNOWN).kind is Kind.UNKNOWN:
                self.core.env[name] = Value(Kind.TENSOR)
        elif dotted_name(test.func) == "isinstance" and len(test.args) == 2:
            types = test.args[1].value
            elements = [e.value for e in types.elements] if type(types) is cst.Tuple else [types]
            before = self.core.lookup(name)
            # A tensor value may stand for a container of tensors (``outputs`` of a model):
            # ``isinstance(outputs, tuple)`` holds of it.
            containers = before is not None and before.kind is Kind.TENSOR
            if (
                before is not None
                and elements
                and all(self._host_type(e, containers) for e in elements)
            ):
                narrowed = self.core.env[name] = Value(Kind.UNKNOWN)
                return name, before, narrowed
        return None

    def _host_type(self, node: cst.BaseExpression, containers: bool) -> bool:
        """A type whose instances are never tensors: a builtin (``str``; ``list`` unless
        ``containers``: a value known as tensors may be a list of them), or NumPy's array
        and scalar types."""
        if type(node) is cst.Name:
            if containers and node.value in _CONTAINER_TYPES:
                return False
            return node.value in _HOST_TYPES and self.core.lookup(node.value) is None
        name = dotted_name(node)
        if name is None or "." not in name:
            return False
        head, rest = name.split(".", 1)
        value = self.core.lookup(head)  # ``np`` of ``np.ndarray``
        if value is None or value.kind is not Kind.IMPORTED or value.qualname is None:
            return False
        return f"{value.qualname}.{rest}" in _NUMPY_TYPES

    def flag_set_with_cuda(self, value: Value) -> Value:
        """``self.use_cuda = True`` in the class's own ``cuda()``, ``initialized = True``
        after ``if not torch.cuda.is_available(): return``: a flag set only where CUDA is
        tests where the code runs, as ``x.is_cuda`` does (its ``False`` elsewhere joins to
        the test: ``values.join``). DrQA's ``DocReader`` (eval/blind108), VAR's ``dist``
        module (eval/blind95)."""
        return guards.ON_CUDA if self.certainly_with_cuda() else value

    def certainly_with_cuda(self) -> bool:
        """Whether the code here runs only where CUDA is, by evidence: a *CUDA required*
        context, an enclosing branch on an availability test, or an early exit on one
        (not a flag that may be the caller's test: ``guards.may_guard_cuda``)."""
        ctx = self.core.ctx
        if self.core.cuda_required:
            return True
        if not ctx.guarded:
            return False
        values = self.core.rec.values
        for branch in ctx.branches:
            node = branch.node
            if type(node) is cst.If or type(node) is cst.IfExp:
                test = values.get(id(node.test), UNKNOWN)
                if guards.is_cuda_guard(test, +1 if branch.part is node.body else -1):
                    return True
        return not ctx.branches  # guarded by an early exit, or where the function runs


_HOST_TYPES = frozenset(
    {"list", "tuple", "dict", "set", "frozenset", "str", "bytes", "int", "float", "bool", "complex"}
)
_CONTAINER_TYPES = frozenset({"list", "tuple", "dict", "set", "frozenset"})
_NUMPY_TYPES = frozenset({"numpy.ndarray", "numpy.generic", "numpy.number"})


def _clamped(node: cst.If) -> tuple[str, str] | None:
    """(name, bound) of ``if name > bound: name = bound`` (or ``bound < name``), logging
    aside."""
    test, body = node.test, node.body
    if node.orelse is not None or not isinstance(test, cst.Comparison):
        return None
    if len(test.comparisons) != 1 or not isinstance(body, cst.IndentedBlock):
        return None
    operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
    if isinstance(operator, cst.GreaterThan | cst.GreaterThanEqual):
        name, bound = dotted_name(test.left), dotted_name(right)
    elif isinstance(operator, cst.LessThan | cst.LessThanEqual):
        name, bound = dotted_name(right), dotted_name(test.left)
    else:
        return None
    lines = [  # a warning beside the assignment (pytorch-template's) changes nothing
        line
        for line in body.body
        if not (
            isinstance(line, cst.SimpleStatementLine)
            and all(isinstance(small, cst.Expr) for small in line.body)
        )
    ]
    line = lines[0] if len(lines) == 1 else None
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    assign = line.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    if name is None or bound is None or dotted_name(assign.targets[0].target) != name:
        return None
    return (name, bound) if dotted_name(assign.value) == bound else None
