from collections.abc import Iterator

import libcst as cst

from devlint import device_errors
from devlint.analysis.facts import CallRecord, FileFacts
from devlint.analysis.values import Kind, Value, code_chosen
from devlint.rule import Finding, FixPlan, Replace, Rule, as_receiver, literal_text

MESSAGE = "A float64 tensor is moved to a device that may be MPS, which has no float64"


class Float64ToMps(Rule):
    """
    ## What it does
    Checks for a float64 tensor moved to a device that may be Apple's MPS: `.to(device)`
    or a factory's `device=` where the code may choose `mps` (a three-way selection, a
    `torch.accelerator` device, accelerate's device, such a device passed in by a call in
    the file). A device left to the caller or the user (a `device` parameter that no call
    in the file fills, `self.device` of one, a `--device` option) is not read as MPS: the
    user may pass it, but the code chooses none. The tensor is float64 when it comes
    from NumPy's default dtype (`torch.from_numpy(np.random.rand(...))`,
    `torch.tensor(np.zeros(...))`), or when the code asks for it (`.double()`,
    `dtype=torch.float64`).

    ## Why is this bad?
    MPS has no float64: the move raises `TypeError: Cannot convert a MPS Tensor to float64
    dtype as the MPS framework doesn't support float64. Please use float32 instead.` The
    script works on CUDA and the CPU and crashes on a Mac.

    ## Example
    ```python
    device = torch.device("mps" if torch.backends.mps.is_available() else "cpu")
    noise = torch.from_numpy(np.random.normal(0, 1, (8, 16))).to(device)
    ```

    ## Use instead
    ```python
    device = torch.device("mps" if torch.backends.mps.is_available() else "cpu")
    noise = torch.from_numpy(np.random.normal(0, 1, (8, 16))).float().to(device)
    ```

    ## Fix safety
    Unsafe: `.float()` is inserted before the move when the value comes from NumPy (its
    float64 is an accident of NumPy's default); it changes the precision on every device.
    A float64 the code asked for (`.double()`, `dtype=torch.float64`) is reported without
    a fix: the author decides.
    """

    code = "DEV018"
    name = "float64-to-mps"
    summary = "A float64 tensor moved to a device that may be MPS"
    fix = "unsafe"
    virtual_note = "a float64 tensor on virtual MPS raises MPS's own TypeError"
    runtime_errors = (device_errors.FLOAT64_ON_MPS,)

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if call.method == "to" and not call.casts_only and call.receiver is not None:
                target = call.args[0] if call.args else call.keywords.get("device")
                if _float64(call.receiver) and _may_be_mps(target):
                    assert target is not None
                    fix = _float_first(call, call.receiver)
                    yield Finding(call.node, MESSAGE, fix, target.placed)
            elif call.callee is not None and call.receiver is None:
                result = facts.value_of(call.node)
                device = call.keywords.get("device")
                if _float64(result) and "dtype" not in call.keywords and _may_be_mps(device):
                    assert device is not None
                    yield Finding(call.node, MESSAGE, None, device.placed)


def _float64(value: Value) -> bool:
    return value.kind is Kind.TENSOR and bool(value.float64)


def _may_be_mps(device: Value | None) -> bool:
    """A device the code may choose MPS for (not where only the caller or the user may
    pass it: ``Value.chosen``)."""
    if device is None or device.kind not in (Kind.DEVICE, Kind.TENSOR):
        return False
    chosen = code_chosen(device)
    return chosen is not None and "mps" in chosen


def _float_first(call: CallRecord, receiver: Value) -> FixPlan | None:
    """``x.to(device)`` -> ``x.float().to(device)`` for NumPy's accidental float64."""
    func = call.node.func
    if receiver.float64 != "numpy" or not isinstance(func, cst.Attribute):
        return None
    text = literal_text(as_receiver(func.value)) + ".float()"
    return FixPlan("Convert to float32 before the move", (Replace(func.value, text),))
