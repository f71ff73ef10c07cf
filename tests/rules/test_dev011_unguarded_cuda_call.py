"""DEV011's fixes at each ``target-torch``, and the fixed programs on this (CPU) machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from devlint.analysis import torch_api
from devlint.engine import CheckOptions, check_text
from devlint.fixing import fix_text
from devlint.torch_target import TorchVersion

PROGRAM = """\
import torch

torch.cuda.synchronize()
torch.cuda.reset_peak_memory_stats()
index = torch.cuda.current_device()
free, total = torch.cuda.mem_get_info()
print(index, free, total, torch.cuda.get_device_name(index))
"""

FIXED = {
    (2, 0): """\
import torch

if torch.cuda.is_available():
    torch.cuda.synchronize()
if torch.cuda.is_available():
    torch.cuda.reset_peak_memory_stats()
index = (torch.cuda.current_device() if torch.cuda.is_available() else 0)
free, total = (torch.cuda.mem_get_info() if torch.cuda.is_available() else (0, 0))
print(index, free, total, (torch.cuda.get_device_name(index) if torch.cuda.is_available() else "cpu"))
""",
    (2, 6): """\
import torch

if torch.accelerator.is_available():
    torch.accelerator.synchronize()
if torch.cuda.is_available():
    torch.cuda.reset_peak_memory_stats()
index = (torch.accelerator.current_device_index() if torch.accelerator.is_available() else 0)
free, total = (torch.cuda.mem_get_info() if torch.cuda.is_available() else (0, 0))
print(index, free, total, (torch.cuda.get_device_name(index) if torch.cuda.is_available() else "cpu"))
""",
    (2, 10): """\
import torch

if torch.accelerator.is_available():
    torch.accelerator.synchronize()
if torch.accelerator.is_available():
    torch.accelerator.memory.reset_peak_memory_stats()
