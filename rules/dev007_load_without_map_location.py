from collections.abc import Iterator

import libcst as cst

from devlint.analysis.facts import FileFacts
from devlint.rule import Finding, FixPlan, Replace, Rule


class LoadWithoutMapLocation(Rule):
    """
    ## What it does
    Checks for `torch.load(...)` without `map_location=`.

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
    needs = ("load",)

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if call.callee != "torch.load" or "map_location" in call.keywords:
                continue
            if any(arg.star == "**" for arg in call.node.args) or len(call.args) >= 2:
                continue  # map_location may come through **kwargs or positionally
            yield Finding(call.node, "`torch.load()` without `map_location`", _fix(call.node))


def _fix(call: cst.Call) -> FixPlan | None:
    """Add ``map_location=device`` (the device in scope, else ``"cpu"``) after the arguments."""
    if not call.args or call.args[-1].value.lpar:
        return None
    text = ", map_location={device_or_cpu}"
    return FixPlan("Add `map_location`", (Replace(call.args[-1].value, text, where="after"),))
