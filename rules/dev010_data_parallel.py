from collections.abc import Iterator

from devlint.analysis.facts import FileFacts
from devlint.rule import Finding, Rule

# Its public names and the module that defines it (``from torch.nn.parallel.data_parallel
# import DataParallel``: 3DMPPE_POSENET_RELEASE, eval/blind163).
DATA_PARALLEL = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.data_parallel.DataParallel",
    }
)


class DataParallel(Rule):
    """
    ## What it does
    Checks for `nn.DataParallel(...)`. Off by default: select `DEV010` to enable it.

    ## Why is this bad?
    `DataParallel` runs one Python process that scatters every batch and gathers every
    output through GPU 0; PyTorch recommends `DistributedDataParallel`, which is faster
    even on a single machine. On a machine with no or one GPU it only adds overhead.

    ## Example
    ```python
    model = nn.DataParallel(model).to(device)
    ```

    ## Use instead
    `torch.nn.parallel.DistributedDataParallel`, launched with `torchrun`.

    ## Fix safety
    No fix: moving to DDP changes how the program is launched.
    """

    code = "DEV010"
    name = "data-parallel"
    summary = "`nn.DataParallel` is slower than DistributedDataParallel"
    default = False
    virtual_note = (
        "a performance finding: DataParallel on one virtual GPU checks the module's device and "
        "moves the inputs as its scatter does"
    )

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if call.callee in DATA_PARALLEL:
                yield Finding(call.node, "`nn.DataParallel`; prefer `DistributedDataParallel`")
