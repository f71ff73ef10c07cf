"""Virtual MPS raises what a Mac raises for operators without an MPS kernel (``mps_ops.py``)."""

from __future__ import annotations

import importlib.util
import os
import warnings

import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None
pytestmark = pytest.mark.skipif(
    not HAS_TORCH and not os.environ.get("DEVLINT_REQUIRE_TORCH"),
    reason="the virtual device needs torch (pip install 'devlint[verify]')",
)
FALLS_BACK = "is not currently supported on the MPS backend and will fall back to run on the CPU"


def test_an_operator_without_a_kernel_raises_torchs_own_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch

    from devlint.verify.virtual import VirtualDevice

    monkeypatch.delenv("PYTORCH_ENABLE_MPS_FALLBACK", raising=False)
    monkeypatch.setenv("DEVLINT_MPS_TORCH", "2.13")
    with VirtualDevice("mps"):
        x = torch.randn(4, 4).to("mps")
        with pytest.raises(NotImplementedError) as raised:
            x.take(torch.tensor([0, 5]).to("mps"))
        message = str(raised.value)
        assert message.startswith(
            "The operator 'aten::take' is not currently implemented for the MPS device."
        )
        assert "issues/141287" in message and "PYTORCH_ENABLE_MPS_FALLBACK=1" in message
        assert torch.linalg.solve(x + 4 * torch.eye(4, device="mps"), x).device.type == "mps"
        cpu = torch.randn(4, 4)
        assert cpu.take(torch.tensor([1])).shape == (1,)  # the CPU has every kernel
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.RReLU()).to("mps")
        with pytest.raises(NotImplementedError, match="aten::rrelu_with_noise"):
            model(x)


def test_the_release_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from devlint.verify.virtual import VirtualDevice

    monkeypatch.delenv("PYTORCH_ENABLE_MPS_FALLBACK", raising=False)
    monkeypatch.setenv("DEVLINT_MPS_TORCH", "2.6")
    with VirtualDevice("mps"):
        a = torch.randn(4, 4).to("mps") + 4 * torch.eye(4, device="mps")
        with pytest.raises(NotImplementedError, match="aten::_linalg_solve_ex") as raised:
            torch.linalg.solve(a, a)
        assert "commit hash 2236df1770800ffea5697b11b0bb0d910b2e59e1" in str(raised.value)
    monkeypatch.setenv("DEVLINT_MPS_TORCH", "2.0")
    with VirtualDevice("mps"):
        a = torch.randn(4, 4).to("mps")
        with pytest.raises(NotImplementedError, match="issues/77764"):
            torch.fft.rfft(a)


def test_fallbacks_warn_and_run(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from devlint.verify.virtual import VirtualDevice

    monkeypatch.delenv("PYTORCH_ENABLE_MPS_FALLBACK", raising=False)
    monkeypatch.setenv("DEVLINT_MPS_TORCH", "2.13")
    with VirtualDevice("mps"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = torch.randn(6, 4).to("mps")
        u, s, _ = torch.linalg.svd(x, full_matrices=False)  # decomposes on the CPU only
        assert u.device.type == "mps" and s.shape == (4,)
        embedding = torch.nn.Embedding(10, 3, max_norm=1.0).to("mps")
        embedding(torch.tensor([1, 2]).to("mps"))
    texts = [str(w.message) for w in caught if FALLS_BACK in str(w.message)]
    assert texts == [  # torch warns once per process (TORCH_WARN_ONCE)
        f"The operator 'aten::linalg_svd' {FALLS_BACK}. This may have performance implications."
    ]
    monkeypatch.setenv("PYTORCH_ENABLE_MPS_FALLBACK", "1")
    with VirtualDevice("mps"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = torch.randn(4, 4).to("mps")
        assert x.take(torch.tensor([0]).to("mps")).device.type == "mps"
    assert any("'aten::take' " + FALLS_BACK in str(w.message) for w in caught)


def test_virtual_cuda_and_the_cpu_are_untouched() -> None:
    import torch

    from devlint.verify.virtual import VirtualDevice

    with VirtualDevice("cuda"):
        x = torch.randn(4, 4).to("cuda")
        assert x.take(torch.tensor([0]).to("cuda")).shape == (1,)
    assert torch.randn(4).take(torch.tensor([0])).shape == (1,)
    svd = torch.linalg.svd(torch.randn(3, 3))  # the session's composite kernels are gone
    assert svd.S.shape == (3,)


@pytest.mark.parametrize("release", ["2.0", "2.13"])
def test_attention_takes_the_mps_route_not_the_cpus(
    release: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``scaled_dot_product_attention`` runs on MPS in every release; on the CPU it goes
    through the CPU's own kernel choice and flash kernel, which MPS never runs."""
    import torch

    from devlint.verify.virtual import VirtualDevice

    monkeypatch.delenv("PYTORCH_ENABLE_MPS_FALLBACK", raising=False)
    monkeypatch.setenv("DEVLINT_MPS_TORCH", release)
    with VirtualDevice("mps"):
        q = torch.randn(1, 2, 4, 8, device="mps", requires_grad=True)
        out = torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
        out.sum().backward()
        assert out.device.type == "mps"
