from collections.abc import Iterator, Sequence

import libcst as cst

from devlint import device_errors
from devlint.analysis.facts import FileFacts
from devlint.analysis.values import Kind
from devlint.codemod import fold_method_one, moved_values, nested_move_lines, only_moves_to_cuda
from devlint.rule import Finding, Rule

MESSAGE = "Moves to CUDA only when it is available, else stays on the CPU, skipping MPS"


class GuardedCudaMove(Rule):
    """
    ## What it does
    Checks for the tutorials' "method one": an `if torch.cuda.is_available():` (or
    `if use_cuda:`) statement whose only job is moving things with `.cuda()`, also under
    a nested `if` (a block that also wraps the model, `nn.DataParallel(model).cuda()`,
    does more than move; an `else` may only move them back with `.cpu()`; an if/else that
    makes new tensors on CUDA or on the CPU, `torch.zeros(n).cuda()` /
    `torch.zeros(n).cpu()`, is a device choice: DEV004). Off by default: select `DEV016` to enable it,
    and its fix turns method one into method two. The one-line conditional expression
    `x.cuda() if torch.cuda.is_available() else x` is not an `if` block: it chooses CUDA
    or the CPU, a DEV004 choice (docs/design.md §4, "Device choices").

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
    virtual_note = "the availability APIs answer as on that machine; the program prints its choice"
    runtime_errors = (device_errors.NO_CUDA,)

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for conditional in facts.conditionals:
            test, node = conditional.test, conditional.node
            if test.kind is not Kind.GUARD or test.qualname != "cuda" or test.polarity <= 0:
                continue
            if test.classifies:
                continue  # ``if x.is_cuda:`` follows a placement, it tests no availability
            if conditional.enclosing_backends - {"cuda"}:
                continue
            if not isinstance(node, cst.If) or not only_moves_to_cuda(node, facts):
                continue
            if node.orelse is not None and _creates(node):
                continue  # new tensors made on CUDA or on the CPU: DEV004's device choice
            if not _cuda_calls_only(node.body):
                continue  # ``x.to("cuda")`` is no ``.cuda()``: SPEC's method one is the latter
            yield Finding(node, MESSAGE, fold_method_one(node), test.placed)


def _cuda_calls_only(block: cst.BaseSuite) -> bool:
    """Every move of the block (and of its nested blocks) is a ``.cuda()`` call."""
    return _cuda_calls_only_in(block.body if isinstance(block, cst.IndentedBlock) else ())


def _cuda_calls_only_in(lines: Sequence[cst.BaseStatement]) -> bool:
    for line in lines:
        nested = nested_move_lines(line)
        if nested is not None:
            if not _cuda_calls_only_in(nested):
                return False
            continue
        for value in moved_values(line):
            func = value.func if isinstance(value, cst.Call) else None
            if not (isinstance(func, cst.Attribute) and func.attr.value == "cuda"):
                return False
    return True


def _creates(node: cst.If) -> bool:
    """A move of a value made right there (``torch.zeros(n).cuda()``), not of one the
    code already has (``model.cuda()``)."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    return any(
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and isinstance(call.func.value, cst.Call)
        for line in body
        for call in moved_values(line)
    )
