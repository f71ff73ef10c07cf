import re
from collections.abc import Iterator

import libcst as cst

from devlint import device_errors
from devlint.analysis.facts import (
    CallRecord,
    CudaApi,
    FileFacts,
    Site,
    cuda_api,
    cuda_api_table,
    equivalent_in,
)
from devlint.analysis.values import Kind
from devlint.codemod import generic_fix, raises_without_cuda
from devlint.rule import Finding, FixPlan, Replace, Rule
from devlint.torch_target import format_target

CUDA_STRING = re.compile(r"cuda(:\d+)?")
# Calls whose first argument names a device type (not a placement: DEV003 has those).
DEVICE_TYPE_CALLS = frozenset(
    {
        "torch.autocast",
        "torch.amp.autocast",
        "torch.amp.autocast_mode.autocast",
        "torch.amp.GradScaler",
        "torch.amp.grad_scaler.GradScaler",
        "torch.get_device_module",
    }
)
PLACEMENT_CALLS = frozenset({"torch.device"})


class CudaApiInGenericCode(Rule):
    """
    ## What it does
    For device-generic (library) code, checks for

    - `torch.cuda.*` calls that have a device-generic equivalent in `target-torch` (the
      table below), even inside an availability check: `torch.cuda.synchronize()` ->
      `torch.accelerator.synchronize()`, `torch.cuda.empty_cache()` ->
      `torch.accelerator.memory.empty_cache()` (torch 2.9);
    - `"cuda"` device strings hard-coded outside a CUDA-specific branch: a device type
      given to `torch.autocast` / `torch.amp.autocast` / `torch.amp.GradScaler` /
      `device_type=`, and placements (`torch.device("cuda")`, `.to("cuda")`,
      `device="cuda"`) inside a check that is not about CUDA (`if
      torch.accelerator.is_available():`). Unguarded placements are DEV003's.

    Not reported: `torch.cuda.is_available()` itself (the test that makes a branch
    CUDA-specific), strings inside a CUDA-specific branch (`if device.type == "cuda":`,
    `if torch.cuda.is_available():`), code the analysis knows to be written for CUDA only
    (a module that imports `triton`, methods named for CUDA, ...; see DEV011), the sides of
    a torch-version test, and the unguarded `torch.cuda` calls that raise without CUDA
    (DEV011 reports and fixes those the same way). Off by default: select it for library
    code, and allow CUDA-only files with `per-file-ignores`.

    ## Why is this bad?
    Code that spells `torch.cuda` runs on NVIDIA (and ROCm) GPUs only: on an Apple, Intel
    or other accelerator it raises or silently skips its work. The `torch.accelerator`
    API does the same thing on whichever accelerator the machine has. Projects police
    this today with regular expressions in pre-commit hooks, which know no guards and
    no torch versions.

    ## Example
    ```python
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    print(torch.cuda.memory_allocated())
    ```

    ## Use instead
    ```python
    if torch.accelerator.is_available():
        torch.accelerator.synchronize()
    print(torch.accelerator.memory.memory_allocated() if torch.accelerator.is_available() else 0)
    ```

    ## Fix safety
    From the table: a call inside an availability check becomes its equivalent (safe:
    where CUDA is present the current accelerator is CUDA). Elsewhere the accelerator
    functions, which raise without an accelerator unlike `torch.cuda.empty_cache()` or
    `torch.cuda.memory_allocated()`, run behind `torch.accelerator.is_available()`, with
    the value the CUDA call had without CUDA (`0`, `None`): safe. Unsafe where the table
    says so: `device_count()` counts other accelerators too (code that loops over it may
    call CUDA), `manual_seed(_all)` -> `torch.manual_seed` also reseeds the CPU.
    `current_stream`/`set_stream` have no fix (`torch.Stream` is not `torch.cuda.Stream`),
    A device type given to autocast or a scaler becomes `device.type` (the device
    variable in scope, or one device selection added after the imports): unsafe, since
    mixed precision then runs on that device, with its own supported dtypes. Hard-coded
    placements have no fix: which device to use instead is the author's choice.
    """

    code = "DEV017"
    name = "cuda-api-in-generic-code"
    summary = 'A `torch.cuda` API or a `"cuda"` string in device-generic code'
    default = False
    fix = "safe"
    virtual_note = "the availability APIs answer as on that machine"
    runtime_errors = (device_errors.NO_CUDA,)
    example_target_torch = "2.9"  # torch.accelerator.memory

    @classmethod
    def documentation(cls) -> str:
        table = cuda_api_table()
        return f"{super().documentation()}\n\n## The table of equivalents\n\n{table}"

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        target = self.settings.target_torch
        for call in facts.calls:
            if call.site.cuda_required:
                continue
            api = cuda_api(call.callee)
            equivalent = equivalent_in(api, target) if api else None
            strings = list(_cuda_strings(call, facts))
            reported = bool(api and equivalent and api.reported) and not raises_without_cuda(
                call, facts
            )
            if not (reported or strings) or facts.in_torch_version_branch(call.site):
                continue
            if api and equivalent and reported:
                yield Finding(
                    call.node,
                    f"`{call.callee}()` is CUDA-only; use `{equivalent}()`{_since(api)}",
                    generic_fix(call, api, target, guarded=call.site.guarded),
                )
            for string, device_type in strings:
                fix = FixPlan("Use `device.type`", (Replace(string, "{device}.type"),), "unsafe")
                yield Finding(
                    string,
                    '`"cuda"` hard-coded in device-generic code; use the device in use '
                    "(`device.type`)",
                    fix if device_type else None,
                )


def _since(api: CudaApi) -> str:
    return f" (torch {format_target(api.since)})" if api.since and api.since >= (2, 0) else ""


def _cuda_strings(call: CallRecord, facts: FileFacts) -> Iterator[tuple[cst.SimpleString, bool]]:
    """The ``"cuda"`` device strings of ``call`` that are not in CUDA-specific code, each
    with whether it names a device type (autocast, GradScaler) rather than a placement."""
    device_type = call.callee in DEVICE_TYPE_CALLS
    positional_device = call.callee in PLACEMENT_CALLS or call.method == "to"
    # unguarded placements are DEV003's; guarded ones only count outside CUDA's branches
    guarded_elsewhere = call.site.guarded
    if guarded_elsewhere and _cuda_specific(call.site, facts):
        return
    for index, arg in enumerate(call.node.args):
        keyword = arg.keyword.value if arg.keyword is not None else None
        is_type = keyword == "device_type" or (
            device_type and (keyword == "device" or (keyword is None and index == 0))
        )
        first = keyword is None and index == 0 and positional_device
        named = is_type or (guarded_elsewhere and (keyword == "device" or first))
        value = arg.value
        if named and isinstance(value, cst.SimpleString) and _is_cuda(value):
            yield value, is_type


def _is_cuda(string: cst.SimpleString) -> bool:
    text = string.evaluated_value
    return isinstance(text, str) and CUDA_STRING.fullmatch(text) is not None


def _cuda_specific(site: Site, facts: FileFacts) -> bool:
    """Whether ``site`` only runs where CUDA (not just any accelerator) is present."""
    if site.cuda_required:
        return True
    tested = set()
    for branch in site.branches:
        if not isinstance(branch.node, cst.If | cst.IfExp):
            continue
        test = facts.value_of(branch.node.test)
        positive = branch.part is branch.node.body
        if test.kind is Kind.GUARD and test.polarity == (1 if positive else -1):
            tested.add(test.qualname)
    # a guard of another shape (assert, early exit, skip decorator) is taken to be CUDA's
    return "cuda" in tested or not tested
