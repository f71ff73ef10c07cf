"""DEV009's fix writes only what ``target-torch`` has."""

from __future__ import annotations

import pytest

from devlint.engine import CheckOptions, check_text
from devlint.torch_target import TorchVersion

PROGRAM = """\
import torch

scaler = torch.cuda.amp.GradScaler()
with torch.cuda.amp.autocast():
    pass
"""


def fixes(target: TorchVersion) -> list[str | None]:
    options = CheckOptions(frozenset({"DEV009"}), target_torch=target)
    return [d.fix.edits[0].content if d.fix else None for d in check_text(PROGRAM, "x.py", options)]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ((1, 13), [None, 'torch.autocast("cuda")']),
        ((2, 0), [None, 'torch.amp.autocast("cuda")']),
        ((2, 2), [None, 'torch.amp.autocast("cuda")']),
        ((2, 3), ['torch.amp.GradScaler("cuda")', 'torch.amp.autocast("cuda")']),
    ],
)
def test_the_fix_follows_the_target(target: TorchVersion, expected: list[str | None]) -> None:
    assert fixes(target) == expected


def test_the_message_says_which_release_has_the_grad_scaler() -> None:
    options = CheckOptions(frozenset({"DEV009"}), target_torch=(2, 0))
    first = check_text(PROGRAM, "x.py", options)[0]
    assert first.message.endswith("(torch 2.3+; target-torch is 2.0)")
