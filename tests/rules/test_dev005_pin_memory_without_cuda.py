"""DEV005 where the code runs only after a statement that raises without CUDA."""

from __future__ import annotations

import textwrap

from devlint.engine import CheckOptions, check_text

OPTIONS = CheckOptions(frozenset({"DEV005"}))


def rows(source: str) -> list[int]:
    text = textwrap.dedent(source)
    return [d.start.row for d in check_text(text, "train.py", OPTIONS)]


def test_a_loader_after_set_device_runs_only_with_cuda() -> None:
    assert (
        rows(
            """\
        import torch
        from torch.utils.data import DataLoader

        def run(rank, data):
            torch.cuda.set_device(rank)
            return DataLoader(data, pin_memory=True)
        """
        )
        == []
    )


def test_a_loader_before_it_or_beside_a_conditional_one_still_pins_without_cuda() -> None:
    assert rows(
        """\
        import torch
        from torch.utils.data import DataLoader

        def run(rank, data, distributed):
            first = DataLoader(data, pin_memory=True)
            if distributed:
                torch.cuda.set_device(rank)
            return first, DataLoader(data, pin_memory=True)
        """
    ) == [5, 8]
