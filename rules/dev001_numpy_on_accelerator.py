from collections.abc import Iterator

import libcst as cst

from devlint import device_errors
from devlint.analysis.facts import FileFacts
from devlint.analysis.values import describe_accelerator, may_be_accelerator
from devlint.rule import Finding, FixPlan, Replace, Rule, as_receiver, literal_text

NUMPY_CONVERSIONS = frozenset({"numpy.array", "numpy.asarray", "numpy.asanyarray"})


class NumpyOnAccelerator(Rule):
    """
    ## What it does
    Checks for `.numpy()`, `np.array(x)` and `np.asarray(x)` on a tensor that may live on
    an accelerator (CUDA or MPS): one produced by `.cuda()`, `.to(device)`, a factory
    with `device=...`, a model that was moved to the device, or any tensor computed from
    those, with no `.cpu()` in between.

    ## Why is this bad?
    NumPy arrays live in host memory. On a GPU machine the call raises
    `TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to
    copy the tensor to host memory first.` The script works on the author's CPU-only
    laptop and crashes on the training server (or the other way round).

    ## Example
    ```python
    logits = model(images.to(device))
    preds = logits.argmax(dim=1).numpy()
    ```

    ## Use instead
    ```python
    logits = model(images.to(device))
    preds = logits.argmax(dim=1).cpu().numpy()
    ```

    ## Fix safety
    Inserting `.cpu()` before the conversion is safe: it is a no-op for tensors already
    on the CPU, and where the original ran (on the CPU) it needed no `.detach()` either.

    ## Verified behaviour
    `devlint verify` runs the fixtures: the bad programs run on CPU and raise the
    `TypeError` above on CUDA and MPS.
    """

    code = "DEV001"
    name = "numpy-on-accelerator"
    summary = "`.numpy()` / `np.array()` on a tensor that may be on an accelerator"
    fix = "safe"
    virtual_note = "`.numpy()` / `np.asarray` of a device tensor raise PyTorch's TypeError"
    virtual_at_flagged_line = True
    runtime_errors = (device_errors.NUMPY_OF_DEVICE_TENSOR,)

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.calls:
            func = call.node.func
            if (
                call.method == "numpy"
                and call.receiver is not None
                and not call.receiver.computed_from  # nor what another package returned
                and not call.node.args
            ):
                tensor_value = call.receiver
                what = "`.numpy()`"
                tensor = func.value if isinstance(func, cst.Attribute) else None
            elif call.callee in NUMPY_CONVERSIONS and call.args and not call.args[0].computed_from:
                tensor_value = call.args[0]  # not what another package's function returned
                what = f"`np.{call.callee.rsplit('.', 1)[-1]}()`"
                first = call.node.args[0]
                tensor = first.value if first.keyword is None and not first.star else None
            else:
                continue
            if may_be_accelerator(tensor_value.where):
                device = describe_accelerator(tensor_value.where)
                yield Finding(
                    call.node,
                    f"{what} on a tensor that may be on {device}; call `.cpu()` first",
                    _fix(tensor),
                    tensor_value.placed,
                )


def _fix(tensor: cst.BaseExpression | None) -> FixPlan | None:
    """``x.numpy()`` -> ``x.cpu().numpy()``; ``np.array(x)`` -> ``np.array(x.cpu())``."""
    if tensor is None:
        return None
    text = literal_text(as_receiver(tensor)) + ".cpu()"
    return FixPlan("Insert `.cpu()`", (Replace(tensor, text),))
