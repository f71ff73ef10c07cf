from collections.abc import Iterator

import libcst as cst

from devlint import device_errors
from devlint.analysis.facts import FileFacts, Mix, Operand, names_lengths
from devlint.analysis.values import (
    Value,
    chain,
    describe_accelerator,
    is_cpu,
    may_be_accelerator,
    placed_on_accelerator,
    provenance,
)
from devlint.rule import Finding, Rule, source_of


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
    virtual_note = "operations check that their tensor inputs share one virtual device"
    virtual_at_flagged_line = True
    runtime_errors = (device_errors.MIXED_DEVICES,)
    runtime_rank = 0

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        reported: set[int] = set()  # a mismatch is reported once, not again where it flows
        for mix in facts.mixes:
            operands = mix.operands
            if mix.site.loop is not None and any(op.value.from_batch for op in operands):
                continue  # a batch element from the loader: DEV002 reports it
            if any(_refetched_batch(op.value) for op in operands):
                continue
            on_cpu = [op for op in operands if is_cpu(op.value.where) and not _lengths(op, mix)]
            elsewhere = [op for op in operands if placed_on_accelerator(op.value)]
            if not (on_cpu and elsewhere) or facts.factories_meeting_inputs(mix):
                continue  # a factory without ``device=`` meeting the inputs: DEV013
            if any(op.node is not None and id(op.node) in reported for op in operands):
                reported.add(id(mix.node))
                continue
            reported.add(id(mix.node))
            device = describe_accelerator(elsewhere[0].value.where)
            cpu, other = _name(on_cpu[0], mix), _name(elsewhere[0], mix)
            message = f"`{cpu}` is on the CPU but `{other}` may be on {device}"
            related = chain(provenance(on_cpu[0].value), provenance(elsewhere[0].value))
            yield Finding(mix.node, message, related=related)


def _refetched_batch(value: Value) -> bool:
    """A batch element on the CPU on one path and moved on another (``x, y = next(it)``
    in a ``try`` whose handler may keep last iteration's moved ``y``): where it is depends
    on the path through the loop, not on the machine, so no device is known to differ."""
    where = value.where
    if not value.from_batch or where is None:
        return False
    return "cpu" in where and may_be_accelerator(where)


def _lengths(operand: Operand, mix: Mix) -> bool:
    """A call's lengths or sizes argument, which may stay on the CPU (``name_guesses``)."""
    node = operand.node
    if not isinstance(mix.node, cst.Call) or not isinstance(node, cst.Name | cst.Attribute):
        return False  # a named argument, not ``x.view(batch_size, -1)``
    return names_lengths(source_of(node))


def _name(operand: Operand, mix: Mix) -> str:
    """How the message names an operand: its source (shortened), or the module called."""
    node = operand.node
    if node is None and isinstance(mix.node, cst.Call):
        node = mix.node.func
    text = " ".join(source_of(node).split()) if node is not None else "the module"
    return text if len(text) <= 40 else text[:37] + "..."
