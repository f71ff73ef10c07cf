"""The wheel: rules as ``devlint.rules``, fixtures shipped as package data."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_contents(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
        timeout=600,
    )
    [wheel] = tmp_path.glob("devlint-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for rule in (ROOT / "rules").glob("dev*.py"):
        assert f"devlint/rules/{rule.name}" in names
    for fixture in (ROOT / "fixtures").glob("DEV*/*"):
        if fixture.suffix in (".py", ".toml"):
            assert f"devlint/fixtures/{fixture.parent.name}/{fixture.name}" in names
    for module in (
        "cli",
        "engine",
        "analysis/interpreter",
        "report/sarif_format",
        "config",
        "discovery",
    ):
        assert f"devlint/{module}.py" in names
    assert "devlint/analysis/mps_coverage.json" in names  # DEV019's table
    assert not any(name.startswith(("rules/", "fixtures/", "tests/")) for name in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "devlint = devlint.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
