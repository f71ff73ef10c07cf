"""``devlint run --device cuda|mps script.py``: the verdicts, on shipped fixtures (needs torch)."""

from __future__ import annotations

import importlib.util
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
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(run, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("device", "program", "rule", "message"),
    [
        ("cuda", "DEV001/bad_predict_argmax_numpy.py", "DEV001", "can't convert cuda:0"),
        ("mps", "DEV002/bad_regression_arith.py", "DEV002", "Expected all tensors"),
        ("cuda", "DEV013/bad_contrastive_mask_and_targets.py", "DEV013", "mask on cpu"),
    ],
)
def test_a_bad_fixture_stops_at_its_bug_with_its_rule(
    device: str, program: str, rule: str, message: str
) -> None:
    path = FIXTURES / program
    code, out, _ = invoke("--device", device, str(path))
    assert code == 1, out
    first, second = out.splitlines()[:2]
    assert first.startswith(f"{path}:") and f"device bug on virtual {device}" in first
    assert message in first
    assert second.startswith(f"  rule: {rule} (")
    # DEV001/DEV002 report the failing line; DEV013 reports its cause, the factory above it
    found = "found it too:" if rule != "DEV013" else "reports its rule elsewhere in the file"
    assert f"  static analysis {found}" in out and f": {rule} " in out.split("static analysis")[1]


def test_a_good_fixture_runs_to_the_end_and_steps_are_counted() -> None:
    path = FIXTURES / "DEV001" / "good_item_tolist.py"
    code, out, _ = invoke("--device", "cuda", str(path))
    assert code == 0, out
    assert out.splitlines()[-1].startswith(f"{path}: ran to the end on virtual cuda in ")
    assert "6 optimizer steps" in out
    code, out, _ = invoke("--device", "cuda", "--max-steps", "2", str(path))
    assert (code, out.splitlines()[-1].split(" (")[0]) == (
        0,
        f"{path}: stopped after 2 optimizer steps on virtual cuda: no device bug so far",
    )


def test_an_unrelated_failure_is_one_line(tmp_path: Path) -> None:
    script = tmp_path / "broken.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            import torch

            x = torch.ones(2).cuda()
            print(sys.argv[1:], x.device)
            {}["missing"]
            """
        ),
        encoding="utf-8",
    )
    code, out, err = invoke("--device", "cuda", str(script), "--flag", "value")
    assert code == 2
    assert out == "['--flag', 'value'] cuda:0\n"
    assert err == (
        f"error: {script}:7: KeyError: 'missing' (not a device bug; it failed for another "
        "reason on virtual cuda)\n"
    )