index = (torch.accelerator.current_device_index() if torch.accelerator.is_available() else 0)
free, total = (torch.accelerator.memory.get_memory_info() if torch.accelerator.is_available() else (0, 0))
print(index, free, total, (torch.cuda.get_device_name(index) if torch.cuda.is_available() else "cpu"))
""",
}


def _options(target: TorchVersion) -> CheckOptions:
    return CheckOptions(frozenset({"DEV011"}), target_torch=target, line_length=120)


@pytest.mark.parametrize("target", list(FIXED), ids=lambda t: f"torch{t[0]}.{t[1]}")
def test_the_fix_uses_what_the_target_has(target: TorchVersion) -> None:
    result = fix_text(PROGRAM, "x.py", _options(target), unsafe=True)
    assert result.text == FIXED[target]
    assert result.diagnostics == []
    assert fix_text(result.text, "x.py", _options(target), unsafe=True).text == result.text


def test_statements_are_safe_used_values_unsafe() -> None:
    found = check_text(PROGRAM, "x.py", _options((2, 10)))
    safety = {d.start.row: d.fix.applicability if d.fix else None for d in found}
    assert safety == {3: "safe", 4: "safe", 5: "unsafe", 6: "unsafe", 7: "unsafe"}
    safe_only = fix_text(PROGRAM, "x.py", _options((2, 10))).text
    assert safe_only.splitlines()[6:] == PROGRAM.splitlines()[4:]  # two if blocks above


def test_no_stand_in_no_fix() -> None:
    source = "import torch\nprops = torch.cuda.get_device_properties(0)\nprint(props.name)\n"
    [found] = check_text(source, "x.py", _options((2, 13)))
    assert found.fix is None


def test_the_cuda_profiler_is_reported() -> None:
    """mace's LAMMPS calculator starts and stops ``torch.cuda.profiler`` at chosen steps:
    both raise without CUDA (``test_every_cuda_only_call_raises_without_cuda``)."""
    source = "import torch\ntorch.cuda.profiler.start()\nrun()\ntorch.cuda.profiler.stop()\n"
    found = check_text(source, "x.py", _options((2, 13)))
    assert [(d.code, d.start.row, d.fix) for d in found] == [
        ("DEV011", 2, None),
        ("DEV011", 4, None),
    ]


def test_a_context_manager_is_not_rewritten_unguarded() -> None:
    source = "import torch\nwith torch.cuda.device(1):\n    pass\n"
    [found] = check_text(source, "x.py", _options((2, 13)))
    assert found.fix is None


@pytest.mark.parametrize(
    ("package", "reported"),
    [
        ("triton", False),  # kernels: no build of it runs without a GPU
        ("flash_attn", False),
        # apex installs without its CUDA extensions ("Python-only build"), and its amp
        # and DDP import and run on a CPU: a script that imports it still needs a guard
        # (ViT-pytorch, glow-tts, NVIDIA semantic-segmentation: blind58, blind32, blind45)
        ("apex", True),
    ],
)
def test_a_cuda_only_package_makes_the_module_code_for_cuda(package: str, reported: bool) -> None:
    source = f"import torch\nfrom {package} import amp\ntorch.cuda.set_device(0)\n"
    found = check_text(source, "x.py", _options((2, 13)))
    assert [d.start.row for d in found] == ([3] if reported else [])


@pytest.mark.slow
@pytest.mark.parametrize("target", list(FIXED), ids=lambda t: f"torch{t[0]}.{t[1]}")
def test_the_fixed_program_runs_without_cuda(target: TorchVersion, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available() or torch.accelerator.is_available():
        pytest.skip("this machine has an accelerator: the CPU path is not the one run")
    script = tmp_path / "fixed.py"
    script.write_text(FIXED[target], encoding="utf-8")
    original = tmp_path / "original.py"
    original.write_text(PROGRAM, encoding="utf-8")
    assert subprocess.run([sys.executable, str(original)], capture_output=True).returncode != 0
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "0 0 0 cpu\n"


@pytest.mark.parametrize(
    ("line", "fixed"),
    [
        (
            "torch.cuda.synchronize()  # wait\n",
            "if torch.cuda.is_available():\n    torch.cuda.synchronize()  # wait\n",
        ),
        (
            "x = 1; torch.cuda.synchronize()\n",
            "x = 1; torch.cuda.synchronize() if torch.cuda.is_available() else None\n",
        ),
        (
            "if x: torch.cuda.synchronize()\n",
            "if x: torch.cuda.synchronize() if torch.cuda.is_available() else None\n",
        ),
    ],
)
def test_a_statement_alone_on_its_line_goes_in_an_if_block(line: str, fixed: str) -> None:
    source = "import torch\nx = 0\n" + line
    assert fix_text(source, "x.py", _options((2, 0))).text == "import torch\nx = 0\n" + fixed


# Arguments for the entries of ``torch_api.CUDA_ONLY_CALLS`` that need them.
_ARGUMENTS = {
    "set_device": "(0)",
    "device": "(0)",
    "can_device_access_peer": "(0, 1)",
    "set_per_process_memory_fraction": "(0.5)",
    "caching_allocator_alloc": "(8)",
    "nvtx.range_push": "('step')",
    "nvtx.range": "('step')",
    "nvtx.mark": "('step')",
    "graph": "(None)",
}
_CONTEXT_MANAGERS = {"device", "graph", "nvtx.range"}


@pytest.mark.parametrize("callee", sorted(torch_api.CUDA_ONLY_CALLS))
def test_every_cuda_only_call_raises_without_cuda(callee: str) -> None:
    """The table DEV011 reports from holds only calls that really raise on a torch without
    CUDA (a CPU-only build, as on a Mac): ``set_rng_state`` is queued, not raised."""
    torch = pytest.importorskip("torch")
    if torch.version.cuda is not None or torch.cuda.is_available():
        pytest.skip("a CUDA build: the table is checked on a CPU-only build, as a Mac's")
    name = callee.removeprefix("torch.cuda.")
    call = f"{callee}{_ARGUMENTS.get(name, '(2)' if name.endswith('Tensor') else '()')}"
    # Not a TypeError (wrong arguments), but for the legacy types: "type
    # torch.cuda.LongTensor not available"; memory_summary fails on an empty KeyError.
    legacy = name.endswith("Tensor")
    raised = (RuntimeError, AssertionError, AttributeError, KeyError)
    with pytest.raises(TypeError if legacy else raised):
        value = eval(call, {"torch": torch})  # a call from the table above
        if name in _CONTEXT_MANAGERS:
            with value:
                pass
