from collections.abc import Iterator

import libcst as cst

from devlint.analysis.facts import CallRecord, FileFacts
from devlint.analysis.values import CUDA, Kind, Value
from devlint.rule import Finding, Rule

PLACEMENT_KEYWORDS = ("device", "map_location")
# Methods that forward to ``Module.cuda``/``Tensor.cuda``: their callers decide.
FORWARDING_FUNCTIONS = frozenset({"cuda", "to", "_apply"})
TORCH_CUDA_KEYWORDS = frozenset({"device", "non_blocking", "memory_format"})
NOT_TENSORS = (Kind.IMPORTED, Kind.CLASS, Kind.FUNCTION, Kind.CONSTANT, Kind.GUARD, Kind.DEVICE)


class UnguardedCuda(Rule):
    """
    ## What it does
    Checks for placement on CUDA (`.cuda()`, `.to("cuda")`, `device="cuda"`,
    `torch.device("cuda")`, `map_location="cuda"`) that runs whether or not CUDA is
    available: outside every availability guard (`if torch.cuda.is_available():`,
    `device.type == "cuda"`, an `assert`, an early `return`, `pytest.mark.skipif`, ...).

    ## Why is this bad?
    On a machine without an NVIDIA GPU, such as a laptop, a CI runner or an Apple Silicon
    Mac, the first placement raises `AssertionError: Torch not compiled with CUDA enabled`
    (CPU-only builds) or `RuntimeError: Found no NVIDIA driver` / `No CUDA GPUs are
    available`. The code only runs where its author ran it.

    ## Example
    ```python
    model = Net().cuda()
    inputs = torch.zeros(8, 3, device="cuda")
    ```

    ## Use instead
    Choose the device once, then place everything with it:
    ```python
    device = torch.device(
        "cuda" if torch.cuda.is_available()
        else "mps" if torch.backends.mps.is_available()
        else "cpu"
    )
    model = Net().to(device)
    inputs = torch.zeros(8, 3, device=device)
    ```

    ## Fix safety
    The rewrite to `.to(device)` / `device=device` with one device selection added to
    the module is safe: on CUDA machines it places everything exactly as before.
    """

    code = "DEV003"
    name = "unguarded-cuda"
    summary = "CUDA placement without a CUDA availability check"
    fix = "safe"
    needs = ("cuda",)

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if call.site.guarded or _forwards(call):
                continue
            if call.method == "cuda" and call.receiver is not None:
                if call.receiver.kind not in NOT_TENSORS and _is_torch_cuda_signature(call):
                    yield Finding(call.node, "`.cuda()` without a CUDA availability check")
            elif call.method == "to" and call.args and _cuda_literal(call.args[0]):
                yield Finding(call.node, '`.to("cuda")` without a CUDA availability check')
            elif (
                call.callee == "torch.device"
                and not call.reference_only
                and call.args
                and _cuda_literal(call.args[0])
            ):
                yield Finding(call.node, '`torch.device("cuda")` without a CUDA availability check')
            for arg in call.node.args:
                keyword = arg.keyword.value if arg.keyword is not None else None
                if keyword in PLACEMENT_KEYWORDS and _cuda_literal(call.keywords[keyword]):
                    yield Finding(arg, f'`{keyword}="cuda"` without a CUDA availability check')


def _cuda_literal(value: Value) -> bool:
    """A device written as a literal ``"cuda"`` string where CUDA may be absent."""
    return value.kind is Kind.DEVICE and value.where == CUDA and value.from_literal


def _is_torch_cuda_signature(call: CallRecord) -> bool:
    """``Tensor.cuda(device=None, non_blocking=False, memory_format=...)``: not another API."""
    return len(call.args) <= 2 and set(call.keywords) <= TORCH_CUDA_KEYWORDS


def _forwards(call: CallRecord) -> bool:
    function = call.site.function
    return (
        function is not None
        and function.name.value in FORWARDING_FUNCTIONS
        and isinstance(call.node.func, cst.Attribute)
    )
