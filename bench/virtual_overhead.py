"""What the virtual device (devlint/verify/virtual.py) costs on a small training loop.

A benchmark, not a test: ``.venv/bin/python bench/virtual_overhead.py [--steps N]``.
Runs the same loop (an MLP on synthetic data, a DataLoader, Adam, ``.item()`` every 10
steps) three ways, best of ``--repeat`` each: plain CPU, and on the CPU under the virtual
CUDA and MPS devices (``.to(device)`` of the model and of every batch). Prints the
seconds per step and the factor over plain CPU, plus the torch calls one step makes
(every call goes through the virtual device's ``TorchFunctionMode``).
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable
from typing import Any


def training_loop(device: str, steps: int, width: int, counter: Callable[[], Any]) -> float:
    """Seconds for ``steps`` optimizer steps of a small MLP on ``device``."""
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64 * steps, 32), torch.randint(0, 10, (64 * steps,)))
    loader = DataLoader(data, batch_size=64, shuffle=True)
    model = nn.Sequential(nn.Linear(32, width), nn.ReLU(), nn.Linear(width, 10)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    started = time.perf_counter()
    with counter():
        for step, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 10 == 0:
                loss.item()
    return time.perf_counter() - started


def count_calls() -> tuple[Callable[[], Any], list[int]]:
    """A context that counts the torch calls made in it (a TorchFunctionMode of its own)."""
    from torch.overrides import TorchFunctionMode

    calls = [0]

    class Counting(TorchFunctionMode):
        def __torch_function__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            calls[0] += 1
            return func(*args, **(kwargs or {}))

    return Counting, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()

    import torch

    from devlint.verify.virtual import VirtualDevice

    def timed(kind: str | None) -> float:
        best = float("inf")
        for _ in range(options.repeat):
            context = VirtualDevice(kind) if kind else contextlib.nullcontext()
            with context:
                seconds = training_loop(
                    kind or "cpu", options.steps, options.width, contextlib.nullcontext
                )
            best = min(best, seconds)
        return best

    counting, calls = count_calls()
    training_loop("cpu", 10, options.width, counting)
    plain = timed(None)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {options.steps} steps, MLP 32-{options.width}-10, batch 64"
    )
    print(f"torch calls per step: {calls[0] / 10:.0f}")
    print(f"{'plain cpu':<14} {plain / options.steps * 1e3:7.3f} ms/step")
    for kind in ("cuda", "mps"):
        seconds = timed(kind)
        factor = seconds / plain
        print(
            f"{kind + ' (virtual)':<14} {seconds / options.steps * 1e3:7.3f} ms/step  x{factor:.2f}"
        )


if __name__ == "__main__":
    main()
