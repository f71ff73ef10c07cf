"""Observed vs declared: the record ``devlint verify --record`` writes, and how it is read."""

from __future__ import annotations

import importlib.util
import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from devlint.verify import devices, observed, runner
from devlint.verify.command import verify
from devlint.verify.devices import DeviceSet
from devlint.verify.fixture_set import load_rule
from devlint.verify.observed import (
    CONTRADICTED,
    DECLARED,
    FORMAT,
    REAL,
    VIRTUAL,
    classify,
    load_record,
    merge,
    program_hash,
)

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(
    not HAS_TORCH and not os.environ.get("DEVLINT_REQUIRE_TORCH"),
    reason="the fixture programs need torch (pip install 'devlint[verify]')",
)

TREE = {
    "DEV001/bad_numpy.py": """
        import torch

        x = torch.ones(3)
        if torch.cuda.is_available():
            x = x.cuda()
        print(x.numpy())  # expect: DEV001
    """,
    "DEV001/good_cpu.py": "print('fine')\n",
    "DEV001/expect.toml": """
        ["bad_numpy.py"]
        cpu  = "ok"
        cuda = { raises = "TypeError", match = "can't convert cuda:0 device type tensor to numpy" }
        mps  = { skip = "not declared here" }

        ["good_cpu.py"]
        cpu  = "ok"
        cuda = "ok"
        mps  = "ok"
    """,
}
NUMPY_CUDA = 'raises TypeError matching "can\'t convert cuda:0 device type tensor to numpy"'


def write_tree(root: Path) -> Path:
    for name, text in TREE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


def column(kind: str, device: str, outcomes: dict[str, Any], torch: str = "2.13") -> dict[str, Any]:
    return {
        "device": device,
        "kind": kind,
        "machine": "m",
        "torch": torch,
        "date": "d",
        "outcomes": outcomes,
    }


def outcome(root: Path, name: str, declared: str, status: str = "pass") -> dict[str, Any]:
    return {
        "kind": "program",
        "status": status,
        "declared": declared,
        "expected": declared,
        "got": "something else" if status == "fail" else declared,
        "program": program_hash(root / "DEV001" / name),
    }


def levels(root: Path, record: dict[str, Any]) -> dict[tuple[str, str], str]:
    statuses = classify([load_rule(root / "DEV001")], record)
    return {(s.file, s.device): s.level for s in statuses}


def test_classify_real_virtual_contradicted_declared(tmp_path: Path) -> None:
    root = write_tree(tmp_path)
    record = {
        "format": FORMAT,
        "columns": {
            "cpu": column(REAL, "cpu", {"DEV001/good_cpu.py": outcome(root, "good_cpu.py", "ok")}),
            "cuda (virtual)": column(
                VIRTUAL,
                "cuda",
                {
                    "DEV001/bad_numpy.py": outcome(root, "bad_numpy.py", NUMPY_CUDA),
                    "DEV001/good_cpu.py": outcome(root, "good_cpu.py", "ok"),
                },
            ),
            "cuda": column(
                REAL, "cuda", {"DEV001/good_cpu.py": outcome(root, "good_cpu.py", "ok", "fail")}
            ),
        },
    }
    assert levels(root, record) == {
        ("bad_numpy.py", "cpu"): DECLARED,  # never run on the cpu column
        ("bad_numpy.py", "cuda"): VIRTUAL,
        ("good_cpu.py", "cpu"): REAL,
        ("good_cpu.py", "cuda"): CONTRADICTED,  # the real run outranks the virtual pass
        ("good_cpu.py", "mps"): DECLARED,
    }  # bad_numpy.py's mps skip is no expectation


def test_a_changed_program_or_declaration_is_declared_again(tmp_path: Path) -> None:
    root = write_tree(tmp_path)
    entry = outcome(root, "good_cpu.py", "ok")
    record = {
        "format": FORMAT,
        "columns": {"cpu": column(REAL, "cpu", {"DEV001/good_cpu.py": entry})},
    }
    assert levels(root, record)[("good_cpu.py", "cpu")] == REAL
    (root / "DEV001" / "good_cpu.py").write_text("print('changed')\n", encoding="utf-8")
    assert levels(root, record)[("good_cpu.py", "cpu")] == DECLARED
    entry["program"] = program_hash(root / "DEV001" / "good_cpu.py")
    entry["declared"] = 'prints "x"'  # observed under another declaration
    assert levels(root, record)[("good_cpu.py", "cpu")] == DECLARED


