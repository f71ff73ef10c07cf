"""The sdist and the wheel: built without warnings, rules as ``devlint.rules``, fixtures
shipped as package data."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # whole programs, builds or tools: CI runs them (pytest -m slow)


ROOT = Path(__file__).resolve().parent.parent
# What setuptools, distutils and Python print for a warning ("WARNING `project.license`
# ...", "warning: ...", "SetuptoolsDeprecationWarning: ...") and the "!!" frame of its
# boxed notices ("Package would be ignored").
WARNING = re.compile(r"^(?:WARNING\b|warning:|!!$)|\w+Warning\b", re.MULTILINE)


def test_sdist_and_wheel_build_without_warnings_and_ship_every_fixture(tmp_path: Path) -> None:
    """``python -m build``: the sdist, then the wheel from it, as a user's install does."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # else distutils says it skips byte-compiling
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    output = built.stdout + built.stderr
    assert built.returncode == 0, output[-4000:]
    warnings = [line for line in output.splitlines() if WARNING.search(line)]
    assert warnings == [], "\n".join(warnings)

    [wheel] = tmp_path.glob("devlint-*.whl")
    [sdist] = tmp_path.glob("devlint-*.tar.gz")
    names = set(zipfile.ZipFile(wheel).namelist())
    for rule in (ROOT / "rules").glob("dev*.py"):
        assert f"devlint/rules/{rule.name}" in names
    fixtures = [
        path
        for path in (ROOT / "fixtures").glob("DEV*/*")
        if path.is_file() and path.suffix != ".pyc"
    ]
    assert {path.name for path in fixtures} >= {"expect.toml"}
    for fixture in fixtures:  # every file of every rule's folder: programs, expect.toml
        assert f"devlint/fixtures/{fixture.parent.name}/{fixture.name}" in names, fixture
    assert "devlint/verify/observed.json" in names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    for module in (
        "cli",
        "engine",
        "analysis/interpreter",
        "launch",
        "help_text",
        "report/sarif_format",
        "config",
        "discovery",
    ):
        assert f"devlint/{module}.py" in names
    assert "devlint/analysis/mps_coverage.json" in names  # DEV019's table
    assert not any(name.startswith(("rules/", "fixtures/", "tests/")) for name in names)
    assert not any("__pycache__" in name for name in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "devlint = devlint.launch:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("/METADATA")))
    assert b"\nLicense-Expression: MIT\n" in metadata

    with tarfile.open(sdist) as archive:
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for fixture in fixtures:
        assert fixture.relative_to(ROOT).as_posix() in in_sdist, fixture
