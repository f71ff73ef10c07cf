from collections.abc import Iterator

from devlint.analysis.facts import FileFacts
from devlint.analysis.values import may_be_accelerator
from devlint.rule import Finding, Rule

SYNCS = frozenset({"item", "cpu", "numpy", "tolist"})


class HostSyncInLoop(Rule):
    """
    ## What it does
    Checks for `.item()`, `.cpu()`, `.numpy()` and `.tolist()` on values that may be on an
    accelerator, run on every iteration of a training loop: a loop over a data loader
    whose body steps an optimizer or calls `backward()`. Off by default: select `DEV012`
    to enable it. Calls under an `if` in the loop (periodic logging) and evaluation or
    sampling loops are not reported.

    ## Why is this bad?
    Each call waits for the GPU to finish all queued work and copies the value to the
    host, so the CPU cannot run ahead; a `loss.item()` per step can cost a noticeable
    share of the step time.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        total += loss.item()
    ```

    ## Use instead
    ```python
    total = torch.zeros((), device=device)
    for x, y in loader:
        loss = criterion(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        total += loss.detach()
    print(total.item())
    ```

    ## Fix safety
    No fix: accumulating on the device changes when values become visible.
    """

    code = "DEV012"
    name = "host-sync-in-loop"
    summary = "A host synchronisation on every iteration of a training loop"
    default = False

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.calls:
            site = call.site
            if site.loop is None or site.conditional or call.method not in SYNCS:
                continue
            if not site.loop.trains:  # evaluation and sampling loops are not training loops
                continue
            if call.receiver is not None and may_be_accelerator(call.receiver.where):
                yield Finding(
                    call.node, f"`.{call.method}()` synchronises with the device every iteration"
                )
