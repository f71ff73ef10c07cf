"""Source rewrites that several fixes share: the ``to(device)`` pattern and the MPS branch.

Each helper returns template text for a ``devlint.rule.Replace`` (``{device}``, ``{nl}``,
``{indent}``, ``{tab}`` are filled in by the engine), or None when the code is not in a
shape the rewrite handles; the rule then reports without a fix.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from devlint.rule import DEVICE, literal_text, source_of

CUDA_STRINGS = frozenset({"cuda", "cuda:0"})
MOVE_KEYWORDS = frozenset({"non_blocking", "memory_format"})


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
