"""DEV019 at each ``target-torch``, its placements, and DEV004's note about the same
operators."""

from __future__ import annotations

import pytest

from devlint.engine import CheckOptions, check_text
from devlint.torch_target import TorchVersion

SELECTION = """\
import torch
import torch.nn.functional as F
from torch import nn

device = torch.device("mps" if torch.backends.mps.is_available() else "cpu")
x = torch.randn(4, 4).to(device)
"""


def _found(source: str, target: TorchVersion, code: str = "DEV019") -> list[tuple[int, str]]:
    options = CheckOptions(frozenset({code}), target_torch=target)
    return [(d.start.row, d.message) for d in check_text(source, "x.py", options)]


@pytest.mark.parametrize(
    ("call", "operator", "fixed"),
    [
        ("torch.linalg.solve(x, x)", "_linalg_solve_ex", (2, 7)),
        ('F.interpolate(x[None, None], scale_factor=2, mode="bicubic")', "upsample_bicubic2d", (2, 6)),
        ("nn.EmbeddingBag(10, 4).to(device)", "_embedding_bag", (2, 10)),
        ("torch.linalg.qr(x)", "linalg_qr", (2, 12)),
        ("torch.fft.rfft(x)", "_fft_r2c", (2, 3)),
        ('torch.amp.GradScaler("mps" if torch.backends.mps.is_available() else "cpu")',
         "_amp_foreach_non_finite_check_and_unscale_", (2, 8)),
        ("x.logcumsumexp(0)", "_logcumsumexp", (2, 9)),
        ("torch.lcm(x.long(), x.long())", "lcm", (2, 13)),
    ],
)  # fmt: skip
def test_fixed_in_a_later_release(call: str, operator: str, fixed: TorchVersion) -> None:
    source = SELECTION + f"y = {call}\n"
    before = (fixed[0], fixed[1] - 1)
    [(row, message)] = _found(source, before)
    assert row == 7
    assert f"`aten::{operator}`" in message
    assert f"first in torch {fixed[0]}.{fixed[1]}" in message
    assert "PYTORCH_ENABLE_MPS_FALLBACK=1" in message
    assert _found(source, fixed) == []


@pytest.mark.parametrize(
    ("call", "operator"),
    [
        ("torch.take(x, torch.tensor([0]).to(device))", "take"),
        ("torch.mode(x, 1)", "mode"),
        ("torch.poisson(x.abs())", "poisson"),
        ("torch.heaviside(x, x)", "heaviside"),
        ("torch.linalg.eig(x)", "linalg_eig"),
        ("nn.RReLU().to(device)", "rrelu_with_noise"),
        ("F.rrelu(x)", "rrelu_with_noise"),
        ("F.multi_margin_loss(x, torch.tensor([0, 1, 2, 3]).to(device))", "multi_margin_loss"),
        ("F.channel_shuffle(x[None, :, :, None], 2)", "channel_shuffle"),
    ],
)
def test_missing_in_every_release(call: str, operator: str) -> None:
    for target in ((2, 0), (2, 13)):
        [(_, message)] = _found(SELECTION + f"y = {call}\n", target)
        assert f"`aten::{operator}`" in message
        assert "no MPS kernel in any torch release up to 2.13" in message
        assert "raises NotImplementedError" in message


@pytest.mark.parametrize(
    ("call", "operator"),
    [
        ("nn.Embedding(10, 4, max_norm=1.0).to(device)", "embedding_renorm_"),
        ("F.embedding(x.long(), torch.randn(10, 4).to(device), None, 2.0)", "embedding_renorm_"),
        ("torch.linalg.svd(x)", "linalg_svd"),
    ],
)
def test_always_falls_back(call: str, operator: str) -> None:
    [(_, message)] = _found(SELECTION + f"y = {call}\n", (2, 13))
    assert f"`aten::{operator}`, which falls back to the CPU on MPS in torch 2.13" in message
    assert "fails" not in message and "NotImplementedError" not in message


def test_a_fallback_of_old_releases_only_is_not_reported() -> None:
    for call in ("F.fold(x[None], (3, 3), 2)", "torch.nn.utils.clip_grad_norm_([x], 1.0)"):
        assert _found(SELECTION + f"y = {call}\n", (2, 0)) == []  # col2im, linalg_vector_norm


@pytest.mark.parametrize(
    "selection",
    [
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
        'device = "cpu"',
        'device = torch.device("cuda")',
    ],
)
def test_never_where_mps_is_not_possible(selection: str) -> None:
    source = (
        f"import torch\n{selection}\nx = torch.randn(4, 4).to(device)\ny = torch.linalg.eig(x)\n"
    )
    assert _found(source, (2, 13)) == []


def test_a_model_on_mps_runs_its_layers_and_forward_there() -> None:
    source = """\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.shuffle = nn.ChannelShuffle(2)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.embed = nn.Embedding(10, 4, max_norm=1.0)

    def forward(self, x):
        return torch.take(x, x.long())


device = torch.device("mps" if torch.backends.mps.is_available() else "cpu")
model = Net().to(device)
"""
    found = _found(source, (2, 13))
    assert [row for row, _ in found] == [8, 15, 18]
    on_cuda = source.replace('"mps" if torch.backends.mps.is_available() else "cpu"', '"cuda"')
    assert _found(on_cuda, (2, 13)) == []


def test_arguments_select_the_operators() -> None:
    source = SELECTION + (
        "a = nn.Embedding(10, 4).to(device)\n"
        "b = nn.Embedding(10, 4, None, 1.0).to(device)\n"
        "c = nn.Embedding(10, 4, max_norm=None).to(device)\n"
        "d = torch.unique(x, dim=0)\n"
        "e = torch.unique(x)\n"
        'f = torch.amp.GradScaler("mps", enabled=False)\n'
        'g = F.interpolate(x[None, None], scale_factor=2, mode="bilinear")\n'
    )
    assert [row for row, _ in _found(source, (2, 0))] == [8, 10]


def test_dev004_names_what_mps_lacks_in_its_fix() -> None:
    source = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(4, 4).to(device)
y = torch.linalg.eig(x)
u, s, v = torch.linalg.svd(x)
z = torch.linalg.solve(x, x)
"""
    options = CheckOptions(frozenset({"DEV004"}), target_torch=(2, 6))
    [diagnostic] = check_text(source, "x.py", options)
    assert diagnostic.fix is not None
    assert diagnostic.fix.message == (
        "Try MPS before falling back to the CPU (on MPS in torch 2.6: `aten::linalg_eig`, "
        "`aten::_linalg_solve_ex` fail; `aten::linalg_svd` falls back to the CPU)"
    )
    options = CheckOptions(frozenset({"DEV004"}), target_torch=(2, 13))
    plain = source.replace("y = torch.linalg.eig(x)\nu, s, v = torch.linalg.svd(x)\n", "")
    [diagnostic] = check_text(plain, "x.py", options)
    assert diagnostic.fix is not None
    assert diagnostic.fix.message == "Try MPS before falling back to the CPU"
