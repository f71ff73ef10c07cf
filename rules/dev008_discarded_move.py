from collections.abc import Iterator

import libcst as cst

from devlint.analysis import torch_api
from devlint.analysis.facts import CallRecord, FileFacts
from devlint.analysis.values import Kind, Value
from devlint.rule import Finding, FixPlan, Replace, Rule, literal_text, source_of

MOVES = frozenset({"to", "cuda", "cpu"})


class DiscardedMove(Rule):
    """
    ## What it does
    Checks for `x.to(...)`, `x.cuda()` or `x.cpu()` as a bare statement on a tensor, so
    that the moved copy is thrown away. Only calls that change placement are moves: a
    discarded dtype cast (`x.to(torch.float32)`, `x.to(dtype=...)`, `x.to(x.dtype)`,
    `x.to(memory_format=...)`) is not a device bug and is not reported; `x.to(other)`
    with another tensor moves to its device and is.

    ## Why is this bad?
    For an `nn.Module`, `.to()` moves the parameters in place; for a tensor it returns a
    new tensor and leaves `x` where it was. The next line uses the old, unmoved tensor
    and fails with a device mismatch on the GPU.

    ## Example
    ```python
    inputs = torch.randn(8, 3)
    inputs.to(device)
    ```

    ## Use instead
    ```python
    inputs = torch.randn(8, 3)
    inputs = inputs.to(device)
    ```

    ## Fix safety
    Assigning the result back (`x = x.to(...)`) is unsafe only in that it changes which
    object later code sees; it is what the author meant.

    Modules and values of unknown kind (function parameters, batch objects whose `.to()`
    moves in place, such as HuggingFace's `BatchEncoding`) are not reported.
    """

    code = "DEV008"
    name = "discarded-move"
    summary = "A tensor's `.to()` / `.cuda()` / `.cpu()` result is thrown away"
    fix = "unsafe"

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.calls:
            receiver = call.receiver
            if not call.discarded or call.method not in MOVES or receiver is None:
                continue
            if call.method == "to" and not _changes_placement(call):
                continue
            if receiver.kind is Kind.TENSOR and not receiver.whole_batch:
                yield Finding(
                    call.node,
                    f"`.{call.method}()` returns a new tensor; assign the result",
                    _fix(call.node),
                )


def _changes_placement(call: CallRecord) -> bool:
    """Whether ``x.to(...)`` names a device (or a tensor): not only a dtype or a format."""
    if "device" in call.keywords or any(arg.star for arg in call.node.args):
        return True
    positional = [arg for arg in call.node.args if arg.keyword is None]
    if not positional:  # ``x.to(dtype=...)``, ``x.to(memory_format=...)``
        return False
    return not _is_dtype(positional[0].value, call.args[0])


def _is_dtype(expr: cst.BaseExpression, value: Value) -> bool:
    """``torch.float32`` (through any import), ``x.dtype``, ``dtype``, ``self.compute_dtype``,
    ``torch.get_default_dtype()``."""
    if value.kind is Kind.IMPORTED and value.qualname in torch_api.DTYPES:
        return True
    if isinstance(expr, cst.Call):
        expr = expr.func
    name = expr.attr.value if isinstance(expr, cst.Attribute) else None
    if isinstance(expr, cst.Name):
        name = expr.value
    return name is not None and name.endswith("dtype")


def _fix(call: cst.Call) -> FixPlan | None:
    """``x.to(device)`` -> ``x = x.to(device)``, when ``x`` is a name or an attribute."""
    func = call.func
    if not isinstance(func, cst.Attribute) or not isinstance(func.value, cst.Name | cst.Attribute):
        return None
    target = literal_text(source_of(func.value))
    return FixPlan(f"Assign the result to `{target}`", (Replace(call, f"{target} = ", "before"),))
