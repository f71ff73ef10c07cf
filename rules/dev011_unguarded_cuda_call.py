from collections.abc import Iterator

from devlint import device_errors
from devlint.analysis.facts import CallRecord, FileFacts, cuda_api, cuda_api_table
from devlint.codemod import generic_fix, guarded_call, raises_without_cuda
from devlint.diagnostics import Applicability
from devlint.rule import Finding, FixPlan, Replace, Rule, literal_text, source_of
from devlint.torch_target import TorchVersion


class UnguardedCudaCall(Rule):
    """
    ## What it does
    Checks for `torch.cuda.*` calls that raise without CUDA (`synchronize`,
    `get_device_name`, `set_device`, `current_device`, ...) outside an availability guard
    (the same guards as DEV003).

    Code written to run with CUDA only is left alone: methods named for CUDA
    (`def cuda(self)`, `_replay_cuda_graph`), module-level functions named for CUDA that
    the file never calls unguarded, functions the file only calls after a check (private
    methods too: `self._fast_path(x)` only under `if x.device.type == "cuda":`), methods
    of a class whose `__init__` refuses to run without CUDA, branches on DDP
    `device_ids is not None`, modules that
    import a CUDA-only package (`triton`, `megatron`, `flash_attn`, ...) at module level. So are
    the sides of a torch-version test (`torch.Stream() if torch_2_7 else torch.cuda.Stream()`):
    compatibility code for another release.
    `torch.cuda.stream(s)` is not reported: it does nothing for `None`, and any real
    stream came from a call that is. Nor is `with torch.cuda.device(d):` for a device
    chosen elsewhere (a no-op for `None` and for a CPU tensor's index, -1); a literal
    ordinal (`torch.cuda.device(1)`) is.

    ## Why is this bad?
    Timing code, logging of the GPU name or device selection by index crash the whole
    script on a laptop or a Mac: `AssertionError: Torch not compiled with CUDA enabled`.

    ## Example
    ```python
    torch.cuda.synchronize()
    print("training on", torch.cuda.get_device_name(0))
    ```

    ## Use instead
    ```python
    if torch.accelerator.is_available():
        torch.accelerator.synchronize()
    print("training on", (torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"))
    ```

    ## Fix safety
    The fix depends on `target-torch` (the oldest torch the project supports) and on
    whether the call's value is used:

    - The call has a `torch.accelerator` equivalent in the target (table below): the
      equivalent, behind `torch.accelerator.is_available()` (the accelerator functions
      raise without an accelerator too). Safe for a statement (`synchronize()`,
      `reset_peak_memory_stats()`): where CUDA is present it does what the call did, and
      elsewhere it skips what used to crash; an MPS or XPU machine now synchronizes its own
      device. Unsafe for a used value (`current_device()`): the fallback stands in for it.
    - No equivalent in the target, the value unused: the call behind
      `torch.cuda.is_available()` (safe, for the same reason).
    - No equivalent, the value used: the call behind `torch.cuda.is_available()` with a
      stand-in value (`"cpu"` for `get_device_name`, `(0, 0)` for
      `get_device_capability` and `mem_get_info`); unsafe, the program goes on with it.
      Calls whose value has no sensible stand-in (`get_device_properties`, streams,
      events, RNG states) get no fix.

    A statement alone on its line is put in an `if` block; a used value (or a call after
    `;` or on an `if x:` line) becomes one conditional expression, which fits wherever the
    call was.
    """

    code = "DEV011"
    name = "unguarded-cuda-call"
    summary = "A `torch.cuda` call that raises without CUDA, outside a guard"
    fix = "safe"
    virtual_note = "torch.cuda calls answer on virtual CUDA and fail as on a Mac on virtual MPS"
    runtime_errors = (device_errors.NO_CUDA,)

    @classmethod
    def documentation(cls) -> str:
        table = cuda_api_table()
        return f"{super().documentation()}\n\n## The table of equivalents\n\n{table}"

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if raises_without_cuda(call, facts):
                yield Finding(
                    call.node,
                    f"`{call.callee}()` raises without CUDA; check `torch.cuda.is_available()`",
                    _fix(call, self.settings.target_torch),
                )


def _fix(call: CallRecord, target: TorchVersion) -> FixPlan | None:
    api = cuda_api(call.callee)
    if api is None:
        return None
    generic = generic_fix(call, api, target, guarded=False)
    if generic is not None:
        return generic
    stand_in = "None" if call.discarded else api.fallback
    if stand_in is None:
        return None
    original = literal_text(source_of(call.node))
    safety: Applicability = "safe" if call.discarded else "unsafe"
    return FixPlan(
        "Call it only where CUDA is available",
        (Replace(call.node, guarded_call(call, original, "{torch}.cuda", stand_in)),),
        safety,
    )
