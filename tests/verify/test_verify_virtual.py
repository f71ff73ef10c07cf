"""The virtual CUDA / MPS device (``devlint/verify/virtual.py``), in this process (needs torch)."""

from __future__ import annotations

import importlib.util
import inspect
import io
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not HAS_TORCH and not os.environ.get("DEVLINT_REQUIRE_TORCH"),
        reason="the virtual device needs torch (pip install 'devlint[verify]')",
    ),
]

MIXED = "Expected all tensors to be on the same device, but found at least two devices"


def test_placement_travels_through_modules_autograd_and_optimizers() -> None:
    import torch

    from devlint.verify.virtual import VirtualDevice

    cuda_here = torch.cuda.is_available()  # a CUDA machine runs this test too
    with VirtualDevice("cuda") as device:
        assert torch.cuda.is_available() and not torch.backends.mps.is_available()
        if hasattr(torch, "accelerator"):  # torch 2.6 and later
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
        # torch's own DataLoader warns, where it has the warning (not torch 2.1: it pins
        # only where CUDA is available, silently)
        warns = "not supported on MPS" in inspect.getsource(torch.utils.data.dataloader)
        assert any("not supported on MPS" in str(w.message) for w in caught) == warns
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


def test_variable_and_parameter_are_where_their_data_is() -> None:
    import torch
    from torch.autograd import Variable

    from devlint.verify.virtual import VirtualDevice

    with VirtualDevice("cuda"):
        x = torch.ones(2)
        assert Variable(x.cuda()).device.type == "cuda"
        assert Variable(x.cuda(), requires_grad=True).is_cuda
        assert Variable(x).device.type == "cpu"
        assert torch.nn.Parameter(x.cuda()).is_cuda
        with pytest.raises(RuntimeError, match=MIXED):
            _ = Variable(x.cuda()) + x
    assert Variable(torch.ones(1)).device.type == "cpu"


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


def test_ctc_loss_takes_its_targets_and_lengths_on_the_cpu() -> None:
    """torch moves CPU targets to the log-probabilities' device itself (NVIDIA's aligner
    loss in FastPitch and coqui TTS builds them with ``torch.arange`` on the CPU)."""
    import torch

    from devlint.verify.virtual import VirtualDevice

    with VirtualDevice("cuda"):
        log_probs = torch.randn(12, 2, 5).log_softmax(2).cuda()
        targets = torch.randint(1, 5, (2, 4))
        lengths, target_lengths = torch.IntTensor([12, 12]), torch.IntTensor([4, 4])
        loss = torch.nn.CTCLoss()(log_probs, targets.cuda(), lengths, target_lengths)
        assert loss.is_cuda
        loss = torch.nn.functional.ctc_loss(log_probs, targets, lengths, target_lengths)
        assert loss.is_cuda
        with pytest.raises(RuntimeError, match=MIXED):
            loss + torch.ones(3)


def test_a_tensor_built_from_a_list_of_device_tensors_is_on_the_cpu() -> None:
    """``torch.tensor([t, ...])`` reads each element's value into a new tensor on the
    default device (a meta element raises in ``Tensor.item``, so does torch); given one
    tensor it copies it where it is."""
    import torch

    from devlint.verify.virtual import VirtualDevice

    with VirtualDevice("cuda"):
        losses = [torch.ones((), device="cuda") for _ in range(3)]
        assert not torch.tensor(losses).is_cuda
        assert not torch.as_tensor(losses).is_cuda
        assert torch.tensor(losses[0]).is_cuda
    with pytest.raises(RuntimeError, match="item"):
        torch.tensor([torch.zeros((), device="meta")])


@pytest.mark.parametrize("kind", ["cuda", "mps"])
def test_every_replacement_keeps_the_shape_of_what_it_replaces(kind: str) -> None:
    """torch and libraries on top of it inspect torch's functions (torch 2.14's dynamo reads
    ``torch.backends.mps.is_available.__wrapped__`` at import): a replaced function keeps
    its name, module and docstring, its ``lru_cache`` (``cache_clear``, ``__wrapped__``) and
    its ``functools.wraps`` wrapping."""
    import torch

    from devlint.verify.virtual import VirtualDevice

    with VirtualDevice(kind) as device:
        patched = {f"{getattr(o, '__name__', o)}.{n}": (b, a) for o, n, b, a in device.patched}
        assert "torch.backends.mps.is_available" in patched
        assert torch.backends.mps.is_available() == (kind == "mps")
        assert torch.backends.mps.is_available.__wrapped__() == (kind == "mps")
        torch.backends.mps.is_available.cache_clear()
        for where, (original, replacement) in patched.items():
            if isinstance(original, staticmethod):
                original, replacement = original.__func__, replacement.__func__
            if isinstance(original, type) or not callable(original):
                continue
            for attr in ("__name__", "__qualname__", "__module__", "__doc__"):
                assert getattr(replacement, attr, None) == getattr(original, attr, None), where
            for attr in ("__wrapped__", "cache_clear", "cache_info", "cache_parameters"):
                assert hasattr(replacement, attr) == hasattr(original, attr), (where, attr)
            if hasattr(original, "cache_parameters"):
                assert replacement.cache_parameters() == original.cache_parameters(), where
                assert type(replacement) is type(original), where


DYNAMO_PROGRAM = """
import sys

import torch
import torch._dynamo
import torch._dynamo.utils

try:  # where dynamo reads torch.backends.mps.is_available.__wrapped__ (torch 2.14)
    import torch._dynamo.variables.torch
except ImportError:
    pass
model = torch.nn.Linear(4, 2).to(0)
torch._dynamo.utils.is_compile_supported(sys.argv[1])
print("dynamo", model(torch.randn(3, 4).to(0)).device)
"""

