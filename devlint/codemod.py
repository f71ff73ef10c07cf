"""Source rewrites that several fixes share: the ``to(device)`` pattern and the MPS branch.

Each helper returns template text for a ``devlint.rule.Replace`` (``{device}``, ``{nl}``,
``{indent}``, ``{tab}`` are filled in by the engine), or None when the code is not in a
shape the rewrite handles; the rule then reports without a fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import libcst as cst

from devlint.analysis import accelerator_api, torch_api
from devlint.analysis.accelerator_api import CudaApi
from devlint.analysis.facts import IDENTITY_WRAPPERS, CallRecord, FileFacts, receivers
from devlint.analysis.values import CPU, Kind
from devlint.diagnostics import Applicability
from devlint.rule import DEVICE, FixPlan, Replace, literal_text, source_of
from devlint.torch_target import TorchVersion

CUDA_STRINGS = frozenset({"cuda", "cuda:0"})
MOVE_KEYWORDS = frozenset({"non_blocking", "memory_format"})
FOLD = "Move with `.to(device)` on the selected device"


def is_cuda_string(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value in CUDA_STRINGS


def rewrites_to_device(call: cst.BaseExpression) -> bool:
    """Whether the edit can rewrite ``call`` to ``.to(device)``: ``x.cuda()`` (keywords
    ``non_blocking``/``memory_format`` only) or ``x.to("cuda")``. Whether a call moves
    to CUDA at all is the analysis's answer (``FileFacts.moves_to_cuda``)."""
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
        return False
    method, args = call.func.attr.value, call.args
    if method == "cuda":
        return all(arg.keyword is not None and arg.keyword.value in MOVE_KEYWORDS for arg in args)
    return (
        method == "to"
        and len(args) >= 1
        and args[0].keyword is None
        and is_cuda_string(args[0].value)
        and all(arg.keyword is not None for arg in args[1:])
    )


class _ToDevice(cst.CSTTransformer):
    def __init__(self) -> None:
        self.count = 0

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if not rewrites_to_device(original):
            return updated
        assert isinstance(updated.func, cst.Attribute)
        self.count += 1
        keywords = [arg for arg in updated.args if arg.keyword is not None]
        first = cst.Arg(DEVICE)
        if keywords:
            first = first.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return updated.with_changes(
            func=updated.func.with_changes(attr=cst.Name("to")), args=[first, *keywords]
        )


def to_device(node: cst.CSTNode) -> tuple[str, int]:
    """The source of ``node`` with every CUDA move written ``.to({device})``, and how many."""
    transformer = _ToDevice()
    rewritten = node.visit(transformer)
    assert isinstance(rewritten, cst.CSTNode)
    text = literal_text(source_of(rewritten)).replace(DEVICE.value, "{device}")
    return text, transformer.count


class _CpuToMps(cst.CSTTransformer):
    def __init__(self) -> None:
        self.count = 0

    def leave_SimpleString(
        self, original: cst.SimpleString, updated: cst.SimpleString
    ) -> cst.SimpleString:
        if original.evaluated_value != "cpu":
            return updated
        self.count += 1
        quote = original.quote
        return updated.with_changes(value=f"{original.prefix}{quote}mps{quote}")


def mps_variant(node: cst.CSTNode) -> str | None:
    """The source of ``node`` with its ``"cpu"`` string written ``"mps"`` (exactly once)."""
    transformer = _CpuToMps()
    rewritten = node.visit(transformer)
    assert isinstance(rewritten, cst.CSTNode)
    return literal_text(source_of(rewritten)) if transformer.count == 1 else None


def statement_lines(statements: Sequence[cst.BaseStatement], rewrite: bool) -> list[str] | None:
    """Simple statements as template lines (their comments kept), ``.to({device})`` if asked.

    None if any statement is compound: only flat blocks are moved around.
    """
    lines: list[str] = []
    for statement in statements:
        if not isinstance(statement, cst.SimpleStatementLine):
            return None
        for empty in statement.leading_lines:
            lines.append(literal_text(empty.comment.value) if empty.comment else "")
        bare = statement.with_changes(leading_lines=())
        text = to_device(bare)[0] if rewrite else literal_text(source_of(bare))
        lines.append(text.rstrip("\r\n"))
    return lines


