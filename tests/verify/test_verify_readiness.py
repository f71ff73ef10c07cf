"""``devlint run --device mps --report``: every operator MPS lacks, in one run (needs torch)."""

from __future__ import annotations

import importlib.util
import json
import os
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.verify.run_script import run

HAS_TORCH = importlib.util.find_spec("torch") is not None
pytestmark = pytest.mark.skipif(
    not HAS_TORCH and not os.environ.get("DEVLINT_REQUIRE_TORCH"),
    reason="devlint run needs torch (pip install 'devlint[verify]')",
)

SCRIPT = """\
import torch

device = torch.device("mps" if torch.backends.mps.is_available() else "cpu")
x = torch.randn(6, 4).to(device)
index = torch.tensor([0, 5]).to(device)
for _ in range(3):
    picked = x.take(index)
u, s, vh = torch.linalg.svd(x, full_matrices=False)
a = torch.randn(4, 4).to(device) + 4 * torch.eye(4, device=device)
solution = torch.linalg.solve(a, a)
print("done", picked.sum().item(), s.shape, solution.shape)
"""


def write(tmp_path: Path, text: str, name: str = "train.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(run, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def rows(out: str) -> dict[str, list[str]]:
    """The table's rows by operator: its cells (split on runs of two spaces)."""
    found = {}
    for line in out.splitlines():
        if line.startswith("aten::"):
            cells = [c.strip() for c in line.split("  ") if c.strip()]
            found[cells[0]] = cells
    return found


def test_the_report_lists_every_missing_operator_and_goes_on(tmp_path: Path) -> None:
    script = write(tmp_path, SCRIPT)
    code, out, _ = invoke("--device", "mps", "--report", "--target-torch", "2.6", str(script))
    assert code == 1, out
    assert "done" in out  # the run went on past the first missing operator
    assert f"MPS readiness of {script} at torch 2.6" in out
    table = rows(out)
    assert list(table) == ["aten::take", "aten::_linalg_solve_ex", "aten::linalg_svd"]
    take, solve, svd = (
        table["aten::take"],
        table["aten::_linalg_solve_ex"],
        table["aten::linalg_svd"],
    )
    assert take[1:3] == ["missing", "3"] and take[3].endswith("train.py:7")
    assert take[4:] == ["none up to 2.13", "DEV019", "line 7"]
    assert solve[1] == "missing" and solve[3].endswith(":10") and solve[4] == "2.7"
    assert svd[1] == "falls back to the CPU" and svd[3].endswith(":8")
    assert svd[5:] == ["DEV019", "line 8"]
    summary = out.splitlines()[-1]
    assert summary.startswith("not ready: 2 missing on MPS in torch 2.6")
    assert "1 falling back to the CPU" in summary


def test_an_operator_fixed_at_the_target_is_not_listed(tmp_path: Path) -> None:
    script = write(tmp_path, SCRIPT)
    code, out, _ = invoke("--device", "mps", "--report", "--target-torch", "2.7", str(script))
    assert code == 1
    assert "aten::_linalg_solve_ex" not in out and "aten::take" in out


def test_fallbacks_alone_exit_0_and_a_ready_script_says_so(tmp_path: Path) -> None:
    script = write(
        tmp_path,
        """\
        import torch
        x = torch.randn(6, 4, device="mps")
        print(torch.linalg.svd(x, full_matrices=False).S.shape)
        """,
    )
    code, out, _ = invoke("--device", "mps", "--report", "--target-torch", "2.13", str(script))
    assert code == 0, out
    assert out.splitlines()[-1].startswith("runs: nothing missing on MPS in torch 2.13, 1 falling")
    ready = write(
        tmp_path, "import torch\nprint((torch.ones(3, device='mps') * 2).sum())\n", "ok.py"
    )
    code, out, _ = invoke("--device", "mps", "--report", "--target-torch", "2.0", str(ready))
    assert code == 0, out
    assert out.splitlines()[-1].startswith("ready: all ")
    assert "have an MPS kernel in torch 2.0" in out


def test_a_script_that_places_nothing_on_mps_is_not_called_ready(tmp_path: Path) -> None:
    script = write(
        tmp_path,
        """\
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        print(torch.ones(3).to(device).take(torch.tensor([0])))
        """,
    )
    code, out, _ = invoke("--device", "mps", "--report", "--target-torch", "2.0", str(script))
    assert code == 0, out
    assert out.splitlines()[-1] == (
        "nothing ran on MPS: the run placed no tensor there (nothing to report)"
    )


def test_the_project_target_torch_is_the_default(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "0"\ndependencies = ["torch>=2.4"]\n'
    )
    script = write(tmp_path, SCRIPT)
    code, out, _ = invoke("--device", "mps", "--report", str(script))
    assert code == 1
    assert "at torch 2.4" in out.splitlines()[1] or "at torch 2.4" in out
    assert rows(out)["aten::_linalg_solve_ex"][4] == "2.7"


def test_backward_operators_are_placed_at_the_backward_call(tmp_path: Path) -> None:
    script = write(
        tmp_path,
        """\
        import torch
        from torch import nn

        model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(4, 8)).to("mps")
        loss = model(torch.randn(2, 3, 8, 8, device="mps")).square().mean()
        loss.backward()
        """,
    )
    code, out, _ = invoke("--device", "mps", "--report", "--target-torch", "2.4", str(script))
    assert code == 1, out
    backward = rows(out)["aten::native_group_norm_backward"]
    assert backward[1:3] == ["missing", "1"] and backward[3].endswith("train.py:6")
    assert backward[4] == "2.13"


def test_json_is_the_report_alone_on_stdout(tmp_path: Path) -> None:
    script = write(tmp_path, SCRIPT)
    code, out, err = invoke(
        "--device",
        "mps",
        "--report",
        "--report-format",
        "json",
        "--target-torch",
        "2.6",
        str(script),
    )
    assert code == 1
    data = json.loads(out)  # the script's own output went to stderr
    assert "done" in err
    assert (data["target_torch"], data["exit_code"]) == ("2.6", 1)
    first = data["unavailable"][0]
    assert first == {
        "operator": "aten::take",
        "status": "missing",
        "calls": 3,
        "first_call": first["first_call"],
        "mps_kernel_from": None,
        "rule": "DEV019",
        "static_lines": [7],
    }
    assert first["first_call"].endswith("train.py:7")
    assert data["unavailable"][1]["mps_kernel_from"] == "2.7"
    assert data["operators_used"] > 3


def test_without_report_the_first_missing_operator_stops_the_run_as_dev019(
    tmp_path: Path,
) -> None:
    script = write(tmp_path, SCRIPT)
    code, out, _ = invoke("--device", "mps", "--target-torch", "2.6", str(script))
    assert code == 1, out
    first, second = out.splitlines()[:2]
    assert first.startswith(f"{script}:7: device bug on virtual mps: NotImplementedError: ")
    assert "aten::take" in first
    assert second.startswith("  rule: DEV019 (")
    assert "static analysis found it too:" in out


def test_report_needs_mps_and_a_release(tmp_path: Path) -> None:
    script = write(tmp_path, SCRIPT)
    code, _, err = invoke("--device", "cuda", "--report", str(script))
    assert code == 2 and "--device mps" in err
    code, _, err = invoke("--device", "mps", "--report", "--target-torch", "two", str(script))
    assert code == 2 and "--target-torch" in err
