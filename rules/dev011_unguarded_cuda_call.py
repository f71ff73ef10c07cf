from collections.abc import Iterator

import libcst as cst

from devlint import device_errors
from devlint.analysis import accelerator_api, torch_api
from devlint.analysis.accelerator_api import CudaApi
from devlint.analysis.facts import CallRecord, FileFacts
from devlint.diagnostics import Applicability
from devlint.rule import Finding, FixPlan, Replace, Rule, literal_text, source_of
from devlint.torch_target import TorchVersion

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
        table = accelerator_api.table_markdown()
        return f"{super().documentation()}\n\n## The table of equivalents\n\n{table}"

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if reports(call, facts):
                yield Finding(
                    call.node,
                    f"`{call.callee}()` raises without CUDA; check `torch.cuda.is_available()`",
                    _fix(call, self.settings.target_torch),
                )


def reports(call: CallRecord, facts: FileFacts) -> bool:
    """Whether DEV011 reports ``call`` (DEV017 leaves these to it)."""
    if call.callee not in RAISING or call.site.guarded or call.site.cuda_required:
        return False
    return not facts.in_torch_version_branch(call.site)


def _fix(call: CallRecord, target: TorchVersion) -> FixPlan | None:
    api = accelerator_api.lookup(call.callee)
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


def guarded_call(call: CallRecord, text: str, backend: str, stand_in: str) -> str:
    """``text`` (the call's new code) run only where ``backend`` is available: an ``if``
    block for a statement alone on its line, else a conditional expression."""
    if call.own_line:
        return f"if {backend}.is_available():{{nl}}{{indent}}{{tab}}{text}"
    text = f"{text} if {backend}.is_available() else {stand_in}"
    return text if call.discarded else f"({text})"


def generic_fix(
    call: CallRecord, api: CudaApi, target: TorchVersion, *, guarded: bool
) -> FixPlan | None:
    """``call`` rewritten to ``api``'s device-generic equivalent, if ``target`` has one.

    Where no accelerator is known to be present (``guarded`` false) and the equivalent
    raises without one, it runs behind ``torch.accelerator.is_available()``; otherwise the
    value the ``torch.cuda`` call had without CUDA (``0`` for ``memory_allocated``), or
    ``None`` for a statement, or the entry's stand-in (an unsafe fix).
    """
    equivalent = accelerator_api.equivalent_in(api, target)
    arguments = _arguments(call.node, api)
    if equivalent is None or api.swap == "none" or arguments is None:
        return None
    new = equivalent.replace("torch.", "{torch}.", 1) + f"({arguments})"
    safety: Applicability = api.swap
    if not guarded and api.equivalent_raises:
        stand_in = api.without_cuda or ("None" if call.discarded else api.fallback)
        if stand_in is None:
            return None
        if api.without_cuda is None and not call.discarded:
            safety = "unsafe"
        new = guarded_call(call, new, "{torch}.accelerator", stand_in)
    return FixPlan(f"Use `{equivalent}`", (Replace(call.node, new),), safety)


def _arguments(node: cst.Call, api: CudaApi) -> str | None:
    """The call's arguments for the equivalent (positional-only there), or None."""
    texts = []
    for arg in node.args:
        if arg.star or (arg.keyword is not None and arg.keyword.value not in ("device", "seed")):
            return None
        if api.int_only and not isinstance(arg.value, cst.Integer | cst.Name):
            return None
        if isinstance(arg.value, cst.Name) and api.int_only and arg.value.value != "None":
            return None
        texts.append(literal_text(source_of(arg.value)))
    return ", ".join(texts)
