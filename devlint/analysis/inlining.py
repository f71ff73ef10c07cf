"""Bounded inlining: a function of this file re-run at a call with the caller's arguments.

What a small helper returns for these arguments (``calls.py`` asks at each call of a
module-level function, of a method on ``self`` or of another object of a class of the
file); the ``__init__`` of a dataset or module class re-run with its constructor's
arguments (``datasets.py``, ``module_classes.py``). A body run here records nothing for
the rules: only what it returns, or the environment it ends with, is kept. The depth, the
size of the bodies and the number of runs per file are bounded, so the analysis stays
linear in the file's size.
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from devlint.analysis import name_guesses
from devlint.analysis.interpreter import Env, Interpreter, Records
from devlint.analysis.syntax import parameters, string_value
from devlint.analysis.values import (
    ANY_DEVICE,
    UNKNOWN,
    Kind,
    Placement,
    Value,
    join,
    placement_of_device_string,
)

MAX_INLINED_CALLS = 200  # per file: analysis time stays linear in the file's size
MAX_INLINED_SIZE = 25  # top-level statements of a function analysed at its calls
MAX_INLINED_DEPTH = 2  # a helper's own helper (``visible()`` returning ``list(range(count()))``)
MAX_NESTED_INLINED_SIZE = 3  # ... when it is a one-liner or close to it


class Inlining:
    """Function bodies run again at their calls (see the module docstring)."""

    def __init__(self, core: Interpreter) -> None:
        self.core = core
        self.depth = 0
        self.budget = MAX_INLINED_CALLS
        self.answers: dict[tuple[object, ...], Value] = {}  # ``call``'s, once the module ran

    def reserve(self) -> bool:
        """Whether one more body may run (within the depth and the file's budget); the
        run counts against the budget."""
        if self.depth >= MAX_INLINED_DEPTH or self.budget <= 0:
            return False
        self.budget -= 1
        return True

    def call(
        self,
        node: cst.FunctionDef | None,
        args: list[Value],
        keywords: dict[str, Value],
        bound: int = 0,
        attributes: Env | None = None,
    ) -> Value:
        """What a small function of this file returns for these arguments (a method of
        this class called on ``self``: ``bound=1``, with the attributes the caller sees;
        a method of another object: with ``attributes``, those its class sets).

        The body is analysed once more with the parameters bound to the arguments; what
        that records is thrown away (the function's own analysis stands), only the join of
        its return values is kept. ``MAX_INLINED_DEPTH`` levels deep, and a bounded number
        per file.
        """
        if node is None or self.depth >= MAX_INLINED_DEPTH or self.budget <= 0:
            return UNKNOWN
        size = MAX_INLINED_SIZE if self.depth == 0 else MAX_NESTED_INLINED_SIZE
        if not isinstance(node.body, cst.IndentedBlock) or _code_size(node.body) > size:
            return UNKNOWN
        # Once the module's own code has run, what the body sees is fixed but for these:
        # the same call again (a helper called in every method) is answered from memory.
        ctx = self.core.ctx
        seen = (
            tuple(attributes.items())
            if attributes is not None
            else tuple((k, v) for k, v in self.core.env.items() if k.startswith("self."))
            if bound
            else ()
        )
        key = (
            id(node), tuple(args), tuple(sorted(keywords.items())), ctx.guarded,
            ctx.class_name, ctx.backends_tested, len(self.core.guard_attributes), seen,
        )  # fmt: skip
        if self.core.module_done and key in self.answers:
            return self.answers[key]
        self.budget -= 1
        result = self.inline(node, args, keywords, bound, dict(seen))
        if self.core.module_done:
            self.answers[key] = result
        return result

    def inline(
        self,
        node: cst.FunctionDef,
        args: list[Value],
        keywords: dict[str, Value],
        bound: int = 0,
        attributes: Env | None = None,
    ) -> Value:
        env = {**(attributes or {}), **self.argument_env(node, args, keywords, bound)}
        returned = self.detached(node, env)[1]
        if not returned:
            return UNKNOWN
        result = returned[0]
        for value in returned[1:]:
            result = join(result, value)
        return replace(result, origins=())

    def argument_env(
        self,
        node: cst.FunctionDef,
        args: list[Value],
        keywords: dict[str, Value],
        bound: int = 0,
    ) -> Env:
        """A function's parameters bound to a call's arguments (after ``bound`` leading
        ones, ``self`` of a method); a device-like parameter not given is any device."""
        env: Env = {}
        positional = [*node.params.posonly_params, *node.params.params][bound:]
        for param in parameters(node.params):
            name = param.name.value
            value = keywords.get(name, UNKNOWN)
            if name_guesses.is_device_like_name(name) and value is UNKNOWN:
                default = _default_device(param)
                value = Value(
                    Kind.DEVICE,
                    default or ANY_DEVICE,
                    chosen=frozenset() if default is None else None,
                )
            env[name] = value
        for param, value in zip(positional, args, strict=False):
            env[param.name.value] = value
        return env

    def detached(
        self, node: cst.FunctionDef, env: Env, **context: object
    ) -> tuple[Env, list[Value], Records]:
        """Run a function body from ``env`` without recording anything for the rules: the
        environment it ends with, the values it returns and what it would have recorded
        (``context``: a method's class)."""
        saved = (self.core.env, self.core.rec, self.core.pending, self.core.returns)
        saved_flow = (self.core.cuda_required, self.core.exits_without_cuda)
        self.core.env, self.core.rec, self.core.pending, self.core.returns = env, Records(), [], []
        self.depth += 1
        self.core.assigned_keys.pop(id(node), None)  # a new run of the body
        try:
            with self.core.scope(function=node, loop=None, **context):
                self.core.statements.suite(node.body)
            return self.core.env, self.core.returns, self.core.rec
        finally:
            self.depth -= 1
            self.core.cuda_required, self.core.exits_without_cuda = saved_flow
            self.core.env, self.core.rec, self.core.pending, self.core.returns = saved


def _code_size(body: cst.IndentedBlock) -> int:
    """The top-level statements of a function body, its docstring not counted."""
    first = body.body[0] if body.body else None
    docstring = (
        type(first) is cst.SimpleStatementLine
        and type(first.body[0]) is cst.Expr
        and type(first.body[0].value) in (cst.SimpleString, cst.ConcatenatedString)
    )
    return len(body.body) - docstring


def _default_device(param: cst.Param) -> Placement:
    """The device a parameter's literal default names (``device="cpu"``), else None."""
    text = string_value(param.default) if param.default is not None else None
    return placement_of_device_string(text) if text is not None else None