TORCHVISION_PROGRAM = """
import sys

import torch
import torchvision

model = torchvision.models.resnet18(weights=None).to(sys.argv[1]).eval()
with torch.no_grad():
    print("torchvision", model(torch.randn(1, 3, 32, 32).to(sys.argv[1])).device)
"""


def devlint_run(tmp_path: Path, program: str, kind: str) -> subprocess.CompletedProcess[str]:
    """``devlint run --device KIND program.py KIND`` in a fresh interpreter (the imports
    must happen under the virtual device)."""
    script = tmp_path / "program.py"
    script.write_text(program, encoding="utf-8")
    command = [sys.executable, "-m", "devlint", "run", "--device", kind, str(script), kind]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize("kind", ["cuda", "mps"])
def test_torch_dynamo_imports_under_the_virtual_device(tmp_path: Path, kind: str) -> None:
    done = devlint_run(tmp_path, DYNAMO_PROGRAM, kind)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"dynamo {kind}:0\n" in done.stdout


@pytest.mark.parametrize("kind", ["cuda", "mps"])
def test_torchvision_imports_and_runs_under_the_virtual_device(tmp_path: Path, kind: str) -> None:
    if importlib.util.find_spec("torchvision") is None:
        pytest.skip("torchvision is not installed here (CI's newest-torch step installs it)")
    done = devlint_run(tmp_path, TORCHVISION_PROGRAM, kind)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"torchvision {kind}:0\n" in done.stdout


def test_an_integer_device_is_the_current_accelerator() -> None:
    """As in PyTorch: ``.to(0)``, ``device=0``, ``torch.device(0)`` mean index 0 of the
    current accelerator (a CPU build has none and refuses them outside the virtual device)."""
    import pickle

    import torch

    from devlint.verify.virtual import VirtualDevice

    with VirtualDevice("cuda"):
        gpu_id = 0
        model = torch.nn.Linear(4, 2).to(gpu_id)
        assert {str(p.device) for p in model.parameters()} == {"cuda:0"}
        assert torch.device(0) == torch.device("cuda", 0) == torch.device("cuda:0")
        assert isinstance(torch.device(0), torch.device) and type(torch.device(0)) == torch.device  # noqa: E721
        torch.cuda.set_device(0)
        with torch.cuda.device(0):
            x = torch.randn(3, 4).to(0)
        assert x.device == torch.device("cuda:0") and x.is_cuda
        for placed in (
            torch.randn(3, 4).cuda(0),
            torch.randn(3, 4, device=0),
            torch.randn(3, 4).to(device=0, non_blocking=True),
            torch.randn(3, 4).to(torch.device(0)),
            torch.randn(3, 4).to("cuda:0"),
        ):
            assert str(placed.device) == "cuda:0"
            assert model(placed).is_cuda
        assert next(model.to(0, torch.float64).parameters()).dtype == torch.float64
        with pytest.raises(RuntimeError, match=f"{MIXED}, cuda:0 and cpu!"):
            model.float()(torch.randn(3, 4))
        assert pickle.loads(pickle.dumps(torch.device(0))) == torch.device("cuda:0")
    with VirtualDevice("mps"):
        assert str(torch.ones(2).to(0).device) == "mps:0" and torch.device(0).type == "mps"
    assert torch.device("cpu").__class__ is torch.device  # put back


def test_cuda_only_packages_are_absent_on_virtual_mps(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Mac has no triton (no macOS wheels), also where this machine's CUDA build of torch
    brought it, and torch's dynamo had imported it already."""
    import types

    from devlint.verify.virtual import VirtualDevice

    imported = types.ModuleType("triton")
    monkeypatch.setitem(sys.modules, "triton", imported)
    with VirtualDevice("mps"), pytest.raises(ModuleNotFoundError, match="No module named 'triton'"):
        import triton
    assert sys.modules["triton"] is imported  # put back
    with VirtualDevice("cuda"):
        import triton  # noqa: F401


def test_virtual_mps_is_a_recent_mac_to_autocast() -> None:
    """torch 2.9's autocast("mps") asks for the macOS release (a C++ query that fails off a
    Mac): the virtual Mac answers as a recent one."""
    import torch

    from devlint.verify.virtual import VirtualDevice

    with VirtualDevice("mps"):
        assert torch.backends.mps.is_macos_or_newer(14, 0)
        assert not torch.backends.mps.is_macos_or_newer(99, 0)
        model = torch.nn.Linear(4, 2).to("mps")
        with torch.amp.autocast("mps", dtype=torch.float16):
            assert model(torch.randn(3, 4).to("mps")).device == torch.device("mps:0")


@pytest.mark.parametrize("kind", ["cuda", "mps"])
def test_the_default_device_places_factories_and_layers(kind: str) -> None:
    import torch

    from devlint.verify.virtual import VirtualDevice

    with VirtualDevice(kind):
        torch.set_default_device(kind)
        try:
            layer = torch.nn.Linear(4, 4)
            assert layer.weight.device.type == kind
            assert torch.randn(2, 4).device.type == kind
            assert layer(torch.ones(2, 4)).device.type == kind
        finally:
            torch.set_default_device(None)
        assert torch.zeros(2).device.type == "cpu"
        with torch.device(kind):
            assert torch.zeros(2).device.type == kind
        assert torch.zeros(2).device.type == "cpu"
