from collections.abc import Iterator

import libcst as cst

from devlint import device_errors
from devlint.analysis.facts import FileFacts, operand_roots
from devlint.analysis.values import Step, is_cpu
from devlint.rule import Finding, FixPlan, Replace, Rule


class FactoryWithoutDevice(Rule):
    """
    ## What it does
    Inside `forward` of an `nn.Module`, checks for a tensor factory (`torch.zeros`,
    `ones`, `empty`, `full`, `arange`, `randn`, `rand`, `tensor`, `eye`, ...) without
    `device=` whose result is combined with the module's inputs. `torch.*_like` and
    `x.new_*` are fine: they follow their argument. In any function, a factory that
    follows a tensor only to CUDA (`if x.is_cuda: noise = noise.cuda()`) is reported
    too: on MPS it stays on the CPU.

    ## Why is this bad?
    The factory creates its tensor on the CPU while the inputs are wherever the model
    was moved: the module works in CPU tests and fails with a device mismatch on the GPU.

    ## Example
    ```python
    class Masked(nn.Module):
        def forward(self, x):
            mask = torch.ones(x.size(0), x.size(1))
            return x * mask
    ```

    ## Use instead
    ```python
    class Masked(nn.Module):
        def forward(self, x):
            mask = torch.ones(x.size(0), x.size(1), device=x.device)
            return x * mask
    ```

    ## Fix safety
    Adding `device=<input>.device`, for a parameter of `forward` that the result is
    combined with, is safe: on the CPU nothing changes.
    """

    code = "DEV013"
    name = "factory-without-device"
    summary = "A tensor factory in `forward` without `device=`, combined with the inputs"
    fix = "safe"
    virtual_note = (
        "operations check that their tensor inputs share one virtual device: the factory's CPU "
        "result meets device tensors"
    )
    runtime_errors = (device_errors.MIXED_DEVICES,)

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        reported: set[int] = set()
        for mix in facts.mixes:
            function = mix.site.function
            inputs = [op.node for op in mix.operands if not is_cpu(op.value.where)]
            for factory in facts.factories_meeting_inputs(mix):
                if function is not None and id(factory) not in reported:
                    reported.add(id(factory))
                    method = mix.site.class_name is not None
                    fix = (
                        None
                        if _moved_to_cpu(factory, facts)
                        else _fix(factory, function, inputs, method)
                    )
                    yield Finding(
                        factory,
                        "Tensor created without `device=` is combined with the inputs",
                        fix,
                        (Step(mix.node, "combined with the inputs here"),),
                    )
        for factory, tested, function in facts.factories_moved_on_cuda_only():
            if id(factory) not in reported:
                reported.add(id(factory))
                fix = _fix_for(factory, tested, function)
                related = (Step(tested, "moved only when this tensor is on CUDA"),)
                yield Finding(factory, CUDA_ONLY_MESSAGE, fix, related)


CUDA_ONLY_MESSAGE = "Tensor created without `device=` follows the inputs only to CUDA, not to MPS"


def _moved_to_cpu(factory: cst.Call, facts: FileFacts) -> bool:
    """``torch.zeros(n).cpu()``: a ``device=`` added to the factory would be undone."""
    return any(
        call.method == "cpu"
        and isinstance(call.node.func, cst.Attribute)
        and call.node.func.value is factory
        for call in facts.calls
    )


def _fix_for(factory: cst.Call, tested: cst.Name, function: cst.FunctionDef) -> FixPlan | None:
    """``device=x.device`` for the tensor ``x`` the move tested, when the factory can see it:
    a parameter, or a name its arguments already read (``torch.randn(x.size())``)."""
    parameters = {param.name.value for param in function.params.params}
    read = {name for arg in factory.args for name in operand_roots(arg.value)}
    return _add_device(factory, tested.value) if tested.value in parameters | read else None


def _fix(
    factory: cst.Call,
    forward: cst.FunctionDef,
    inputs: list[cst.BaseExpression | None],
    method: bool,
) -> FixPlan | None:
    """Add ``device=x.device`` for ``x``, a parameter of the function the result meets (or
    the only parameter, when the result meets a value computed from it)."""
    parameters = [param.name.value for param in forward.params.params[int(method) :]]
    names = [name for node in inputs for name in sorted(operand_roots(node))]
    name = next((name for name in names if name in parameters), None)
    if name is None and len(parameters) == 1 and not isinstance(forward.params.star_arg, cst.Param):
        name = parameters[0]  # ``forward(self, x)``: the one input
    return _add_device(factory, name) if name is not None else None


def _add_device(factory: cst.Call, name: str) -> FixPlan | None:
    args = factory.args
    if not args or args[-1].star or args[-1].value.lpar:
        return None
    text = f", device={name}.device"
    return FixPlan(f"Add `device={name}.device`", (Replace(args[-1].value, text, "after"),))
