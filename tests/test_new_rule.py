"""Adding a rule touches three places: its module, its fixtures folder, the generated docs.

``scripts/new_rule.py`` scaffolds a rule into a copy of the repository; everything else
(verify's virtual columns, ``devlint run``'s error table, the fixture and example tests)
must pick it up from those three places alone.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COPIED = ("devlint", "rules", "fixtures", "docs", "scripts", "README.md", "tests/conftest.py")
COPIED += ("tests/test_fixtures.py", "tests/test_rule.py")

# Run the copy's tests with the copy's rules and fixtures as devlint.rules / devlint.fixtures
# (the installed devlint maps them to this checkout).
BOOTSTRAP = """
import sys
from pathlib import Path

import pytest
import devlint.fixtures, devlint.rules
root = Path.cwd()
devlint.rules.__path__[:] = [str(root / "rules")]
devlint.fixtures.__path__[:] = [str(root / "fixtures")]
devlint.fixtures.__file__ = str(root / "fixtures" / "__init__.py")
import pytest
sys.exit(pytest.main(["-v", "-p", "no:xdist", "-p", "no:cacheprovider", "-o", "addopts=",
                      "tests/test_fixtures.py", "tests/test_rule.py", "-k",
                      "DEV099 or enough_fixtures or own_rule"]))
"""


def snapshot(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in root.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def place(path: str) -> str:
    """Which of a rule's places a changed file belongs to."""
    if path.startswith("rules/"):
        return "module"
    if path.startswith("fixtures/DEV099/"):
        return "fixtures"
    if path.startswith("docs/rules/") or path in ("README.md", "docs/design.md"):
        return "generated docs"
    return path


@pytest.mark.slow  # runs the scaffolded rule's tests in another pytest
def test_a_scaffolded_rule_lives_in_three_places_and_its_tests_run(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    for name in COPIED:
        source, target = ROOT / name, copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target)
    before = snapshot(copy)
    made = subprocess.run(
        [sys.executable, "scripts/new_rule.py", "DEV099", "dummy-rule", "--root", str(copy)],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    after = snapshot(copy)
    changed = {path for path in after if before.get(path) != after[path]}
    assert {place(path) for path in changed} == {"module", "fixtures", "generated docs"}
    assert "rules/dev099_dummy_rule.py" in changed
    assert "docs/rules/dummy-rule.md" in changed
    readme = (copy / "README.md").read_text(encoding="utf-8")
    assert "| DEV099 | dummy-rule | off | - |" in readme
    assert "| DEV099 | dummy-rule |" in (copy / "docs" / "design.md").read_text(encoding="utf-8")

    ran = subprocess.run(
        [sys.executable, "-c", BOOTSTRAP],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    passed = [line for line in ran.stdout.splitlines() if " PASSED" in line]
    # its 8 fixtures, 2 documented examples, the examples-need-detection check, no-fix help
    assert len([line for line in passed if "DEV099" in line]) == 12, ran.stdout
    assert any("enough_fixtures" in line for line in passed), ran.stdout
