"""DEV003's fix keeps a value's type and converts a file as a whole (issue: a safe fix
that broke a config-string trainer)."""

from __future__ import annotations

import textwrap

from devlint.engine import CheckOptions, check_text
from devlint.fixing import fix_text

OPTIONS = CheckOptions(frozenset({"DEV003"}))


def fixes(source: str) -> list[tuple[str, str]]:
    return [
        (d.fix.applicability, d.fix.message)
        for d in check_text(source, "example.py", OPTIONS)
        if d.fix is not None
    ]


def test_a_device_string_stays_a_string() -> None:
    source = 'import torch\n\ndevice = "cuda"\nx = torch.zeros(2).to(device)\n'
    fixed = fix_text(source, "example.py", OPTIONS).text
    namespace: dict[str, object] = {}
    exec(compile(fixed, "example.py", "exec"), namespace)
    assert isinstance(namespace["device"], str)
    assert "torch.device(" not in fixed


def test_torch_device_stays_a_torch_device() -> None:
    source = 'import torch\n\ndevice = torch.device("cuda")\nx = torch.zeros(2).to(device)\n'
    fixed = fix_text(source, "example.py", OPTIONS).text
    namespace: dict[str, object] = {}
    exec(compile(fixed, "example.py", "exec"), namespace)
    assert type(namespace["device"]).__name__ == "device"


METHOD_ONE = """\
import torch
from torch import nn

model = nn.Linear(4, 2)
if torch.cuda.is_available():
    model = model.cuda()
hidden = torch.zeros(3, 4).cuda()
print(model(hidden))
"""


def test_the_fix_folds_method_one_blocks_it_would_leave_behind() -> None:
    assert fixes(METHOD_ONE) == [
        ("safe", "Use `.to(device)`, and fold the CUDA-only `if` blocks"),
    ]
    fixed = fix_text(METHOD_ONE, "example.py", OPTIONS).text
    assert "model = model.to(device)" in fixed
    assert "if torch.cuda.is_available():\n    model" not in fixed
    exec(compile(fixed, "example.py", "exec"), {})


def test_a_method_one_block_it_cannot_fold_makes_the_fix_unsafe() -> None:
    source = METHOD_ONE.replace(
        "    model = model.cuda()\n", '    model = model.cuda()\n    print("on the GPU")\n'
    )
    assert fixes(source) == [("unsafe", "Use `.to(device)`")]
    assert fix_text(source, "example.py", OPTIONS).text == source  # nothing safe to apply


def test_a_conditional_expression_move_makes_the_fix_unsafe() -> None:
    source = METHOD_ONE.replace(
        "if torch.cuda.is_available():\n    model = model.cuda()\n",
        "model = model.cuda() if torch.cuda.is_available() else model\n",
    )
    assert fixes(source) == [("unsafe", "Use `.to(device)`")]


INHERITED = """
import torch
from agents.core import TorchAgent{extra}


class RankerAgent({base}):
    def step(self, batch):
        if self.use_cuda:
            batch = batch.cuda()
        return batch
"""


def reported_rows(source: str) -> list[int]:
    return [d.start.row for d in check_text(source, "example.py", OPTIONS)]


def test_a_flag_of_a_base_class_from_another_module_is_not_a_user_option() -> None:
    """``self.use_cuda`` that the agent never sets is its base class's: ParlAI's
    ``TorchAgent`` sets it from ``torch.cuda.is_available()`` (eval/blind27)."""
    assert reported_rows(INHERITED.format(extra="", base="TorchAgent")) == []
    local = "\n\nclass Base(TorchAgent):\n    pass"
    assert reported_rows(INHERITED.format(extra=local, base="Base")) == []


def test_a_flag_no_base_can_hold_stays_unguarded() -> None:
    """A class of torch's or this file's only, that reads a flag it set from a user
    option: the code under it is still unguarded."""
    user_option = (
        "\n\nclass Base(torch.nn.Module):\n"
        "    def __init__(self, args):\n"
        "        super().__init__()\n"
        "        self.use_cuda = args.cuda"
    )
    source = INHERITED.format(extra=user_option, base="Base")
    row = source.splitlines().index("            batch = batch.cuda()") + 1
    assert reported_rows(source) == [row]


RECORDS = """\
import types
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass
class Target:
    device: str


class Runner:
    def __init__(self, device):
        self.device = device

    def run(self, x):
        return x.to(self.device)


def setup(rank):
    device = torch.device("cuda", rank)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)


settings = types.SimpleNamespace(device="cuda")
options = dict(device="cuda")
target = Target(device="cuda")
runner = Runner(device="cuda")
"""


