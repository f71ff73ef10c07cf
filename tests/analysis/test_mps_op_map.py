"""The map from Python calls to aten operators, against a fresh recording of a sample."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from devlint.analysis import mps_op_map
from devlint.analysis.mps_op_map import GIVEN, OpTree, matching, outcome

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "record_op_map.py"
# Always re-checked, beside every fifth spec: the calls of issue 28's operators.
ALWAYS = (
    "torch.take", "torch.nn.Embedding", "torch.nn.RReLU", "torch.linalg.svd",
    "torch.linalg.solve", "torch.nn.functional.interpolate", "torch.amp.GradScaler",
)  # fmt: skip


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("record_op_map", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("record_op_map", module)
    spec.loader.exec_module(module)
    return module


def test_a_sample_of_the_map_records_the_same_operators_again() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("torchgen")
    pytest.importorskip("yaml")
    script = _script()
    sample = [spec for n, spec in enumerate(script.SPECS) if n % 5 == 0 or spec.call in ALWAYS]
    recorded, _ = script.record_all(sample)
    assert len(recorded) >= 30
    stored = {
        (e.call, tuple(sorted(e.when.items()))): e for g in mps_op_map.entries().values() for e in g
    }
    for entry in recorded:
        key = (entry["call"], tuple(sorted(entry.get("when", {}).items())))
        assert key in stored, key
        again = tuple(mps_op_map._tree(op) for op in entry["ops"])
        assert stored[key].ops == again, key


def test_the_most_specific_matching_entry_wins() -> None:
    plain = matching("torch.nn.functional.interpolate", {"mode": "bicubic"})
    antialiased = matching(
        "torch.nn.functional.interpolate", {"mode": "bicubic", "antialias": True}
    )
    assert plain is not None and antialiased is not None
    assert plain.ops == (OpTree("upsample_bicubic2d"),)
    assert antialiased.ops == (OpTree("_upsample_bicubic2d_aa"),)
    assert matching("torch.nn.functional.interpolate", {"mode": "nearest"}) is None
    assert matching("torch.nn.functional.interpolate", {}) is None


def test_conditions_read_keywords_and_positions() -> None:
    assert matching("torch.nn.Embedding", {"max_norm": 1.0}) is not None
    assert matching("torch.nn.Embedding", {3: ...}) is not None  # by position, not a literal
    assert matching("torch.nn.Embedding", {"max_norm": None}) is None
    assert matching("torch.nn.Embedding", {}) is None
    assert matching("torch.nn.RReLU", {}) is not None
    assert matching("torch.nn.functional.rrelu", {"training": ...}) is not None  # both ways
    assert matching("torch.amp.GradScaler", {}) is not None
    assert matching("torch.amp.GradScaler", {"enabled": True}) is not None
    assert matching("torch.amp.GradScaler", {5: False}) is None
    assert matching("torch.amp.GradScaler", {"enabled": ...}) is None  # may be off
    entry = matching("torch.unique", {"dim": 0})
    assert entry is not None and entry.when == {"dim": GIVEN}


def test_outcomes_by_release() -> None:
    solve = matching("torch.linalg.solve", {})
    assert solve is not None
    old, new = outcome(solve.ops, (2, 6)), outcome(solve.ops, (2, 7))
    assert old is not None and old.outcome == "M" and old.operator == "aten::_linalg_solve_ex"
    assert old.since == (2, 7) and new is None
    svd = matching("torch.linalg.svd", {})
    assert svd is not None
    verdict = outcome(svd.ops, (2, 13))  # linalg_svd runs on the CPU before it decomposes
    assert verdict is not None and verdict.outcome == "F" and verdict.operator == "aten::linalg_svd"
    assert outcome((OpTree("add.Tensor"),), (2, 0)) is None


def test_a_composite_runs_its_children_where_it_has_no_kernel() -> None:
    tree = (OpTree("upsample_nearest3d.vec", (OpTree("take"),)),)
    early, late = outcome(tree, (2, 0)), outcome(tree, (2, 13))
    assert early is not None and early.outcome == "F"  # its own fallback, until 2.7
    assert late is not None and late.operator == "aten::take"  # then its decomposition
