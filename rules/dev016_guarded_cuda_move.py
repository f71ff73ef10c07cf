from collections.abc import Iterator

import libcst as cst

from devlint.analysis.facts import FileFacts
from devlint.analysis.values import Kind
from devlint.codemod import join_lines, rewrites_to_device, statement_lines
from devlint.rule import Finding, FixPlan, Replace, Rule, literal_text

MESSAGE = "Moves to CUDA only when it is available, else stays on the CPU, skipping MPS"
FOLD = "Move with `.to(device)` on the selected device"


class GuardedCudaMove(Rule):
    """
    ## What it does
    Checks for the tutorials' "method one": an `if torch.cuda.is_available():` (or
    `if use_cuda:`) statement whose only job is moving things with `.cuda()`, also under
    a nested `if` (an `else` may only move them back with `.cpu()`). Off by default: select `DEV016` to enable it,
    and its fix turns method one into method two. The one-line conditional expression
    `x.cuda() if torch.cuda.is_available() else x` is not an `if` block and is not
    reported (SPEC readers label it neither DEV016 nor DEV004).

    ## Why is this bad?
    The code chooses CUDA or nothing: on an Apple Silicon Mac it trains on the CPU,
    often ten times slower than on the GPU it has. Nothing fails, so it is not on by
    default; a choice between devices (`"cuda" if ... else "cpu"`, an if/else that
    moves to CUDA or back to the CPU) is DEV004.

    ## Example
    ```python
    model = Net()
    if torch.cuda.is_available():
        model = model.cuda()
    ```

    ## Use instead
    ```python
    device = torch.device(
        "cuda" if torch.cuda.is_available()
        else "mps" if torch.backends.mps.is_available()
        else "cpu"
    )
    model = Net()
    model = model.to(device)
    ```

    ## Fix safety
    Unsafe: the block is folded into its moves, written `.to(device)` with one device
    selection after the imports ("method two"), so on a Mac the code then runs on MPS,
    where some operators are missing or behave differently. When the test is an
    attribute such as `args.cuda`, which may carry the user's own choice, there is no fix.
    """

    code = "DEV016"
    name = "guarded-cuda-move"
    summary = "An availability check whose only job is `.cuda()` moves: CUDA or nothing"
    fix = "unsafe"
    default = False

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for conditional in facts.conditionals:
            test, node = conditional.test, conditional.node
            if test.kind is not Kind.GUARD or test.qualname != "cuda" or test.polarity <= 0:
                continue
            if test.classifies:
                continue  # ``if x.is_cuda:`` follows a placement, it tests no availability
            if conditional.enclosing_backends - {"cuda"}:
                continue
            if isinstance(node, cst.If) and _only_moves_to_cuda(node, facts):
                yield Finding(node, MESSAGE, _fold(node))


def _only_moves_to_cuda(node: cst.If, facts: FileFacts) -> bool:
    """``if cuda_ok: x = x.cuda()``: moves only; an ``else`` may only move back to the CPU
    (``else: model.cpu()``), which one ``.to(device)`` does as well."""
    if not isinstance(node.body, cst.IndentedBlock) or not _cpu_else(node.orelse):
        return False
    return bool(node.body.body) and all(_is_move(line, facts) for line in node.body.body)


def _cpu_else(orelse: cst.If | cst.Else | None) -> bool:
    if orelse is None:
        return True
    if not isinstance(orelse, cst.Else) or not isinstance(orelse.body, cst.IndentedBlock):
        return False
    return all(
        (values := _moves(line)) is not None and all(map(_is_cpu_call, values))
        for line in orelse.body.body
    )


def _is_cpu_call(value: cst.BaseExpression) -> bool:
    return (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "cpu"
        and not value.args
    )


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
    """A line of moves, or an ``if`` (without ``else``) of such lines:
    ``if opt.distill == "crd": contrast_idx = contrast_idx.cuda()``."""
    if isinstance(statement, cst.If):
        body = statement.body
        return (
            statement.orelse is None
            and isinstance(body, cst.IndentedBlock)
            and all(_is_move(line, facts) for line in body.body)
        )
    values = _moves(statement)
    return values is not None and all(map(facts.moves_to_cuda, values))


def _fold(node: cst.If) -> FixPlan | None:
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
