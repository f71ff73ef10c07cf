from collections.abc import Iterator

import libcst as cst

from devlint.analysis.facts import FileFacts
from devlint.analysis.syntax import operand_roots
from devlint.analysis.values import is_cpu
from devlint.rule import Finding, FixPlan, Replace, Rule


class FactoryWithoutDevice(Rule):
    """
    ## What it does
    Inside `forward` of an `nn.Module`, checks for a tensor factory (`torch.zeros`,
    `ones`, `empty`, `full`, `arange`, `randn`, `rand`, `tensor`, `eye`, ...) without
    `device=` whose result is combined with the module's inputs. `torch.*_like` and
    `x.new_*` are fine: they follow their argument.

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

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        reported: set[int] = set()
        for mix in facts.mixes:
            function = mix.site.function
            inputs = [op.node for op in mix.operands if not is_cpu(op.value.where)]
            for factory in facts.factories_meeting_inputs(mix):
                if function is not None and id(factory) not in reported:
                    reported.add(id(factory))
                    method = mix.site.class_name is not None
                    yield Finding(
                        factory,
                        "Tensor created without `device=` is combined with the inputs",
                        _fix(factory, function, inputs, method),
                    )


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
    args = factory.args
    if name is None or not args or args[-1].star or args[-1].value.lpar:
        return None
    text = f", device={name}.device"
    return FixPlan(f"Add `device={name}.device`", (Replace(args[-1].value, text, "after"),))
