"""The virtual CUDA / MPS device (``devlint/verify/virtual.py``), in this process (needs torch)."""

from __future__ import annotations

import importlib.util
import io
import os
import warnings

import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None
pytestmark = pytest.mark.skipif(
    not HAS_TORCH and not os.environ.get("DEVLINT_REQUIRE_TORCH"),
    reason="the virtual device needs torch (pip install 'devlint[verify]')",
)

MIXED = "Expected all tensors to be on the same device, but found at least two devices"


def test_placement_travels_through_modules_autograd_and_optimizers() -> None:
    import torch

    from devlint.verify.virtual import VirtualDevice

    cuda_here = torch.cuda.is_available()  # a CUDA machine runs this test too
    with VirtualDevice("cuda") as device:
        assert torch.cuda.is_available() and not torch.backends.mps.is_available()
        assert torch.accelerator.current_accelerator() == torch.device("cuda")
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        model = model.to("cuda")
        assert {str(p.device) for p in model.parameters()} == {"cuda:0"}
        x = torch.randn(16, 4).cuda()
        y = torch.zeros(16, 1, device="cuda")
        optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
        for _ in range(2):
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        assert model[0].weight.grad is not None and model[0].weight.grad.is_cuda
        assert isinstance(loss.item(), float) and device.syncs == 1
        assert loss.cpu().device.type == "cpu" and device.syncs == 2
        scaled = x * torch.tensor(2.0)  # a CPU 0-dim tensor mixes, as in PyTorch
        assert scaled.device == torch.device("cuda:0")
        assert x[torch.tensor([0, 1])].is_cuda  # CPU indices may index a device tensor
    assert torch.cuda.is_available() == cuda_here  # everything is put back


def test_a_recurrent_layer_runs_without_cudnn_on_virtual_cuda() -> None:
    """The tensors live on the CPU: an RNN must not ask cuDNN for them (a CPU build warned
    that it has no cuDNN; a CUDA build called a CUDA-only op, seen on an H100)."""
    import torch

    from devlint.verify.virtual import VirtualDevice

    with VirtualDevice("cuda"), warnings.catch_warnings():
        warnings.simplefilter("error")
        lstm = torch.nn.LSTM(4, 8).to("cuda")
        out, _ = lstm(torch.randn(3, 2, 4, device="cuda"))
        assert out.is_cuda and not torch.backends.cudnn.is_acceptable(out)


def test_pytorchs_own_errors_where_the_device_would_raise() -> None:
    import numpy as np
    import torch

    from devlint.verify.virtual import VirtualDevice

    with VirtualDevice("cuda"):
        model = torch.nn.Linear(4, 2).cuda()
        with pytest.raises(RuntimeError, match=f"{MIXED}, cuda:0 and cpu!"):
            model(torch.randn(3, 4))
        on_device = torch.randn(3, 4).to(torch.device("cuda", 0))
        with pytest.raises(RuntimeError, match=MIXED):
            torch.cat([on_device, torch.randn(3, 4)])
        with pytest.raises(RuntimeError, match=MIXED):
            torch.randn(4, 4) @ on_device.T  # matmul too (meta mixed it silently)
        numpy = "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu()"
        with pytest.raises(TypeError, match=numpy):
            on_device.numpy()
        with pytest.raises(TypeError, match=numpy):
            np.asarray(on_device)
        assert on_device.cpu().numpy().shape == (3, 4)


def test_mps_float64_pinning_and_absent_cuda() -> None:
    import numpy as np
    import torch

    from devlint.verify.virtual import MPS_FLOAT64, VirtualDevice

    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.randn(4, 2)), batch_size=2, pin_memory=True
    )
    with VirtualDevice("mps"):
        assert torch.backends.mps.is_available() and not torch.cuda.is_available()
        with pytest.raises(TypeError, match="Cannot convert a MPS Tensor to float64 dtype"):
            torch.from_numpy(np.zeros(3)).to("mps")
        on_mps = torch.zeros(3).to("mps")
        with pytest.raises(TypeError) as raised:
            on_mps.double()
        assert str(raised.value) == MPS_FLOAT64
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            torch.zeros(3).cuda()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert len(list(loader)) == 2
        assert any("not supported on MPS" in str(w.message) for w in caught)
    with VirtualDevice("cuda"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert len(list(loader)) == 2
        assert not [w for w in caught if "pin_memory" in str(w.message)]  # CUDA pins silently


def test_a_cuda_checkpoint_loads_only_where_cuda_is() -> None:
    import torch

    from devlint.verify.virtual import NO_CUDA_LOAD, VirtualDevice

    buffer = io.BytesIO()
    with VirtualDevice("cuda"):
        torch.save(torch.nn.Linear(2, 2).cuda().state_dict(), buffer)
        buffer.seek(0)
        state = torch.load(buffer)
        assert {str(t.device) for t in state.values()} == {"cuda:0"}
    with VirtualDevice("mps"):
        buffer.seek(0)
        with pytest.raises(RuntimeError) as raised:
            torch.load(buffer)
        assert str(raised.value) == NO_CUDA_LOAD
        buffer.seek(0)
        state = torch.load(buffer, map_location="mps")
        assert {str(t.device) for t in state.values()} == {"mps:0"}


def test_legacy_tensor_types_move_with_type() -> None:
    import torch

    from devlint.verify.virtual import VirtualDevice

    with VirtualDevice("cuda"):
        x = torch.randn(2, dtype=torch.float64)
        on_gpu = x.type(torch.cuda.FloatTensor)
        assert str(on_gpu.device) == "cuda:0" and on_gpu.dtype == torch.float32
        assert x.type("torch.cuda.HalfTensor").is_cuda
        assert on_gpu.type(torch.float16).is_cuda  # a dtype keeps the device
        back = on_gpu.type(torch.FloatTensor)
        assert back.device.type == "cpu"
        assert on_gpu.type(torch.Tensor).device.type == "cpu"  # the default (CPU) type
        with pytest.raises(RuntimeError, match=MIXED):
            torch.nn.Linear(2, 1).cuda()(back.unsqueeze(0))


def test_legacy_tensor_types_test_placement_with_isinstance() -> None:
    import torch

    from devlint.verify.virtual import VirtualDevice

    with VirtualDevice("cuda"):
        on_gpu = torch.zeros(2).cuda()
        assert isinstance(on_gpu, torch.cuda.FloatTensor)
        assert not isinstance(torch.zeros(2), torch.cuda.FloatTensor)
        assert not isinstance(on_gpu.long(), torch.cuda.FloatTensor)
        assert isinstance(on_gpu.long(), torch.cuda.LongTensor)
        assert not isinstance("tensor", torch.cuda.FloatTensor)


def test_ctc_loss_takes_its_lengths_on_the_cpu() -> None:
    import torch

    from devlint.verify.virtual import VirtualDevice

    with VirtualDevice("cuda"):
        log_probs = torch.randn(12, 2, 5).log_softmax(2).cuda()
        targets = torch.randint(1, 5, (2, 4))
        lengths, target_lengths = torch.IntTensor([12, 12]), torch.IntTensor([4, 4])
        loss = torch.nn.CTCLoss()(log_probs, targets.cuda(), lengths, target_lengths)
        assert loss.is_cuda
        with pytest.raises(RuntimeError, match=MIXED):
            torch.nn.functional.ctc_loss(log_probs, targets, lengths, target_lengths)
