"""Operators tracked in pytorch/pytorch#77764 and #141287, found both ways on DEV019's
fixtures: statically (``devlint check --select DEV019``) and by running the program
(``devlint run --device mps --report``), at a release where MPS lacks them, and no longer
at the release that gave them a kernel (needs torch). docs/mps-readiness.md lists them."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.torch_target import TorchVersion, parse_target
from devlint.verify.readiness import static_lines
from devlint.verify.run_script import run

HAS_TORCH = importlib.util.find_spec("torch") is not None
pytestmark = pytest.mark.skipif(
    not HAS_TORCH and not os.environ.get("DEVLINT_REQUIRE_TORCH"),
    reason="devlint run needs torch (pip install 'devlint[verify]')",
)
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "DEV019"

# program -> {operator: (status at torch 2.0, the release that gave it a kernel or None)}
TRACKED: dict[str, dict[str, tuple[str, str | None]]] = {
    "bad_take_mode_heaviside.py": {
        "take": ("missing", None),
        "mode": ("missing", None),
        "heaviside": ("missing", None),
        "poisson": ("missing", None),
    },
    "bad_linalg_eig_in_forward.py": {"linalg_eig": ("missing", None)},
    "bad_rrelu_training.py": {"rrelu_with_noise": ("missing", None)},
    "bad_margin_loss_and_shuffle.py": {
        "channel_shuffle": ("missing", None),
        "multi_margin_loss": ("missing", None),
    },
    "bad_accelerator_device.py": {
        "take": ("missing", None),
        "_amp_foreach_non_finite_check_and_unscale_": ("missing", "2.8"),
    },
    "bad_embedding_max_norm.py": {"embedding_renorm_": ("falls_back", None)},
    "bad_linalg_svd_falls_back.py": {"linalg_svd": ("falls_back", None)},
    "bad_pooling_losses_and_sampling.py": {
        "adaptive_max_pool3d": ("missing", None),
        "fractional_max_pool2d": ("missing", None),
        "linalg_matrix_exp": ("missing", None),
        "binomial": ("missing", None),
        "multilabel_margin_loss_forward": ("missing", None),
        "put_": ("missing", None),
    },
    "bad_fixed_in_later_releases.py": {
        "_linalg_solve_ex": ("missing", "2.7"),
        "upsample_bicubic2d": ("missing", "2.6"),
        "_embedding_bag": ("missing", "2.10"),
        "linalg_qr": ("missing", "2.12"),
        "_fft_r2c": ("missing", "2.3"),
        "_cummax_helper": ("missing", "2.8"),
    },
}


def dynamic(program: Path, target: str) -> dict[str, dict[str, object]]:
    """``devlint run --device mps --report --report-format json``: operator -> its row."""
    arguments = ["--device", "mps", "--report", "--report-format", "json"]
    result = CliRunner().invoke(run, [*arguments, "--target-torch", target, str(program)])
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    return {row["operator"].removeprefix("aten::"): row for row in report["unavailable"]}


def release(text: str) -> TorchVersion:
    found = parse_target(text)
    assert found is not None
    return found


def test_at_least_ten_tracked_operators() -> None:
    assert len({op for ops in TRACKED.values() for op in ops}) >= 10


@pytest.mark.parametrize("name", sorted(TRACKED))
def test_found_statically_and_dynamically_where_mps_lacks_them(name: str) -> None:
    program = FIXTURES / name
    static = static_lines(program, (2, 0))
    rows = dynamic(program, "2.0")
    for op, (status, fixed) in TRACKED[name].items():
        assert static.get(op), f"DEV019 does not report {op} in {name}"
        row = rows.get(op)
        assert row is not None, f"devlint run does not report {op} in {name}"
        assert (row["status"], row["mps_kernel_from"]) == (status, fixed)
        assert row["rule"] == "DEV019"
        assert row["static_lines"], f"the run's {op} has no DEV019 diagnostic"
        first_line = int(str(row["first_call"]).rsplit(":", 1)[1])
        assert first_line >= min(row["static_lines"])  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["bad_fixed_in_later_releases.py", "bad_accelerator_device.py"])
def test_neither_way_once_a_release_gave_them_a_kernel(name: str) -> None:
    fixed = {op: kernel for op, (_, kernel) in TRACKED[name].items() if kernel}
    newest = max(fixed.values(), key=release)
    program = FIXTURES / name
    static = static_lines(program, release(newest))
    rows = dynamic(program, newest)
    for op in fixed:
        assert op not in static and op not in rows, op
    for op, (_, kernel) in TRACKED[name].items():
        if kernel is None:  # never fixed: still both ways
            assert op in static and op in rows, op
