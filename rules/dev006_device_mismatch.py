from collections.abc import Iterator

from devlint.analysis.facts import FileFacts
from devlint.analysis.values import describe_accelerator, is_cpu, may_be_accelerator
from devlint.rule import Finding, Rule


class DeviceMismatch(Rule):
    """
    ## What it does
    Checks for an operation that combines values on known different devices outside a
    data-loader loop: arithmetic or a comparison between a CPU tensor and one that may be
    on an accelerator, `torch.cat` / `torch.stack` of such tensors, a model moved to the
    device called on a CPU tensor, or a loss of the model's output against CPU targets.

    ## Why is this bad?
    PyTorch does not move tensors implicitly. On a GPU machine the operation raises
    `RuntimeError: Expected all tensors to be on the same device, but found at least two
    devices, cuda:0 and cpu!`; on a CPU-only machine the same script runs, so the bug
    ships.

    ## Example
    ```python
    model = Net().to(device)
    sample = torch.randn(1, 28 * 28)
    logits = model(sample)
    ```

    ## Use instead
    ```python
    model = Net().to(device)
    sample = torch.randn(1, 28 * 28, device=device)
    logits = model(sample)
    ```

    ## Fix safety
    No automatic fix: which side should move is a design decision.

    Zero-dimensional tensors made from numbers (`torch.tensor(2.0)`) are allowed to mix
    with tensors on any device and are not reported.
    """

    code = "DEV006"
    name = "device-mismatch"
    summary = "An operation combines tensors on different devices"

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for mix in facts.mixes:
            operands = mix.operands
            if mix.site.loop is not None and any(op.value.from_batch for op in operands):
                continue  # a batch element from the loader: DEV002 reports it
            on_cpu = [op for op in operands if is_cpu(op.value.where)]
            elsewhere = [op.value.where for op in operands if may_be_accelerator(op.value.where)]
            if on_cpu and elsewhere:
                device = describe_accelerator(elsewhere[0])
                yield Finding(
                    mix.node, f"This combines a CPU tensor with a value that may be on {device}"
                )
