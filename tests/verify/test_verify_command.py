"""``devlint verify`` without running programs: torch missing, usage errors, fixture discovery."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.verify import devices
from devlint.verify.command import verify
from devlint.verify.devices import TORCH_MISSING, DeviceSet
from devlint.verify.fixture_set import (
    _copy_tree,
    fixed_source,
    live_fixer,
    load_rules,
    shipped_fixture_root,
)


def test_without_torch_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    result = CliRunner().invoke(verify, ["--device", "cpu"])
    assert result.exit_code == 2
    assert result.stderr == TORCH_MISSING + "\n"
    assert result.stdout == ""
    assert TORCH_MISSING == (
        "error: devlint verify needs PyTorch; install it with: pip install 'devlint[verify]'"
    )


def test_without_torch_in_a_fresh_interpreter() -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from devlint.verify.command import verify\n"
        "verify(['--device', 'cpu'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [TORCH_MISSING]
    assert done.stdout == ""


def test_importing_the_command_never_imports_torch() -> None:
    code = (
        "import sys\n"
        "import devlint.verify.command, devlint.verify.report, devlint.verify.bootstrap\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def no_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devices, "detect_devices", lambda: DeviceSet(cuda=False, mps=False))


def test_usage_errors_exit_2(tmp_path: Path, no_devices: None) -> None:
    runner = CliRunner()
    missing = runner.invoke(verify, ["--fixtures", str(tmp_path / "nope")])
    assert (missing.exit_code, missing.stderr) == (
        2,
        f"error: fixture folder not found: {tmp_path / 'nope'}\n",
    )
    empty = runner.invoke(verify, ["--fixtures", str(tmp_path)])
    assert empty.exit_code == 2 and "no rule fixtures in" in empty.stderr
    (tmp_path / "DEV001").mkdir()
    unknown = runner.invoke(verify, ["--fixtures", str(tmp_path), "--rule", "dev001,DEV999"])
    assert unknown.exit_code == 2
    assert unknown.stderr == f"error: no fixtures for DEV999 in {tmp_path} (there are: DEV001)\n"
    device = runner.invoke(verify, ["--device", "tpu"])
    assert device.exit_code == 2
    assert device.stderr == "error: unknown device 'tpu' (choose from cpu, cuda, mps, all)\n"


def test_a_rule_without_expect_toml_is_a_failure_not_a_crash(
    tmp_path: Path, no_devices: None
) -> None:
    (tmp_path / "DEV001").mkdir()
    (tmp_path / "DEV001" / "bad_x.py").write_text("pass\n")
    result = CliRunner().invoke(verify, ["--fixtures", str(tmp_path), "--device", "cpu"])
    assert result.exit_code == 1
    assert "DEV001  nothing run" in result.stdout
    assert "DEV001/expect.toml: missing (every program needs declared outcomes)" in result.stdout


def test_problems_with_entries(tmp_path: Path) -> None:
    folder = tmp_path / "DEV005"
    folder.mkdir()
    for name in ("bad_a.py", "bad_a.fixed.py", "good_b.py", "bad_orphan.fixed.py", "helper.py"):
        (folder / name).write_text("pass\n")
    (folder / "expect.toml").write_text(
        '["bad_a.py"]\ncpu = "ok"\n["bad_a.fixed.py"]\ncpu = "ok"\n["gone.py"]\ncpu = "ok"\n'
    )
    (rule,) = load_rules(tmp_path)
    assert [p.name for p in rule.programs] == ["bad_a.py", "good_b.py"]
    assert [p.name for p in rule.fixed] == ["bad_a.fixed.py", "bad_orphan.fixed.py"]
    assert rule.problems == [
        'DEV005/expect.toml: no entry for good_b.py (add ["good_b.py"])',
        'DEV005/expect.toml ["bad_a.fixed.py"]: fixed programs need no entry: they must run clean everywhere',
        'DEV005/expect.toml ["gone.py"]: no such program in DEV005/',
        "DEV005/bad_orphan.fixed.py: no bad_orphan.py beside it",
    ]


def test_the_shipped_fixtures_are_found() -> None:
    from contextlib import ExitStack

    with ExitStack() as stack:
        root = shipped_fixture_root(stack)
        rules = load_rules(root, ["DEV001"])
    assert rules[0].code == "DEV001"
    assert (rules[0].folder / "expect.toml").is_file()
    assert rules[0].programs


def test_fixtures_inside_a_zip_are_copied_out(tmp_path: Path) -> None:
    archive = tmp_path / "devlint.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("devlint/fixtures/__init__.py", "")
        zipped.writestr("devlint/fixtures/DEV001/bad_x.py", "print(1)\n")
        zipped.writestr("devlint/fixtures/DEV001/expect.toml", '["bad_x.py"]\ncpu = "ok"\n')
        zipped.writestr("devlint/fixtures/DEV001/__pycache__/bad_x.pyc", "junk")
    target = tmp_path / "out"
    target.mkdir()
    _copy_tree(zipfile.Path(archive, "devlint/fixtures/"), target)
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file()) == [
        "DEV001/bad_x.py",
        "DEV001/expect.toml",
        "__init__.py",
    ]
    (rule,) = load_rules(target)
    assert rule.problems == []


def test_live_fix_is_devlints_own_fix(tmp_path: Path) -> None:
    program = tmp_path / "DEV003" / "bad_x.py"
    program.parent.mkdir()
    program.write_text("import torch\nx = torch.ones(2).cuda()\n")
    assert live_fixer() is not None
    fixed = fixed_source(program)
    assert fixed is not None and ".cuda()" not in fixed