def join_lines(lines: Sequence[str], extra_indent: str = "") -> str:
    """Template lines joined for a block that starts at ``{indent}`` (blank lines stay empty)."""
    prefix = "{indent}" + extra_indent
    return lines[0] + "".join("{nl}" + (prefix + line if line else "") for line in lines[1:])


# -- "method one": ``if torch.cuda.is_available():`` blocks of ``.cuda()`` moves


def method_one_blocks(facts: FileFacts) -> list[tuple[cst.If | cst.IfExp, FixPlan | None]]:
    """Every ``if`` / conditional expression on a CUDA availability test that moves
    something to CUDA when it holds, with the fold that turns it into ``.to(device)`` moves
    (None where no fold is written). Such code stays on the CPU where a device selection
    that a fix adds picks MPS: a fix that adds one must fold them too, or is not safe."""
    found: list[tuple[cst.If | cst.IfExp, FixPlan | None]] = []
    for conditional in facts.conditionals:
        test, node = conditional.test, conditional.node
        if test.kind is not Kind.GUARD or test.qualname != "cuda" or test.polarity <= 0:
            continue
        if test.classifies or not _moves_something_to_cuda(node.body, facts):
            continue
        foldable = isinstance(node, cst.If) and only_moves_to_cuda(node, facts)
        found.append(
            (node, fold_method_one(node) if isinstance(node, cst.If) and foldable else None)
        )
    return found


class _CudaMoves(cst.CSTVisitor):
    def __init__(self, facts: FileFacts) -> None:
        self.facts, self.found = facts, False

    def visit_Call(self, node: cst.Call) -> bool:
        self.found = self.found or self.facts.moves_to_cuda(node)
        return not self.found


def _moves_something_to_cuda(body: cst.CSTNode, facts: FileFacts) -> bool:
    visitor = _CudaMoves(facts)
    body.visit(visitor)
    return visitor.found


def only_moves_to_cuda(node: cst.If, facts: FileFacts) -> bool:
    """``if cuda_ok: x = x.cuda()``: moves only; an ``else`` may only move back to the CPU
    (``else: model.cpu()``, ``x.to("cpu")``), which one ``.to(device)`` does as well."""
    if not isinstance(node.body, cst.IndentedBlock) or not _cpu_else(node.orelse, facts):
        return False
    return bool(node.body.body) and all(_is_move(line, facts) for line in node.body.body)


def _cpu_else(orelse: cst.If | cst.Else | None, facts: FileFacts) -> bool:
    if orelse is None:
        return True
    if not isinstance(orelse, cst.Else) or not isinstance(orelse.body, cst.IndentedBlock):
        return False
    return all(
        (values := _moves(line)) is not None and all(_is_cpu_move(v, facts) for v in values)
        for line in orelse.body.body
    )


def _is_cpu_move(value: cst.BaseExpression, facts: FileFacts) -> bool:
    """``x.cpu()``, or ``x.to(device)`` with a device known to be the CPU (``device =
    "cpu"``, GPT-SoVITS's training scripts)."""
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return False
    method = value.func.attr.value
    if method == "cpu":
        return not value.args
    if method != "to" or len(value.args) != 1:
        return False
    target = facts.value_of(value.args[0].value)
    return target.kind is Kind.DEVICE and target.where == CPU


def moved_values(statement: cst.BaseStatement) -> list[cst.BaseExpression]:
    """The values a statement of moves computes (none for any other statement)."""
    return _moves(statement) or []


