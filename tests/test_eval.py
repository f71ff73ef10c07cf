"""The realistic, hand-labelled scripts of eval/: devlint matches every label but the known gaps."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def _evaluate_module() -> ModuleType:  # scripts/ is not a package: load it by path
    spec = importlib.util.spec_from_file_location("evaluate", ROOT / "scripts" / "evaluate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("evaluate", module)
    spec.loader.exec_module(module)
    return module


def test_devlint_matches_the_labels_except_the_known_gaps() -> None:
    evaluate = _evaluate_module()
    paths = sorted((ROOT / "eval").rglob("*.py"))
    assert len(paths) >= 70
    expected = set()
    for path in paths:
        expected |= evaluate.labels_of(path, path.relative_to(ROOT).as_posix())
    reported = evaluate.diagnostics_of(paths)
    differences = {f"{d}:{line}": f"FP {code}" for d, line, code in reported.keys() - expected}
    differences |= {f"{d}:{line}": f"FN {code}" for d, line, code in expected - reported.keys()}
    gaps = tomllib.loads((ROOT / "eval" / "known_gaps.toml").read_text(encoding="utf-8"))
    known = {gap["where"]: gap["kind"] for gap in gaps["gap"]}
    assert differences == known