def test_merge_keeps_unreached_outcomes_only_on_the_same_setup() -> None:
    first = {"a": {"status": "pass"}, "b": {"status": "fail"}}
    old = {"format": FORMAT, "columns": {"cuda": column(REAL, "cuda", first)}}
    again = {"format": FORMAT, "columns": {"cuda": column(REAL, "cuda", {"b": {"status": "pass"}})}}
    merged = merge(old, again)["columns"]["cuda"]
    assert merged["outcomes"] == {"a": {"status": "pass"}, "b": {"status": "pass"}}
    assert (merged["passed"], merged["failed"]) == (2, 0)
    newer = {
        "format": FORMAT,
        "columns": {"cuda": column(REAL, "cuda", {"b": {"status": "fail"}}, torch="2.14")},
    }
    assert merge(old, newer)["columns"]["cuda"]["outcomes"] == {"b": {"status": "fail"}}
    cpu = {"format": FORMAT, "columns": {"cpu": column(REAL, "cpu", {})}}
    assert set(merge(old, cpu)["columns"]) == {"cpu", "cuda"}  # other columns stay


def test_a_missing_or_foreign_record_is_empty(tmp_path: Path) -> None:
    assert load_record(tmp_path / "none.json") == {"format": FORMAT, "columns": {}}
    (tmp_path / "old.json").write_text('{"format": 0, "columns": {"x": {}}}', encoding="utf-8")
    assert load_record(tmp_path / "old.json")["columns"] == {}


def test_the_shipped_record_is_valid_and_rule_docs_use_it() -> None:
    record = load_record()
    assert record["format"] == FORMAT
    for name, header in record["columns"].items():
        assert header["kind"] in (REAL, VIRTUAL), name
        assert {"device", "machine", "torch", "date", "outcomes"} <= set(header), name
    lines = observed.rule_lines("DEV001")
    assert lines[0] == "## Runtime outcomes (devlint verify)"
    assert "cpu:" in lines[2] and "cuda:" in lines[2]


@pytest.mark.slow  # runs every fixture program
@needs_torch
def test_record_writes_this_run_and_the_report_says_observed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(devices, "detect_devices", lambda: DeviceSet(False, False, "fake"))
    monkeypatch.setattr(runner, "PRELOAD", ("torch",))
    root = write_tree(tmp_path / "fixtures")
    target = tmp_path / "record.json"
    args = ["--fixtures", str(root), "--device", "cpu,cuda", "--json", "--record", str(target)]
    result = CliRunner().invoke(verify, args, catch_exceptions=False)
    assert result.exit_code == 0, result.stdout
    runs = json.loads(result.stdout)["runs"]  # 2 programs and the live fix of bad_numpy.py
    assert result.stderr == f"recorded {len(runs)} outcomes in {target}\n"
    columns = json.loads(target.read_text(encoding="utf-8"))["columns"]
    assert set(columns) == {"cpu", "cuda (virtual)"}
    header = columns["cpu"]
    assert (header["kind"], header["torch"], header["failed"]) == (REAL, "fake", 0)
    assert header["passed"] + columns["cuda (virtual)"]["passed"] == len(runs)
    assert header["outcomes"]["DEV001/bad_numpy.py"]["declared"] == "ok"
    report = json.loads(result.stdout)["observed"]
    assert report["counts"]["DEV001"]["cpu"][REAL] == 2
    assert report["counts"]["DEV001"]["mps"] == {
        REAL: 0,
        VIRTUAL: 0,
        CONTRADICTED: 0,
        DECLARED: 1,
    }
    assert report["counts"]["DEV001"]["cuda"][VIRTUAL] == 2
    assert any(line.startswith("cpu [real]: cpu (") for line in report["sources"])
    # static vs dynamic: the marker of bad_numpy.py, and what the virtual CUDA run showed
    agreement = json.loads(result.stdout)["agreement"]
    assert agreement["columns"] == ["cuda (virtual)"]
    row = agreement["rules"]["DEV001"]
    assert (row["bad"], row["bad_static_found"], row["good"], row["good_static_quiet"]) == (
        1,
        1,
        1,
        1,
    )
    assert row["cuda (virtual)"] == {"bad_run": 1, "bad_shown": 1, "good_run": 1, "good_clean": 1}
