"""DEV017 at each ``target-torch``; allow-lists through ``per-file-ignores``."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from devlint.cli import main
from devlint.engine import CheckOptions, check_text
from devlint.fixing import fix_text
from devlint.torch_target import TorchVersion

LIBRARY = """\
import torch


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return torch.cuda.memory_allocated(device)
"""


def _rows(source: str, target: TorchVersion) -> list[tuple[int, str]]:
    options = CheckOptions(frozenset({"DEV017"}), target_torch=target)
    return [(d.start.row, d.message.split("`")[1]) for d in check_text(source, "x.py", options)]


def test_only_apis_the_target_has_are_reported() -> None:
    assert _rows(LIBRARY, (2, 5)) == []
    assert _rows(LIBRARY, (2, 6)) == [(6, "torch.cuda.synchronize()")]
    assert [row for row, _ in _rows(LIBRARY, (2, 9))] == [6, 7, 8]


def test_the_fix_keeps_what_the_cuda_call_did_without_cuda() -> None:
    options = CheckOptions(frozenset({"DEV017"}), target_torch=(2, 9), line_length=120)
    fixed = fix_text(LIBRARY, "x.py", options).text
    assert fixed.splitlines()[5:] == [
        "        torch.accelerator.synchronize()",
        "    if torch.accelerator.is_available():",
        "        torch.accelerator.memory.empty_cache()",
        "    return (torch.accelerator.memory.memory_allocated(device) "
        "if torch.accelerator.is_available() else 0)",
    ]


def test_unguarded_raising_calls_are_left_to_dev011() -> None:
    source = "import torch\ntorch.cuda.synchronize()\n"
    options = CheckOptions(frozenset({"DEV011", "DEV017"}), target_torch=(2, 9))
    assert [d.code for d in check_text(source, "x.py", options)] == ["DEV011"]


def test_strings_only_outside_cuda_specific_code() -> None:
    source = """\
import torch

if torch.accelerator.is_available():
    a = torch.zeros(1, device="cuda")
if torch.cuda.is_available():
    b = torch.zeros(1, device="cuda")
if device.type == "cuda":
    c = torch.zeros(1).to("cuda")
with torch.autocast("cuda"):
    pass
ok = device.type == "cuda"
print("cuda")
"""
    assert [row for row, _ in _rows(source, (2, 0))] == [4, 9]


def test_per_file_ignores_allow_cuda_specific_files(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\ndependencies = ["torch>=2.9"]\n'
        '[tool.devlint]\nextend-select = ["DEV017"]\n'
        'per-file-ignores = { "platforms/cuda.py" = ["DEV017"] }\n',
        encoding="utf-8",
    )
    (tmp_path / "platforms").mkdir()
    for name in ("platforms/cuda.py", "generic.py"):
        (tmp_path / name).write_text(LIBRARY, encoding="utf-8")
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--output-format", "concise", str(tmp_path)]
    )
    reported = {line.split(":", 1)[0] for line in result.output.splitlines() if "DEV017" in line}
    assert reported == {str(tmp_path / "generic.py")}
