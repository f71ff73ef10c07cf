from collections.abc import Iterator

from devlint.analysis.facts import FileFacts, Site
from devlint.analysis.values import may_be_accelerator
from devlint.rule import Finding, Rule

SYNCS = frozenset({"item", "cpu", "numpy", "tolist"})


class HostSyncInLoop(Rule):
    """
    ## What it does
    Checks for `.item()`, `.cpu()`, `.numpy()` and `.tolist()` on values that may be on an
    accelerator, run on every iteration of a training loop: a loop (over a data loader,
    a `range`, or `while True`) whose body steps an optimizer or calls `backward()`,
    itself or through a function of the file (`update(loss)`), or clears an optimizer's
    gradients outside `torch.no_grad()` and hands that optimizer to a helper (the step is
    then a loss scaler's of another module: `loss_scaler(loss, optimizer)`). A loop that
    such a body runs on each step (`for output in outputs:` summing per-level losses) runs
    every step too, unless it is a pass over another loader or an environment rollout
    (`env.step(action)`). Off by default: select
    `DEV012` to enable it. Calls under an `if` whose test changes from one iteration to
    the next (periodic logging: `if step % 100 == 0:`, or after
    `if step % 100 != 0: continue`), in the validation branch of a loop
    shared with training (`else` of `if is_train:`), and in evaluation or sampling loops
    are not reported; an `if` on a setting fixed before the loop
    (`if config["tensorboard"]:`) or on which process this is (`if is_main_process():`,
    `if dist.get_rank() == 0:`) runs on every iteration, and so does the gradient
    accumulation gate that steps the optimizer (`if (i + 1) % accumulate == 0:`) after a
    `backward()` outside it: it is the training step.

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
    virtual_note = "a performance finding: `.item()` and friends count as host syncs"

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.calls:
            site = call.site
            if call.method not in SYNCS or not _every_training_step(site):
                continue
            if call.receiver is not None and may_be_accelerator(call.receiver.where):
                message = f"`.{call.method}()` synchronises with the device every iteration"
                yield Finding(call.node, message, related=call.receiver.placed)


def _every_training_step(site: Site) -> bool:
    """Unconditionally in the body of a training loop: the loop over the data loader, or
    the innermost loop (``for step in range(n)``, ``while True``) when it trains.
    Evaluation and sampling loops are not training loops."""
    if site.loop is not None and not site.conditional and site.loop.trains:
        return True
    inner = site.inner_loop
    if inner is None or site.inner_conditional:
        return False
    if inner.trains:
        return True
    # A loop run on each step of a training loop (``for out, target in zip(outs,
    # targets):`` after the model's call) runs its body every step too; not a loop over
    # another loader (an evaluation pass in the epoch loop).
    outer = site.outer_loop
    return outer is not None and outer.trains and site.loop is not inner and not inner.rolls_out
