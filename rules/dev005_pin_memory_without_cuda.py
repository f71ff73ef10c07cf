from collections.abc import Iterator

import libcst as cst

from devlint.analysis.facts import DATA_LOADERS, FileFacts, forwards_placement
from devlint.analysis.values import Kind, may_be_tensor
from devlint.rule import Finding, FixPlan, Replace, Rule, as_receiver, literal_text, source_of


class PinMemoryWithoutCuda(Rule):
    """
    ## What it does
    Checks for `DataLoader(..., pin_memory=True)` (a literal or a constant) and
    `tensor.pin_memory()` in code that also runs where CUDA is absent: outside every
    CUDA availability guard. A `"pin_memory": True` entry of a dict unpacked into a
    loader (`DataLoader(ds, **kwargs)`) is not reported: it is neither a literal nor a
    constant at the keyword, the form the rule checks. The
    `pin_memory()` method of a custom batch type is the hook the loader calls only when
    it pins: the pins in it are the loader's, not reported there.

    ## Why is this bad?
    Pinned memory only speeds up host-to-CUDA copies. Without an accelerator PyTorch
    warns `'pin_memory' argument is set as true but no accelerator is found, then device
    pinned memory won't be used`, and on Apple's MPS it warns that pinning is not
    supported; `tensor.pin_memory()` raises on machines without CUDA.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, pin_memory=True)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, pin_memory=torch.cuda.is_available())
    ```

    ## Fix safety
    Replacing `True` by `torch.cuda.is_available()` is safe: it keeps pinning exactly
    where it helps. Where the code already chose a device (a `device` variable or
    parameter, `self.device`), the fix follows that choice instead:
    `pin_memory=str(device).startswith("cuda")` (a device string or a `torch.device`
    alike), so a `--no-accel` or `--device cpu` run does not pin. `x.pin_memory()` on a name becomes
    `(x.pin_memory() if torch.cuda.is_available() else x)`; on other expressions there
    is no fix (the receiver would be evaluated twice).
    """

    code = "DEV005"
    name = "pin-memory-without-cuda"
    summary = "`pin_memory=True` where the device may be MPS or CPU"
    fix = "safe"
    virtual_note = "DataLoader pinning runs torch's own code: silent on CUDA, its warning on MPS"

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if call.site.guarded or forwards_placement(call):
                continue  # guarded, or a custom batch's own ``pin_memory`` hook
            if call.callee in DATA_LOADERS:
                pin = call.keywords.get("pin_memory")
                if pin is not None and pin.kind is Kind.CONSTANT and pin.constant is True:
                    for arg in call.node.args:
                        if arg.keyword is not None and arg.keyword.value == "pin_memory":
                            yield Finding(arg, MESSAGE, _fix_value(arg.value))
            elif (
                call.method == "pin_memory"
                and call.receiver is not None
                and may_be_tensor(call.receiver)
                and not call.node.args
            ):
                yield Finding(
                    call.node,
                    "`.pin_memory()` also runs where there is no CUDA device",
                    _fix_method(call.node),
                )


MESSAGE = "`pin_memory=True` also runs where there is no CUDA device"


def _fix_value(value: cst.BaseExpression) -> FixPlan:
    return FixPlan(
        "Pin memory only when CUDA is available",
        (Replace(value, "{device_is_cuda}"),),
    )


def _fix_method(call: cst.Call) -> FixPlan | None:
    """``x.pin_memory()`` -> ``(x.pin_memory() if torch.cuda.is_available() else x)``.

    Only one branch of the conditional runs, so ``x`` is still evaluated once.
    """
    func = call.func
    if not isinstance(func, cst.Attribute):
        return None
    receiver = literal_text(as_receiver(func.value))
    text = f"({literal_text(source_of(call))} if {{torch}}.cuda.is_available() else {receiver})"
    return FixPlan("Pin memory only when CUDA is available", (Replace(call, text),))
