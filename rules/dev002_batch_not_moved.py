from collections.abc import Iterator

import libcst as cst

from devlint.analysis.facts import FileFacts
from devlint.analysis.values import describe_accelerator, is_cpu, may_be_accelerator
from devlint.rule import Finding, Rule


class BatchNotMoved(Rule):
    """
    ## What it does
    In a loop over a data loader, checks for a batch element (typically the labels)
    that is never moved to the device but is used together with values that are on
    it: the moved model's output in a loss, a comparison such as `preds == labels`, or
    the moved model called on the unmoved input.

    ## Why is this bad?
    A `DataLoader` yields CPU tensors. Mixing them with CUDA tensors raises
    `RuntimeError: Expected all tensors to be on the same device, but found at least
    two devices, cuda:0 and cpu!` on the first batch, but only on a GPU machine.

    ## Example
    ```python
    for images, labels in train_loader:
        images = images.to(device)
        loss = criterion(model(images), labels)
    ```

    ## Use instead
    ```python
    for images, labels in train_loader:
        images, labels = images.to(device), labels.to(device)
        loss = criterion(model(images), labels)
    ```

    ## Fix safety
    Moving the element where the batch is unpacked, with the device expression the
    loop already uses, is safe: it only changes where the tensor lives.
    """

    code = "DEV002"
    name = "batch-not-moved"
    summary = "A data-loader batch element is used with device tensors without being moved"
    fix = "safe"
    needs = ("for",)

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        reported: set[tuple[int, str]] = set()
        for mix in facts.mixes:
            loop = mix.site.loop
            if loop is None:
                continue
            on_device = [
                op.value.where for op in mix.operands if may_be_accelerator(op.value.where)
            ]
            if not on_device:
                continue
            stale = []
            for operand in mix.operands:
                if operand.node is None or not operand.value.from_batch:
                    continue
                if not is_cpu(operand.value.where):
                    continue
                name = _source(operand.node)
                if (id(loop), name) not in reported:
                    reported.add((id(loop), name))
                    stale.append(name)
            if stale:
                names = ", ".join(f"`{name}`" for name in stale)
                device = describe_accelerator(on_device[0])
                yield Finding(
                    mix.node,
                    f"{names} from the data loader is still on the CPU but is used with "
                    f"values on {device}; move it with `.to(device)`",
                )


def _source(node: cst.CSTNode) -> str:
    """The batch element an operand uses: ``target`` for ``target.view_as(pred).long()``."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        node = node.func.value
    text = cst.Module(body=[]).code_for_node(node)
    return text if len(text) <= 40 else text[:37] + "..."
