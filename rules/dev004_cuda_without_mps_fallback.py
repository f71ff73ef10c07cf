from collections.abc import Iterator, Sequence

import libcst as cst

from devlint.analysis.facts import Conditional, FileFacts
from devlint.analysis.values import CPU, CUDA, Kind, Placement
from devlint.rule import Finding, Rule

MESSAGE = "Device choice falls back from CUDA straight to CPU, skipping Apple's MPS"


class CudaWithoutMpsFallback(Rule):
    """
    ## What it does
    Checks for a device choice that tries CUDA and falls back straight to the CPU:
    `"cuda" if torch.cuda.is_available() else "cpu"` (also inside `torch.device(...)`),
    the same as an `if`/`else` statement, or a helper function that returns
    `torch.device("cuda")` when CUDA is available and `torch.device("cpu")` otherwise.

    ## Why is this bad?
    On an Apple Silicon Mac the model silently trains on the CPU, often ten times slower
    than on the GPU it has. Nothing fails; the run is just slow.

    ## Example
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ```

    ## Use instead
    ```python
    device = torch.device(
        "cuda" if torch.cuda.is_available()
        else "mps" if torch.backends.mps.is_available()
        else "cpu"
    )
    ```
    or, with PyTorch 2.6 and later:
    ```python
    device = (
        torch.accelerator.current_accelerator()
        if torch.accelerator.is_available() else torch.device("cpu")
    )
    ```

    ## Fix safety
    The three-way selection is an unsafe fix: on a Mac the code then runs on MPS,
    where some operators are missing or behave differently.
    """

    code = "DEV004"
    name = "cuda-without-mps-fallback"
    summary = "A device choice that tries CUDA, then CPU, and never MPS"
    fix = "unsafe"
    needs = ("cuda",)

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for conditional in facts.conditionals:
            test = conditional.test
            if test.kind is not Kind.GUARD or test.qualname != "cuda" or not test.polarity:
                continue
            if conditional.enclosing_backends - {"cuda"}:
                continue
            when_true, when_false = _branches(conditional, facts)
            if test.polarity < 0:
                when_true, when_false = when_false, when_true
            if when_true == CUDA and when_false == CPU:
                yield Finding(conditional.node, MESSAGE)


def _branches(conditional: Conditional, facts: FileFacts) -> tuple[Placement, Placement]:
    """The devices chosen when the test is true and when it is false."""
    node = conditional.node
    if isinstance(node, cst.IfExp):
        return _device(facts, node.body), _device(facts, node.orelse)
    body = _chosen(facts, node.body.body)
    if isinstance(node.orelse, cst.Else):
        return body, _chosen(facts, node.orelse.body.body)
    following = conditional.next_statement
    if node.orelse is None and following is not None and _returns(node.body.body):
        return body, _chosen(facts, [following])
    return body, None


def _chosen(facts: FileFacts, statements: Sequence[cst.CSTNode]) -> Placement:
    """The device a branch assigns or returns, when it ends by doing exactly that."""
    if not statements:
        return None
    last = statements[-1]
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1]
    if isinstance(last, cst.Assign | cst.Return) and last.value is not None:
        return _device(facts, last.value)
    return None


def _device(facts: FileFacts, expr: cst.BaseExpression) -> Placement:
    value = facts.value_of(expr)
    return value.where if value.kind is Kind.DEVICE else None


def _returns(statements: Sequence[cst.CSTNode]) -> bool:
    last = statements[-1] if statements else None
    if isinstance(last, cst.SimpleStatementLine):
        return isinstance(last.body[-1], cst.Return)
    return False
