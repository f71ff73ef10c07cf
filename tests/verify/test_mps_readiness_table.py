"""scripts/mps_readiness_table.py: the models of docs/mps-readiness.md, measured on two of
its cells (needs torch; the whole table: ``python scripts/mps_readiness_table.py --check``)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None
pytestmark = pytest.mark.skipif(
    not HAS_TORCH and not os.environ.get("DEVLINT_REQUIRE_TORCH"),
    reason="the virtual device needs torch (pip install 'devlint[verify]')",
)
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "mps_readiness_table.py"


@pytest.fixture(scope="module")
def table() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mps_readiness_table", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("model", "missing_at_2_4"),
    [("GNN layer", {"scatter_reduce.two"}), ("Diffusion UNet", {"native_group_norm_backward"})],
)
def test_a_model_fails_at_2_4_and_runs_at_the_newest(
    table: ModuleType, model: str, missing_at_2_4: set[str]
) -> None:
    _, run = table.MODELS[model]
    found, used, error = table.measure(run, (2, 4))
    assert (set(found), error) == (missing_at_2_4, "")
    assert used > 20
    found, _, error = table.measure(run, table.TARGETS[-1])
    assert (found, error) == ({}, "")
