from collections.abc import Iterator

import libcst as cst

from devlint.analysis.facts import CallRecord, FileFacts, Site
from devlint.rule import Finding, FixPlan, Replace, Rule, literal_text, source_of
from devlint.torch_target import format_target

REPLACEMENTS = {
    "torch.cuda.amp.autocast": 'torch.amp.autocast("cuda", ...)',
    "torch.cuda.amp.autocast_mode.autocast": 'torch.amp.autocast("cuda", ...)',
    "torch.cuda.amp.GradScaler": 'torch.amp.GradScaler("cuda", ...)',
    "torch.cuda.amp.grad_scaler.GradScaler": 'torch.amp.GradScaler("cuda", ...)',
}

# torch.cuda.amp.autocast(enabled, dtype, cache_enabled): passed on by keyword
AUTOCAST_POSITIONAL = ("enabled", "dtype", "cache_enabled")

NEW_API = ("torch.amp.", "torch.autocast")
# The first releases with the replacements: ``torch.amp.GradScaler("cuda")`` (2.3), and
# ``torch.amp.autocast`` (2.0; before it, ``torch.autocast`` from 1.10).
TORCH_AMP_GRAD_SCALER = (2, 3)
TORCH_AMP_AUTOCAST = (2, 0)
# What an old torch raises for the new API: no ``torch.amp`` (AttributeError, ImportError),
# no ``device`` argument to ``torch.amp.GradScaler`` (TypeError, before 2.3).
FALLBACK_ERRORS = frozenset({"AttributeError", "ImportError", "ModuleNotFoundError", "TypeError"})


class DeprecatedCudaAmp(Rule):
    """
    ## What it does
    Checks for `torch.cuda.amp.autocast(...)` and `torch.cuda.amp.GradScaler(...)`,
    through any import form.

    Fallbacks for old PyTorch releases are not reported: a call in an `except` handler
    for `AttributeError`, `ImportError`, `ModuleNotFoundError` or `TypeError` (what the
    new API raises on an old release), and a call in one branch of an `if` or conditional
    expression that tests the torch version (`version.parse(torch.__version__) < ...`,
    `hasattr(torch, "amp")`, `_TORCH_GREATER_EQUAL_2_4`, `is_torch_version(...)`) when the
    other branch uses `torch.amp`:

    ```python
    try:
        scaler = torch.amp.GradScaler(device.type)
    except (AttributeError, TypeError):  # torch < 2.3
        scaler = torch.cuda.amp.GradScaler()
    ```

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

    The fix follows `target-torch`: `torch.amp.GradScaler` takes a device from torch 2.3
    on, so at an older target `GradScaler` is reported without a fix; below 2.0,
    `autocast` becomes `torch.autocast("cuda", ...)` (torch 1.10 and later).
    """

    code = "DEV009"
    name = "deprecated-cuda-amp"
    summary = "`torch.cuda.amp` autocast / GradScaler are deprecated and CUDA-only"
    fix = "safe"
    virtual_note = "the deprecation warnings come from torch's own amp code"

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        new_api_parts = {
            id(branch.part)
            for call in facts.calls
            if call.callee is not None and call.callee.startswith(NEW_API)
            for branch in call.site.branches
        }
        for call in facts.calls:
            if call.callee in REPLACEMENTS and not _old_torch_fallback(
                call.site, new_api_parts, facts
            ):
                old = call.callee.rsplit(".", 1)[-1]
                new = REPLACEMENTS[call.callee]
                function = new.split("(", 1)[0]
                target = self.settings.target_torch
                if function.endswith("autocast") and target < TORCH_AMP_AUTOCAST:
                    function, new = "torch.autocast", 'torch.autocast("cuda", ...)'
                fix = _fix(call, function)
                message = f"`torch.cuda.amp.{old}` is deprecated; use `{new}`"
                if function.endswith("GradScaler") and target < TORCH_AMP_GRAD_SCALER:
                    fix = None  # torch.amp.GradScaler takes no device before 2.3
                    message += f" (torch 2.3+; target-torch is {format_target(target)})"
                yield Finding(call.node, message, fix)


def _old_torch_fallback(site: Site, new_api_parts: set[int], facts: FileFacts) -> bool:
    """Whether ``site`` is the old-release side of a try/except or a version test."""
    for branch in site.branches:
        node, part = branch.node, branch.part
        if isinstance(part, cst.ExceptHandler | cst.ExceptStarHandler):
            if part.type is not None and _names(part.type) & FALLBACK_ERRORS:
                return True
        elif isinstance(node, cst.If | cst.IfExp):
            other = node.orelse if part is node.body else node.body
            if id(other) in new_api_parts and facts.tests_torch_version(node.test):
                return True
    return False


def _names(types: cst.BaseExpression) -> set[str]:
    """``AttributeError``, ``(ImportError, builtins.TypeError)`` -> their last names."""
    elements = [e.value for e in types.elements] if isinstance(types, cst.Tuple) else [types]
    found = set()
    for element in elements:
        if isinstance(element, cst.Name):
            found.add(element.value)
        elif isinstance(element, cst.Attribute):
            found.add(element.attr.value)
    return found


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
