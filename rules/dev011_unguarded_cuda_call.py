from collections.abc import Iterator

from devlint.analysis import torch_api
from devlint.analysis.facts import FileFacts
from devlint.rule import Finding, Rule

# torch.cuda functions that raise where CUDA is absent (the table lives with the analysis,
# which also uses it: after one of them has run, CUDA is known to be there).
RAISING = torch_api.CUDA_ONLY_CALLS


class UnguardedCudaCall(Rule):
    """
    ## What it does
    Checks for `torch.cuda.*` calls that raise without CUDA (`synchronize`,
    `get_device_name`, `set_device`, `current_device`, ...) outside an availability guard
    (the same guards as DEV003).

    Code written to run with CUDA only is left alone: methods named for CUDA
    (`def cuda(self)`, `_replay_cuda_graph`), module-level functions named for CUDA that
    the file never calls unguarded, functions the file only calls after a check, methods
    of a class whose `__init__` refuses to run without CUDA, branches on DDP
    `device_ids is not None`, modules that
    import a CUDA-only package (`triton`, `apex`, `megatron`, ...) at module level, and
    modules that create CUDA streams (`torch.cuda.Stream()` outside any if/try). So are
    the sides of a torch-version test (`torch.Stream() if torch_2_7 else torch.cuda.Stream()`):
    compatibility code for another release.
    `torch.cuda.stream(s)` is not reported: it does nothing for `None`, and any real
    stream came from a call that is.

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

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if call.callee not in RAISING or call.site.guarded or call.site.cuda_required:
                continue
            if not facts.in_torch_version_branch(call.site):
                yield Finding(
                    call.node,
                    f"`{call.callee}()` raises without CUDA; check `torch.cuda.is_available()`",
                )