def _moves(statement: cst.BaseStatement) -> list[cst.BaseExpression] | None:
    """The values a statement of moves computes (None: it does something else)."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return None
    values: list[cst.BaseExpression] = []
    for small in statement.body:
        if not isinstance(small, cst.Expr | cst.Assign):
            return None
        value = small.value
        values += [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
    return values


def _is_move(statement: cst.BaseStatement, facts: FileFacts) -> bool:
    """A line of moves, or a block of such lines (``nested_move_lines``)."""
    lines = nested_move_lines(statement)
    if lines is not None:
        return bool(lines) and all(_is_move(line, facts) for line in lines)
    values = _moves(statement)
    return (
        values is not None
        and all(map(facts.moves_to_cuda, values))
        and not any(  # ``nn.DataParallel(model).cuda()`` wraps before it moves
            facts.wraps_for_parallelism(receiver)
            for value in values
            if isinstance(value, cst.Call)
            for receiver in receivers(value)
        )
    )


def nested_move_lines(statement: cst.BaseStatement) -> Sequence[cst.BaseStatement] | None:
    """The lines of a block that a block of moves may hold: an ``if`` (``if opt.distill ==
    "crd": contrast_idx = contrast_idx.cuda()``; its ``else`` and ``elif`` too), a ``for``
    over what to move (``for i in range(n): feats[i] = feats[i].cuda()``, NCRFpp) and a
    ``try`` whose handlers only ``pass`` (OpenNRE); None for any other statement, and for
    a body on the line of its header."""
    if isinstance(statement, cst.If) and isinstance(statement.body, cst.IndentedBlock):
        orelse = statement.orelse
        if isinstance(orelse, cst.Else):
            if not isinstance(orelse.body, cst.IndentedBlock):
                return None
            return [*statement.body.body, *orelse.body.body]
        return [*statement.body.body, *((orelse,) if orelse else ())]
    if (isinstance(statement, cst.For) and statement.orelse is None) or (
        isinstance(statement, cst.Try)
        and statement.orelse is None
        and statement.finalbody is None
        and all(_only_passes(handler.body) for handler in statement.handlers)
    ):
        body = statement.body
    else:
        return None
    return body.body if isinstance(body, cst.IndentedBlock) else None


def _only_passes(block: cst.BaseSuite) -> bool:
    lines = block.body if isinstance(block, cst.IndentedBlock) else (block,)
    return all(
        isinstance(line, cst.SimpleStatementLine | cst.SimpleStatementSuite)
        and all(isinstance(small, cst.Pass) for small in line.body)
        for line in lines
    )


def else_is_body_on_cpu(node: cst.If, facts: FileFacts) -> bool:
    """The ``else`` is the body without its ``.cuda()`` calls: the same computation, on
    CUDA when it is available and on the CPU otherwise (``w = torch.ones(n).cuda() * a``
    / ``w = torch.ones(n) * a``; ``out = net(x.cuda())`` / ``out = net(x)``). Not when
    that is all the body does (``v = Variable(x.cuda())`` / ``v = Variable(x)``): method
    one with its CPU case spelled out, DEV016's."""
    assert isinstance(node.orelse, cst.Else)
    stripped = _WithoutCuda()
    body = [_bare(cast(cst.CSTNode, statement.visit(stripped))) for statement in node.body.body]
    orelse = [_bare(statement) for statement in node.orelse.body.body]
    if not stripped.found or len(body) != len(orelse):
        return False
    if not all(a.deep_equals(b) for a, b in zip(body, orelse, strict=True)):
        return False
    unwrapped = _WithoutCuda(facts)
    return not all(_only_names(statement.visit(unwrapped)) for statement in node.body.body)


class _WithoutCuda(cst.CSTTransformer):
    """``x.cuda()``, ``x.cuda(0)`` -> ``x``; given the facts, ``Variable(x)`` -> ``x`` too."""

    def __init__(self, facts: FileFacts | None = None) -> None:
        self.found = False
        self.facts = facts

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        if isinstance(func, cst.Attribute) and func.attr.value == "cuda":
            self.found = True
            return func.value
        call = self.facts.call_of(original) if self.facts is not None else None
        if call is not None and call.callee in IDENTITY_WRAPPERS and updated.args:
            return updated.args[0].value
        return updated


