from collections.abc import Iterator

import libcst as cst

from devlint import device_errors
from devlint.analysis.facts import FileFacts, receivers
from devlint.analysis.values import Kind, provenance
from devlint.rule import Finding, FixPlan, Replace, Rule, literal_text, source_of

MOVES = frozenset({"to", "cuda", "cpu"})


class DiscardedMove(Rule):
    """
    ## What it does
    Checks for `x.to(...)`, `x.cuda()` or `x.cpu()` as a bare statement on a tensor, so
    that the moved copy is thrown away. Only calls that change placement are moves: a
    discarded dtype cast (`x.to(torch.float32)`, `x.to(dtype=...)`, `x.to(x.dtype)`,
    `x.to(memory_format=...)`) is not a device bug and is not reported; `x.to(other)`
    with another tensor moves to its device and is. Neither is a tensor made in the
    statement itself (`torch.zeros(1).to(device)`, a warm-up of the device): no name
    holds the copy left behind.

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
    virtual_note = (
        "operations check that their tensor inputs share one virtual device: the tensor left "
        "behind meets device values later"
    )
    runtime_errors = (device_errors.NUMPY_OF_DEVICE_TENSOR, device_errors.MIXED_DEVICES)
    runtime_rank = 2

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.calls:
            receiver = call.receiver
            if not call.discarded or call.method not in MOVES or receiver is None:
                continue
            if call.casts_only:
                continue
            if _made_on_the_spot(call.node, facts):
                continue  # ``torch.zeros(1).to(device)``: a warm-up, no name left behind
            if receiver.kind is Kind.TENSOR and not receiver.whole_batch:
                yield Finding(
                    call.node,
                    f"`.{call.method}()` returns a new tensor; assign the result",
                    _fix(call.node),
                    provenance(receiver),
                )


def _made_on_the_spot(call: cst.Call, facts: FileFacts) -> bool:
    """The moved tensor is made in the statement itself (``torch.zeros(1).to(device)``,
    ``torch.ones(2).float().cuda()``): no name, attribute or item holds the tensor that
    stays behind, so nothing was meant to move. ``x.float().cuda()`` leaves ``x``."""
    chain = list(receivers(call))
    for receiver in chain:
        method = receiver.func if isinstance(receiver, cst.Call) else None
        if isinstance(method, cst.Attribute) and facts.value_of(method.value).kind is Kind.IMPORTED:
            return True  # ``torch.zeros(1)``: a function of a module, not a method
    return bool(chain) and isinstance(chain[-1], cst.Call)


def _fix(call: cst.Call) -> FixPlan | None:
    """``x.to(device)`` -> ``x = x.to(device)``, when the tensor left behind is a name or an
    attribute (``x.float().cuda()`` -> ``x = x.float().cuda()``)."""
    base = list(receivers(call))[-1:]
    if not base or not isinstance(base[0], cst.Name | cst.Attribute):
        return None
    target = literal_text(source_of(base[0]))
    return FixPlan(f"Assign the result to `{target}`", (Replace(call, f"{target} = ", "before"),))