def test_a_device_held_as_data_or_given_to_a_torch_api_that_places_nothing_is_not_placed() -> None:
    """A namespace, a dict or a class of the file that only stores ``device="cuda"`` holds
    a setting; a CUDA device handed only to ``set_device`` / ``init_process_group`` binds
    the process to it (DEV011 reports those calls). The one class that places with the
    device it is given is reported at the literal (unsloth's studio tests: stop 37's
    corpus sweep; modded-nanogpt, nanoVLM: eval/blind34, blind35)."""
    row = RECORDS.splitlines().index('runner = Runner(device="cuda")') + 1
    assert reported_rows(RECORDS) == [row]


def test_torch_imported_by_importorskip_is_torch() -> None:
    """``torch = pytest.importorskip("torch")`` binds the module as ``import torch`` does:
    its availability tests guard (unsloth's tests: stop 37's corpus sweep)."""
    source = (
        "import pytest\n\n"
        'torch = pytest.importorskip("torch")\n\n\n'
        '@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")\n'
        "def test_on_gpu():\n"
        "    assert torch.zeros(3).cuda().is_cuda\n\n\n"
        "def test_anywhere():\n"
        "    return torch.ones(2).cuda()\n"
    )
    assert reported_rows(source) == [12]


def test_a_cuda_default_refused_where_cuda_is_absent_is_checked() -> None:
    """``if "cuda" in device: assert torch.cuda.is_available()`` and ``if
    device.startswith("cuda") and not torch.cuda.is_available(): raise``: past them, the
    default is used only where CUDA is available (READING, blind20; OpenVoice's ``api.py``:
    stop 37's corpus sweep). A test of the name alone checks nothing."""
    source = textwrap.dedent(
        """\
        import torch
        from faster_whisper import WhisperModel

        class Base:
            def __init__(self, device="cuda:0"):
                if device.startswith("cuda") and not torch.cuda.is_available():
                    raise RuntimeError("no cuda")
                self.m = torch.nn.Linear(2, 2).to(device)

        class Api:
            def __init__(self, device="cuda:0"):
                if "cuda" in device:
                    assert torch.cuda.is_available()
                self.model = torch.nn.Linear(2, 2).to(device)

        class Unchecked:
            def __init__(self, device="cuda:0"):
                if "cuda" in device:
                    print("using cuda")
                self.model = torch.nn.Linear(2, 2).to(device)

        def main(device="cuda"):
            if device == "cuda" and not torch.cuda.is_available():
                raise SystemExit("CUDA is not available")
            asr = WhisperModel("small", device="cuda", compute_type="float16")
            return asr, torch.zeros(2, device=device)
        """
    )
    assert reported_rows(source) == [17]


def test_a_parametrised_cuda_case_skipped_without_cuda_is_guarded() -> None:
    """``pytest.param(torch.device("cuda"), marks=pytest.mark.skipif(not available))``
    runs only where CUDA is (kornia's tests: stop 37's corpus sweep); another mark
    guards nothing."""
    source = textwrap.dedent(
        """\
        import pytest
        import torch

        requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="cuda")

        @pytest.mark.parametrize(
            "device",
            [
                torch.device("cpu"),
                pytest.param(torch.device("cuda"), marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="cuda")),
                pytest.param(torch.device("cuda", 1), marks=[requires_cuda]),
                pytest.param(torch.device("cuda:2"), marks=pytest.mark.slow),
            ],
        )
        def test_zeros(device):
            assert torch.zeros(2, device=device).device == device
        """
    )
    assert reported_rows(source) == [12]


def test_an_integer_device_is_not_a_cuda_placement() -> None:
    """``.to(rank)``, ``device=0``, ``torch.device(local_rank)``: an index names the
    current accelerator (CUDA's or, since torch 2.5, MPS's), not one of DEV003's forms;
    a CUDA string built from the index still is."""
    source = textwrap.dedent(
        """\
        import os
        import torch
        rank = int(os.environ.get("LOCAL_RANK", "0"))
        model = torch.nn.Linear(2, 2).to(rank)
        x = torch.zeros(2, device=0)
        device = torch.device(rank)
        y = torch.ones(2).to(f"cuda:{rank}")
        """
    )
    rows = [d.start.row for d in check_text(source, "example.py", OPTIONS)]
    assert rows == [7]


def test_a_test_librarys_cuda_decorator_guards_the_test() -> None:
    """transformers' ``@require_torch_gpu`` skips the test unless CUDA is there (axolotl's
    tests; eval/blind100), as ``pytest.mark.skipif(not torch.cuda.is_available())`` does;
    a decorator of the same name from elsewhere is unknown and guards nothing."""
    source = textwrap.dedent(
        """\
        import torch
        from transformers.testing_utils import require_torch_gpu
        from mylib import require_torch_gpu as mine
        @require_torch_gpu
        def test_on_gpu():
            return torch.zeros(2, device="cuda")
        @mine
        def test_elsewhere():
            return torch.zeros(2, device="cuda")
        """
    )
    rows = [d.start.row for d in check_text(source, "example.py", OPTIONS)]
    assert rows == [9]