def _only_names(statement: object) -> bool:
    """``x = y``, ``self.x = y``: a statement that computes nothing."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    return all(
        isinstance(small, cst.Assign) and isinstance(small.value, cst.Name | cst.Attribute)
        for small in statement.body
    )


def _bare(statement: cst.CSTNode) -> cst.CSTNode:
    """A statement without the comments and blank lines around it."""
    if isinstance(statement, cst.SimpleStatementLine):
        return statement.with_changes(
            leading_lines=(), trailing_whitespace=cst.TrailingWhitespace()
        )
    if isinstance(statement, cst.BaseCompoundStatement):
        return statement.with_changes(leading_lines=())
    return statement


def fold_method_one(node: cst.If) -> FixPlan | None:
    """Drop the availability test and move with ``.to(device)`` unconditionally."""
    if not isinstance(node.body, cst.IndentedBlock) or isinstance(node.test, cst.Attribute):
        return None  # ``if args.cuda:`` may also hold the user's choice: keep it theirs
    if not all(isinstance(line, cst.SimpleStatementLine) for line in node.body.body):
        return None  # a nested ``if`` of moves: the fold is the user's to write
    if not all(rewrites_to_device(v) for line in node.body.body for v in _moves(line) or ()):
        return None  # ``.cuda(rank)``: one GPU of several, no ``.to(device)`` for it
    lines = statement_lines(node.body.body, rewrite=True)
    if lines is None:
        return None
    comment = node.body.header.comment
    if comment is not None:  # the comment on the ``if`` line goes with the first move
        if "#" in lines[0]:
            lines.insert(0, literal_text(comment.value))
        else:
            lines[0] += "  " + literal_text(comment.value)
    return FixPlan(FOLD, (Replace(node, join_lines(lines)),))


# --- torch.cuda calls and their torch.accelerator equivalents (DEV011, DEV017) ----------


def raises_without_cuda(call: CallRecord, facts: FileFacts) -> bool:
    """Whether ``call`` is a ``torch.cuda`` call that raises without CUDA, unguarded: what
    DEV011 reports (DEV017 leaves these to it)."""
    if call.callee not in torch_api.CUDA_ONLY_CALLS or call.site.guarded or call.site.cuda_required:
        return False
    if call.callee == "torch.cuda.device" and not (call.entered and _literal_argument(call.node)):
        # Only entering the context raises (``torch.cuda.device(i)`` made and returned, as
        # an accelerator API does, is an object: eval/blind120, blind122). ``with
        # torch.cuda.device(dev):`` enters a device chosen elsewhere, where its own check
        # belongs (one missing check, one report: eval/READING.md); a literal ordinal
        # (``torch.cuda.device(1)``) is this call's own choice.
        return False
    return not facts.in_torch_version_branch(call.site)


def _literal_argument(node: cst.Call) -> bool:
    return bool(node.args) and isinstance(node.args[0].value, cst.Integer | cst.SimpleString)


def guarded_call(call: CallRecord, text: str, backend: str, stand_in: str) -> str:
    """``text`` (the call's new code) run only where ``backend`` is available: an ``if``
    block for a statement alone on its line, else a conditional expression."""
    if call.own_line:
        return f"if {backend}.is_available():{{nl}}{{indent}}{{tab}}{text}"
    text = f"{text} if {backend}.is_available() else {stand_in}"
    return text if call.discarded else f"({text})"


def generic_fix(
    call: CallRecord, api: CudaApi, target: TorchVersion, *, guarded: bool
) -> FixPlan | None:
    """``call`` rewritten to ``api``'s device-generic equivalent, if ``target`` has one.

    Where no accelerator is known to be present (``guarded`` false) and the equivalent
    raises without one, it runs behind ``torch.accelerator.is_available()``; otherwise the
    value the ``torch.cuda`` call had without CUDA (``0`` for ``memory_allocated``), or
    ``None`` for a statement, or the entry's stand-in (an unsafe fix).
    """
    equivalent = accelerator_api.equivalent_in(api, target)
    arguments = accelerator_arguments(call.node, api)
    if equivalent is None or api.swap == "none" or arguments is None:
        return None
    new = equivalent.replace("torch.", "{torch}.", 1) + f"({arguments})"
    safety: Applicability = api.swap
    if not guarded and api.equivalent_raises:
        stand_in = api.without_cuda or ("None" if call.discarded else api.fallback)
        if stand_in is None:
            return None
        if api.without_cuda is None and not call.discarded:
            safety = "unsafe"
        new = guarded_call(call, new, "{torch}.accelerator", stand_in)
    return FixPlan(f"Use `{equivalent}`", (Replace(call.node, new),), safety)


def accelerator_arguments(node: cst.Call, api: CudaApi) -> str | None:
    """The call's arguments for the equivalent (positional-only there), or None."""
    texts = []
    for arg in node.args:
        if arg.star or (arg.keyword is not None and arg.keyword.value not in ("device", "seed")):
            return None
        if api.int_only and not isinstance(arg.value, cst.Integer | cst.Name):
            return None
        if isinstance(arg.value, cst.Name) and api.int_only and arg.value.value != "None":
            return None
        texts.append(literal_text(source_of(arg.value)))
    return ", ".join(texts)
