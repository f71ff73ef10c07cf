"""Fixes never break code: encodings, line endings, atomic writes, fixpoints, names in scope."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import run_devlint

from devlint.diagnostics import Edit, Fix, Location
from devlint.engine import CheckOptions
from devlint.fixing import apply_fixes, drop_unused_imports, fix_text
from devlint.rule import all_rules
from devlint.source import ChangedOnDisk, write_atomically

DEFAULTS = CheckOptions(frozenset(code for code, rule in all_rules().items() if rule.default))
UNSAFE_TOO = True


def fixed(text: str, unsafe: bool = False, options: CheckOptions = DEFAULTS) -> str:
    return fix_text(text, "t.py", options, unsafe).text


def devlint(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_devlint(*args, "--no-cache", cwd=cwd, stdin=stdin)


CUDA_SCRIPT = "import torch\n\nx = torch.zeros(3).cuda()\nprint(x.numpy())\n"
SELECTION = (
    'device = torch.device(\n    "cuda"\n    if torch.cuda.is_available()\n    else "mps"\n'
    '    if torch.backends.mps.is_available()\n    else "cpu"\n)'
)


def test_cuda_script_becomes_the_to_device_pattern() -> None:
    assert fixed(CUDA_SCRIPT) == (
        f"import torch\n\n{SELECTION}\n\nx = torch.zeros(3).to(device)\nprint(x.cpu().numpy())\n"
    )


def test_fix_is_idempotent_and_reparses() -> None:
    once = fixed(CUDA_SCRIPT, UNSAFE_TOO)
    compile(once, "t.py", "exec")
    assert fixed(once, UNSAFE_TOO) == once


def test_existing_device_variable_is_reused_and_alias_respected() -> None:
    selection = 'T.device("cuda" if T.cuda.is_available() else "cpu")'
    source = f"import torch as T\ndev = {selection}\nm = T.nn.Linear(2, 2).cuda()\n"
    assert fixed(source) == f"import torch as T\ndev = {selection}\nm = T.nn.Linear(2, 2).to(dev)\n"


def test_a_device_fixed_to_the_cpu_is_not_written_for_cuda() -> None:
    # ``dev`` is where the script keeps something on purpose: moving the model there would
    # take it off the GPU. The fix selects a device of its own instead.
    source = 'import torch as T\ndev = T.device("cpu")\nm = T.nn.Linear(2, 2).cuda()\n'
    result = fixed(source)
    assert 'dev = T.device("cpu")\n' in result
    assert result.endswith("m = T.nn.Linear(2, 2).to(device)\n")
    assert "T.backends.mps.is_available()" in result


def test_torch_is_imported_when_only_submodules_are() -> None:
    source = "from torch import nn\n\nnet = nn.Linear(2, 2).cuda()\n"
    result = fixed(source)
    assert result.startswith("from torch import nn\n\nimport torch\ndevice = torch.device(")
    assert result.endswith("net = nn.Linear(2, 2).to(device)\n")


def test_function_parameter_and_self_device_are_used() -> None:
    source = (
        "import torch\n\n"
        "def run(model, device):\n    return model.cuda()\n\n"
        "class Trainer:\n"
        "    def __init__(self, device):\n"
        "        self.device = torch.device(device)\n"
        "    def step(self, x):\n        return x.cuda()\n"
    )
    result = fixed(source)
    assert "return model.to(device)" in result
    assert "return x.to(self.device)" in result
    assert "torch.backends.mps" not in result  # nothing new was selected


def test_device_name_taken_by_something_else_means_no_fix() -> None:
    source = 'import torch\ndevice = 3\nx = torch.zeros(2, device="cuda")\n'
    assert fixed(source) == source


def test_cuda_index_is_reported_but_not_fixed() -> None:
    source = "import torch\nx = torch.zeros(2).cuda(1)\n"
    result = fix_text(source, "t.py", DEFAULTS)
    assert result.text == source
    assert [d.code for d in result.diagnostics] == ["DEV003"]


@pytest.mark.parametrize(
    ("data", "check"),
    [
        (
            CUDA_SCRIPT.replace("\n", "\r\n").encode(),
            lambda out: b"\r\n" in out and b"\n\n" not in out,
        ),
        (b"\xef\xbb\xbf" + CUDA_SCRIPT.encode(), lambda out: out.startswith(b"\xef\xbb\xbf")),
        (
            ("# -*- coding: latin-1 -*-\n" + CUDA_SCRIPT + "# caf\u00e9\n").encode("latin-1"),
            lambda out: out.endswith("# caf\u00e9\n".encode("latin-1")),
        ),
        (CUDA_SCRIPT.rstrip("\n").encode(), lambda out: not out.endswith(b"\n")),
        (
            b"import torch\nif True:\n\tx = torch.ones(1).cuda()\n",
            lambda out: b"\tx = torch.ones(1).to(device)\n" in out,
        ),
    ],
    ids=["crlf", "bom", "latin-1-cookie", "no-final-newline", "tabs"],
)
def test_fix_preserves_the_file_layout(tmp_path: Path, data: bytes, check: object) -> None:
    path = tmp_path / "script.py"
    path.write_bytes(data)
    path.chmod(0o640)
    result = devlint("--fix", "script.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    out = path.read_bytes()
    assert out != data and callable(check) and check(out)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    again = devlint("--fix", "script.py", cwd=tmp_path)
    assert path.read_bytes() == out, again.stdout


def test_files_without_fixes_stay_byte_identical(tmp_path: Path) -> None:
    clean = tmp_path / "clean.py"
    data = b"import torch  \r\nx = torch.ones(2)\n\n\n# trailing   "
    clean.write_bytes(data)
    before = clean.stat().st_mtime_ns
    result = devlint("--fix", ".", cwd=tmp_path)
    assert result.returncode == 0
    assert clean.read_bytes() == data and clean.stat().st_mtime_ns == before


def test_diff_prints_what_fix_would_write_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "script.py"
    path.write_text(CUDA_SCRIPT)
    result = devlint("--diff", "script.py", cwd=tmp_path)
    assert result.returncode == 1
    assert path.read_text() == CUDA_SCRIPT
    assert result.stdout.startswith("--- script.py\n+++ script.py\n")  # as ruff prints
    assert "+x = torch.zeros(3).to(device)" in result.stdout
    assert "Would fix 2 errors." in result.stderr
    patched = tmp_path / "patched"
    patched.mkdir()
    (patched / "script.py").write_text(CUDA_SCRIPT)
    subprocess.run(["patch", "-p0", "-s"], cwd=patched, input=result.stdout, text=True, check=True)
    devlint("--fix", "script.py", cwd=tmp_path)
    assert (patched / "script.py").read_text() == path.read_text()


def test_fix_exit_codes_and_show_fixes(tmp_path: Path) -> None:
    path = tmp_path / "script.py"
    path.write_text(CUDA_SCRIPT)
    result = devlint("--fix", "--show-fixes", "script.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    assert "Found 2 errors (2 fixed, 0 remaining)." in result.stdout
    assert "1 x DEV001 (numpy-on-accelerator)" in result.stdout
    path.write_text(CUDA_SCRIPT)
    assert devlint("--fix", "--exit-non-zero-on-fix", "script.py", cwd=tmp_path).returncode == 1


def test_unsafe_fixes_need_the_option(tmp_path: Path) -> None:
    source = 'import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
    path = tmp_path / "script.py"
    path.write_text(source)
    assert devlint("--fix", "script.py", cwd=tmp_path).returncode == 1
    assert path.read_text() == source
    assert devlint("--fix", "--unsafe-fixes", "script.py", cwd=tmp_path).returncode == 0
    assert "torch.backends.mps.is_available()" in path.read_text()


def test_json_output_carries_fix_edits(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(CUDA_SCRIPT)
    result = devlint("--output-format", "json", "script.py", cwd=tmp_path)
    found = {d["code"]: d["fix"] for d in json.loads(result.stdout)}
    assert found["DEV001"] == {
        "applicability": "safe",
        "message": "Insert `.cpu()`",
        "edits": [
            {
                "content": "x.cpu()",
                "location": {"row": 4, "column": 7},
                "end_location": {"row": 4, "column": 8},
            }
        ],
    }
    assert len(found["DEV003"]["edits"]) == 2  # the move and the device selection


def test_stdin_fix_writes_the_fixed_source_to_stdout(tmp_path: Path) -> None:
    result = devlint("--fix", "-", "--stdin-filename", "t.py", cwd=tmp_path, stdin=CUDA_SCRIPT)
    assert result.returncode == 0
    assert result.stdout == fixed(CUDA_SCRIPT)


def test_overlapping_fixes_wait_for_the_next_round() -> None:
    text = "abcdef\n"

    def fix(start: int, end: int, content: str) -> Fix:
        return Fix("safe", "", (Edit(content, Location(1, start), Location(1, end)),))

    result, applied = apply_fixes(text, [fix(1, 4, "X"), fix(3, 5, "Y"), fix(5, 6, "Z")])
    assert (result, applied) == ("XdZf\n", [0, 2])
    same = [fix(1, 1, "head "), fix(1, 1, "head ")]
    assert apply_fixes(text, same) == ("head abcdef\n", [0, 1])


def test_imports_a_fix_made_unused_are_removed() -> None:
    before = "import os\nfrom torch.cuda.amp import GradScaler, autocast\ns = GradScaler()\n"
    after = (
        "import os\nfrom torch.cuda.amp import GradScaler, autocast\ns = torch.amp.GradScaler()\n"
    )
    assert drop_unused_imports(before, after) == (
        "import os\nfrom torch.cuda.amp import autocast\ns = torch.amp.GradScaler()\n"
    )


def test_a_file_changed_on_disk_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "script.py"
    path.write_bytes(b"new content\n")
    with pytest.raises(ChangedOnDisk):
        write_atomically(path, b"fixed\n", expected=b"old content\n")
    assert path.read_bytes() == b"new content\n"
    assert [p.name for p in tmp_path.iterdir()] == ["script.py"]  # no temporary left behind
