"""DEV004 reads a branch's choice whatever the assignment's form."""

from __future__ import annotations

import textwrap

from devlint.engine import CheckOptions, check_text
from devlint.fixing import fix_text

OPTIONS = CheckOptions(frozenset({"DEV004"}))

ANNOTATED = textwrap.dedent(
    """\
    import os
    import torch

    rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        device: torch.device = torch.device(f"cuda:{rank}")
        backend = "nccl"
    else:
        device: torch.device = torch.device("cpu")
        backend = "gloo"
    x = torch.zeros(3).to(device)
    """
)


def test_an_annotated_assignment_is_a_branch_choice() -> None:
    """``device: torch.device = ...`` in each branch (torchrec's examples)."""
    found = [(d.code, d.start.row) for d in check_text(ANNOTATED, "example.py", OPTIONS)]
    assert found == [("DEV004", 5)]
    fixed = fix_text(ANNOTATED, "example.py", OPTIONS, unsafe=True).text
    assert 'device: torch.device = torch.device("mps")' in fixed
    compile(fixed, "example.py", "exec")
