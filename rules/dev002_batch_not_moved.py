from collections.abc import Iterator

import libcst as cst

from devlint import device_errors
from devlint.analysis.facts import FileFacts, Loop, names_lengths, names_raw_text
from devlint.analysis.values import (
    Kind,
    chain,
    describe_accelerator,
    is_cpu,
    placed_on_accelerator,
    provenance,
)
from devlint.rule import Finding, FixPlan, Replace, Rule, literal_text, source_of


class BatchNotMoved(Rule):
    """
    ## What it does
    In a loop over a data loader, checks for a batch element (typically the labels)
    that is never moved to the device but is used together with values that are on
    it: the moved model's output in a loss, a comparison such as `preds == labels`, or
    the moved model called on the unmoved input.

    ## Why is this bad?
    A `DataLoader` yields CPU tensors (unless its dataset holds device tensors or its
    `collate_fn`, a function of the file, moves what it collates). Mixing them with CUDA
    tensors raises
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
    Moving the element where the batch is unpacked (`labels = labels.to(device)` after
    the `for` line or the unpacking statement), with the device expression the loop
    already uses, is safe: it only changes where the tensor lives. Without such an
    expression in the loop, or for elements that are not plain names, there is no fix.
    """

    code = "DEV002"
    name = "batch-not-moved"
    summary = "A data-loader batch element is used with device tensors without being moved"
    fix = "safe"
    virtual_note = (
        "operations check that their tensor inputs share one virtual device: the unmoved batch "
        "element meets the moved model"
    )
    virtual_at_flagged_line = True
    runtime_errors = (device_errors.MIXED_DEVICES,)

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        reported: set[tuple[int, str]] = set()
        for mix in facts.mixes:
            loop = mix.site.loop
            if loop is None:
                continue
            on_device = [op.value for op in mix.operands if placed_on_accelerator(op.value)]
            if not on_device:
                continue
            stale: list[str] = []
            related = []
            model_call = any(op.value.kind is Kind.MODULE for op in mix.operands)
            for operand in mix.operands:
                if operand.node is None or not operand.value.from_batch:
                    continue
                if not is_cpu(operand.value.where):
                    continue
                name = _source(operand.node)
                if names_lengths(name):
                    continue  # ``pack_padded_sequence`` and ``ctc_loss`` take CPU lengths
                if model_call and names_raw_text(name):
                    continue  # ``model(feats, boxes, sent)``: sentences, tokenized inside
                if (id(loop), name) not in reported:
                    reported.add((id(loop), name))
                    stale.append(name)
                    related.append(provenance(operand.value))
            if stale:
                names = ", ".join(f"`{name}`" for name in stale)
                device = describe_accelerator(on_device[0].where)
                yield Finding(
                    mix.node,
                    f"{names} from the data loader is still on the CPU but is used with "
                    f"values on {device}; move it with `.to(device)`",
                    _fix(loop.node, stale, _loop_device(facts, loop)),
                    chain(*related, provenance(on_device[0])),
                )


def _loop_device(facts: FileFacts, loop: Loop) -> str | None:
    """The device expression the loop already moves things with: ``x.to(<this>)``."""
    for call in facts.calls:
        if call.site.loop is loop and call.method == "to" and call.node.args:
            first = call.node.args[0]
            plain = isinstance(first.value, cst.Name | cst.Attribute) and first.keyword is None
            if plain and not first.star and call.args[0].kind is Kind.DEVICE:
                return source_of(first.value)
    return None


def _fix(loop: cst.For | cst.While, names: list[str], device: str | None) -> FixPlan | None:
    """Move the elements right where the batch is unpacked, with the loop's own device."""
    body = loop.body
    if device is None or not isinstance(body, cst.IndentedBlock) or not body.body:
        return None
    if not all(name.isidentifier() for name in names):
        return None  # ``batch["labels"]``: an element that is not a plain name
    moves = [f"{name} = {name}.to({literal_text(device)})" for name in names]
    statements = list(body.body)
    if isinstance(loop, cst.For) and all(name in _target_names(loop.target) for name in names):
        start = 0
    else:
        found = [
            index
            for index, statement in enumerate(statements)
            if isinstance(statement, cst.SimpleStatementLine)
            and all(name in _assigned(statement) for name in names)
        ]
        if not found:
            return None
        start = found[0] + 1
    end = _after_moves(statements, start, names)
    if end == 0:
        text = "".join(f"{move}{{nl}}{{indent}}" for move in moves)
        return FixPlan(
            "Move it where the batch is unpacked", (Replace(statements[0], text, "before"),)
        )
    text = "".join(f"{{nl}}{{indent}}{move}" for move in moves)
    return FixPlan(
        "Move it where the batch is unpacked", (Replace(statements[end - 1], text, "after"),)
    )


def _after_moves(statements: list[cst.BaseStatement], start: int, names: list[str]) -> int:
    """Where the moves of ``names`` go: after the moves the loop makes from ``start`` on."""
    end = start
    while end < len(statements) and _is_move_of_others(statements[end], names):
        end += 1
    return end


def _is_move_of_others(statement: cst.BaseStatement, names: list[str]) -> bool:
    """``images = images.to(device)``: a statement that only moves values, not ``names``."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if not isinstance(small, cst.Assign):
            return False
        values = small.value.elements if isinstance(small.value, cst.Tuple) else [small.value]
        for value in values:
            call = value.value if isinstance(value, cst.Element) else value
            if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
                return False
            if call.func.attr.value not in ("to", "cuda"):
                return False
    used = {node.value for node in _names_in(statement)}
    return not used & set(names)


def _names_in(node: cst.CSTNode) -> Iterator[cst.Name]:
    if isinstance(node, cst.Name):
        yield node
    for child in node.children:
        yield from _names_in(child)


def _target_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, cst.Tuple | cst.List):
        return set().union(*(_target_names(element.value) for element in target.elements))
    return set()


def _assigned(statement: cst.SimpleStatementLine) -> set[str]:
    names: set[str] = set()
    for small in statement.body:
        if isinstance(small, cst.Assign):
            for target in small.targets:
                names |= _target_names(target.target)
    return names


def _source(node: cst.CSTNode) -> str:
    """The batch element an operand uses: ``target`` for ``target.view_as(pred).long()``."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        node = node.func.value
    text = cst.Module(body=[]).code_for_node(node)
    return text if len(text) <= 40 else text[:37] + "..."
