from collections.abc import Iterator

from devlint import device_errors
from devlint.analysis.facts import RELEASES, FileFacts, OpCall, Verdict, op_calls
from devlint.rule import Finding, Rule
from devlint.torch_target import TorchVersion, format_target

FAILS = (
    "`{call}` {subject} runs `{op}`, which has no MPS kernel {when}: it "
    "raises NotImplementedError there unless `PYTORCH_ENABLE_MPS_FALLBACK=1` runs it on the CPU"
)
FALLS_BACK = (
    "`{call}` {subject} runs `{op}`, which falls back to the CPU on MPS "
    "{when} (a warning and a copy each way, even without `PYTORCH_ENABLE_MPS_FALLBACK=1`)"
)


class OpNotOnMps(Rule):
    """
    ## What it does
    Checks for a call whose aten operator has no MPS kernel in the configured
    `target-torch`, on a value that may be on Apple's MPS: a tensor moved with
    `.to(device)` where the device may be `mps` (a three-way selection,
    `torch.device("mps")`, `torch.accelerator.current_accelerator()`), a module moved
    there (or built in the `__init__` of a model moved there), a `GradScaler` made for it.

    Which operators a call runs comes from torch itself: devlint's op map records each
    public call (`torch.linalg.eig`, `Tensor.take`, `nn.Embedding(max_norm=...)`,
    `nn.RReLU` in training, `F.interpolate(mode="bicubic")`, fused optimizers...) under a
    `TorchDispatchMode`; which have an MPS kernel in each release comes from the
    `native_functions.yaml` of torch's macOS wheels, composite and structured-delegate
    paths resolved, and from the kernels and CPU fallbacks its MPS sources register.

    Nothing is reported where MPS is not possible: CPU-only code, a CUDA-or-CPU choice.
    Nor is an operator that falls back to the CPU only in releases older than its MPS
    kernel (`linalg_vector_norm` in torch 2.0): it runs there, a little slower.

    ## Why is this bad?
    The script runs on CUDA and on the CPU, and on a Mac stops with
    `NotImplementedError: The operator 'aten::linalg_eig' is not currently implemented
    for the MPS device.`, the most reported MPS crash (pytorch/pytorch#77764, #141287).
    `PYTORCH_ENABLE_MPS_FALLBACK=1` runs such operators on the CPU, with a warning and a
    copy each way. A few operators (`embedding_renorm_`, `linalg_svd`) always fall back,
    silently slower. Several gained a kernel in later releases: the message names the
    first one. `devlint run --device mps --report script.py` runs the script under
    virtual MPS at `target-torch` and lists every such operator it reaches, backward
    passes included (exit 1 when one is missing).

    ## Example
    ```python
    device = torch.device("mps" if torch.backends.mps.is_available() else "cpu")
    x = torch.randn(8, 8).to(device)
    values, vectors = torch.linalg.eig(x)
    ```

    ## Use instead
    ```python
    device = torch.device("mps" if torch.backends.mps.is_available() else "cpu")
    x = torch.randn(8, 8).to(device)
    values, vectors = torch.linalg.eig(x.cpu())  # no MPS kernel: compute it on the CPU
    ```
    or require a torch release that has the kernel (`target-torch`), or set
    `PYTORCH_ENABLE_MPS_FALLBACK=1` before torch is imported.

    ## Fix safety
    No fix: CPU fallback, a newer torch or `PYTORCH_ENABLE_MPS_FALLBACK` is the author's call.

    ## Options
    `target-torch`: the oldest torch the project supports; an operator that has an MPS
    kernel from a later release is reported with that release.
    """

    code = "DEV019"
    name = "op-not-on-mps"
    summary = "A call whose aten operator has no MPS kernel, on a value that may be on MPS"
    virtual_note = (
        "an aten operator without an MPS kernel raises torch's NotImplementedError on virtual MPS "
        "(mps_ops.py); MPSFallback.mm's operators warn and run"
    )
    runtime_errors = (device_errors.MPS_OPERATOR_MISSING,)
    # a module is reported where it is built, fails where called

    INVALID = (
        """
        device = torch.device("mps")
        emb = nn.Embedding(10, 3, max_norm=1.0).to(device)
        """,
        """
        device = torch.accelerator.current_accelerator()
        x = torch.randn(4, 4, device=device)
        y = x.take(torch.tensor([0, 5], device=device))
        """,
    )
    VALID = (
        """
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        x = torch.randn(4, 4).to(device)
        values, vectors = torch.linalg.eig(x)
        """,
        """
        x = torch.randn(4, 4)
        y = torch.take(x, torch.tensor([0, 5]))
        """,
        """
        device = torch.device("mps")
        emb = nn.Embedding(10, 3).to(device)
        """,
    )

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        target = self.settings.target_torch
        for found in op_calls(facts):
            if not found.may_be_mps:
                continue
            verdict = found.verdict(target)
            if verdict is not None:
                yield Finding(found.node, message(found, verdict, target), None, found.placed)


def message(found: OpCall, verdict: Verdict, target: TorchVersion) -> str:
    """The diagnostic: the call, the operator, the releases, what happens on MPS."""
    shown = format_target(min(max(target, RELEASES[0]), RELEASES[-1]))
    if verdict.since is not None:
        when = f"in torch {shown} (first in torch {format_target(verdict.since)})"
    elif verdict.outcome == "M":
        when = f"in any torch release up to {format_target(RELEASES[-1])}"
    else:
        when = f"in torch {shown}"
    template = FAILS if verdict.outcome == "M" else FALLS_BACK
    return template.format(
        call=found.display, subject=found.subject, op=verdict.operator, when=when
    )
