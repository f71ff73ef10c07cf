from collections.abc import Iterator

import libcst as cst

from devlint.analysis.facts import CallRecord, FileFacts
from devlint.rule import Finding, FixPlan, Replace, Rule, literal_text, source_of

REPLACEMENTS = {
    "torch.cuda.amp.autocast": 'torch.amp.autocast("cuda", ...)',
    "torch.cuda.amp.autocast_mode.autocast": 'torch.amp.autocast("cuda", ...)',
    "torch.cuda.amp.GradScaler": 'torch.amp.GradScaler("cuda", ...)',
    "torch.cuda.amp.grad_scaler.GradScaler": 'torch.amp.GradScaler("cuda", ...)',
}

# torch.cuda.amp.autocast(enabled, dtype, cache_enabled): passed on by keyword
AUTOCAST_POSITIONAL = ("enabled", "dtype", "cache_enabled")


class DeprecatedCudaAmp(Rule):
    """
    ## What it does
    Checks for `torch.cuda.amp.autocast(...)` and `torch.cuda.amp.GradScaler(...)`,
    through any import form.

    ## Why is this bad?
    Both are deprecated since PyTorch 2.4 (`FutureWarning`) in favour of the
    device-generic `torch.amp` API, and they hard-code CUDA: on a Mac or a CPU-only
    machine they warn that CUDA is unavailable and silently disable mixed precision.

    ## Example
    ```python
    scaler = torch.cuda.amp.GradScaler()
    with torch.cuda.amp.autocast():
        loss = model(x).sum()
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler(device.type)
    with torch.amp.autocast(device.type):
        loss = model(x).sum()
    ```

    ## Fix safety
    Rewriting to `torch.amp.autocast("cuda", ...)` / `torch.amp.GradScaler("cuda", ...)`
    is safe: it is what the deprecated functions call. Positional arguments of
    `autocast` become keywords (`autocast(False)` -> `autocast("cuda", enabled=False)`),
    since `torch.amp.autocast` takes `dtype` before `enabled`.
    """

    code = "DEV009"
    name = "deprecated-cuda-amp"
    summary = "`torch.cuda.amp` autocast / GradScaler are deprecated and CUDA-only"
    fix = "safe"
    needs = ("amp",)

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if call.callee in REPLACEMENTS:
                old = call.callee.rsplit(".", 1)[-1]
                new = REPLACEMENTS[call.callee]
                yield Finding(
                    call.node,
                    f"`torch.cuda.amp.{old}` is deprecated; use `{new}`",
                    _fix(call, new.split("(", 1)[0]),
                )


def _fix(call: CallRecord, function: str) -> FixPlan | None:
    """``torch.cuda.amp.X(args)`` -> ``torch.amp.X("cuda", args)``."""
    if any(
        arg.keyword is not None and arg.keyword.value == "device_type" for arg in call.node.args
    ):
        return None
    args = [
        literal_text(source_of(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)))
        for arg in call.node.args
    ]
    if function.endswith("autocast"):  # torch.amp.autocast takes dtype before enabled
        count = sum(arg.keyword is None and not arg.star for arg in call.node.args)
        if any(arg.star == "*" for arg in call.node.args) or count > len(AUTOCAST_POSITIONAL):
            return None
        named = zip(AUTOCAST_POSITIONAL, args[:count], strict=False)
        args = [f"{name}={text}" for name, text in named] + args[count:]
    arguments = ", ".join(['"cuda"', *args])
    text = function.replace("torch.", "{torch}.", 1) + f"({arguments})"
    return FixPlan(f'Use `{function}("cuda", ...)`', (Replace(call.node, text),))
