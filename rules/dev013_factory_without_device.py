from collections.abc import Iterator

from devlint.analysis.facts import FileFacts
from devlint.analysis.values import is_cpu
from devlint.rule import Finding, Rule


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
    def forward(self, x):
        mask = torch.ones(x.size(0), x.size(1))
        return x * mask
    ```

    ## Use instead
    ```python
    def forward(self, x):
        mask = torch.ones(x.size(0), x.size(1), device=x.device)
        return x * mask
    ```

    ## Fix safety
    Adding `device=<input>.device` is safe: on the CPU nothing changes.
    """

    code = "DEV013"
    name = "factory-without-device"
    summary = "A tensor factory in `forward` without `device=`, combined with the inputs"
    fix = "safe"
    needs = ("forward",)

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        reported: set[int] = set()
        function_of = {id(call.node): call.site.function for call in facts.calls}
        for mix in facts.mixes:
            site = mix.site
            if site.function is None or site.function.name.value != "forward":
                continue
            if site.class_name not in facts.module_classes:
                continue
            made_here = [
                origin
                for op in mix.operands
                for origin in op.value.origins
                if function_of.get(id(origin)) is site.function  # not an attribute from __init__
            ]
            inputs = [op for op in mix.operands if not is_cpu(op.value.where)]
            for factory in made_here:
                if inputs and id(factory) not in reported:
                    reported.add(id(factory))
                    yield Finding(
                        factory, "Tensor created without `device=` is combined with the inputs"
                    )
