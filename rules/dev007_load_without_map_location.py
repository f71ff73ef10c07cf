from collections.abc import Iterator

import libcst as cst

from devlint import device_errors
from devlint.analysis.facts import CallRecord, FileFacts, dotted_name
from devlint.rule import Finding, FixPlan, Replace, Rule

IN_MEMORY_BUFFERS = frozenset({"io.BytesIO", "_io.BytesIO"})


class LoadWithoutMapLocation(Rule):
    """
    ## What it does
    Checks for `torch.load(...)` without `map_location=`.

    A serialization round trip in memory is not reported: `torch.load(buffer)` of an
    `io.BytesIO` that `torch.save` filled in the same function (or module body), such as a
    deep copy through save and load, restores the tensors where this very process had
    them, which is what such code wants:

    ```python
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    copy = torch.load(buffer)
    ```

    Loads of files, and of buffers filled elsewhere, are reported.

    ## Why is this bad?
    `torch.load` puts every tensor back on the device it was saved from. A checkpoint
    saved on a GPU machine then fails to load on a CPU-only machine or a Mac with
    `RuntimeError: Attempting to deserialize object on a CUDA device but
    torch.cuda.is_available() is False`, or lands on GPU 0 of a multi-GPU machine.

    ## Example
    ```python
    state = torch.load("checkpoint.pt")
    ```

    ## Use instead
    ```python
    state = torch.load("checkpoint.pt", map_location=device)
    ```

    ## Fix safety
    Adding `map_location=device` (or `"cpu"` when no device is in scope) is unsafe: code
    that relied on tensors coming back on their original GPU would see them elsewhere.

    ## Verified behaviour
    The fixtures run clean on the CPU: the failure needs a checkpoint written on a GPU
    machine, which `devlint verify` cannot produce without one.
    """

    code = "DEV007"
    name = "load-without-map-location"
    summary = "`torch.load()` without `map_location`"
    fix = "unsafe"
    virtual_note = "torch.save records each tensor's virtual device; torch.load restores it"
    runtime_errors = (device_errors.CUDA_CHECKPOINT_WITHOUT_CUDA,)

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if call.callee != "torch.load" or "map_location" in call.keywords:
                continue
            if any(arg.star == "**" for arg in call.node.args) or len(call.args) >= 2:
                continue  # map_location may come through **kwargs or positionally
            if _in_memory_round_trip(call, facts):
                continue
            yield Finding(call.node, "`torch.load()` without `map_location`", _fix(call.node))


def _file_argument(call: cst.Call, position: int) -> cst.BaseExpression | None:
    """The ``f`` argument of ``torch.save(obj, f)`` (position 1) / ``torch.load(f)`` (0)."""
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "f":
            return arg.value
    return positional[position].value if len(positional) > position else None


def _in_memory_round_trip(load: CallRecord, facts: FileFacts) -> bool:
    """``torch.load(buf)`` (or ``torch.load(io.BytesIO(buf.getvalue()))``) where ``buf`` is
    an ``io.BytesIO`` that ``torch.save`` wrote to in the same function."""
    function = load.site.function
    same_scope = [call for call in facts.calls if call.site.function is function]
    buffers = {id(call.node) for call in same_scope if call.callee in IN_MEMORY_BUFFERS}
    if not buffers:
        return False
    saved = {
        dotted_name(target)
        for call in same_scope
        if call.callee == "torch.save" and (target := _file_argument(call.node, 1)) is not None
    }
    source = _file_argument(load.node, 0)
    if isinstance(source, cst.Call) and id(source) in buffers and source.args:
        # ``io.BytesIO(buf.getvalue())``: a copy of the bytes of a saved buffer
        inner = source.args[0].value
        if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute):
            source = inner.func.value
    return source is not None and dotted_name(source) in saved - {None}


def _fix(call: cst.Call) -> FixPlan | None:
    """Add ``map_location=device`` (the device in scope, else ``"cpu"``) after the arguments."""
    if not call.args or call.args[-1].value.lpar:
        return None
    text = ", map_location={device_or_cpu}"
    return FixPlan("Add `map_location`", (Replace(call.args[-1].value, text, where="after"),))
