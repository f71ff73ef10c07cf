from collections.abc import Iterator

from devlint.analysis.facts import FileFacts
from devlint.rule import Finding, Rule

# torch.cuda functions that raise where CUDA is absent (checked on a CPU-only build);
# memory_allocated, empty_cache, manual_seed(_all) and friends are no-ops there.
RAISING = frozenset(
    f"torch.cuda.{name}"
    for name in (
        "synchronize", "get_device_name", "get_device_properties", "get_device_capability",
        "current_device", "set_device", "mem_get_info", "current_stream", "default_stream",
        "reset_peak_memory_stats", "memory_summary", "ipc_collect", "get_rng_state",
        "set_rng_state", "initial_seed", "Stream", "Event", "stream", "device",
    )
)  # fmt: skip


class UnguardedCudaCall(Rule):
    """
    ## What it does
    Checks for `torch.cuda.*` calls that raise without CUDA (`synchronize`,
    `get_device_name`, `set_device`, `current_device`, ...) outside an availability guard
    (the same guards as DEV003).

    ## Why is this bad?
    Timing code, logging of the GPU name or device selection by index crash the whole
    script on a laptop or a Mac: `AssertionError: Torch not compiled with CUDA enabled`.

    ## Example
    ```python
    print("training on", torch.cuda.get_device_name(0))
    ```

    ## Use instead
    ```python
    if torch.cuda.is_available():
        print("training on", torch.cuda.get_device_name(0))
    ```

    ## Fix safety
    No fix: whether to skip the call or take another path is the author's choice.
    """

    code = "DEV011"
    name = "unguarded-cuda-call"
    summary = "A `torch.cuda` call that raises without CUDA, outside a guard"
    needs = ("cuda",)

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if call.callee in RAISING and not call.site.guarded:
                yield Finding(
                    call.node,
                    f"`{call.callee}()` raises without CUDA; check `torch.cuda.is_available()`",
                )
