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


def test_a_library_mps_helper_tries_mps() -> None:
    """transformers' ``is_torch_mps_available()`` tests MPS, as accelerate's
    ``is_mps_available()`` does: the chain tries it before CUDA (LLaMA-Factory)."""
    source = textwrap.dedent(
        """\
        import os
        import torch
        from transformers.utils import is_torch_cuda_available, is_torch_mps_available

        def current_device():
            rank = os.getenv("LOCAL_RANK", "0")
            if is_torch_mps_available():
                device = "mps:{}".format(rank)
            elif is_torch_cuda_available():
                device = "cuda:{}".format(rank)
            else:
                device = "cpu"
            return torch.device(device)

        def skipping():
            if is_torch_cuda_available():
                device = "cuda"
            else:
                device = "cpu"
            return torch.device(device)
        """
    )
    assert [d.start.row for d in check_text(source, "example.py", OPTIONS)] == [16]
