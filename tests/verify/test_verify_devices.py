"""Device detection faked either way: columns, how a child sees each device, batching (no torch)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from devlint.verify.devices import (
    Column,
    DeviceSet,
    child_setup,
    columns_for,
    parse_device_option,
)
from devlint.verify.expectations import OK, Expectation, Outcome
from devlint.verify.fixture_set import RuleFixtures
from devlint.verify.plan import Plan, Run, Skipped
from devlint.verify.report import build_matrix, explain, render_rich, render_text, to_json
from devlint.verify.runner import ExecutionStats, RunResult, VerifyReport, make_batches

CPU_ONLY = DeviceSet(cuda=False, mps=False, torch_version="2.13.0+cpu")
CUDA_BOX = DeviceSet(cuda=True, mps=False, torch_version="2.13.0+cu130", cuda_name="NVIDIA H100")
MAC = DeviceSet(cuda=False, mps=True, torch_version="2.13.0")


def test_device_option() -> None:
    assert parse_device_option(("all",)) == ["cpu", "cuda", "mps"]
    assert parse_device_option(("mps", "cpu")) == ["cpu", "mps"]
    assert parse_device_option(("cuda,CPU",)) == ["cpu", "cuda"]
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        parse_device_option(("tpu",))


def test_absent_accelerators_get_virtual_columns_never_real_runs() -> None:
    columns = columns_for(["cpu", "cuda", "mps"], CPU_ONLY)
    assert [(c.name, c.present, c.virtual) for c in columns] == [
        ("cpu", True, False),
        ("cuda", False, False),
        ("mps", False, False),
        ("cuda (virtual)", False, True),
        ("mps (virtual)", False, True),
    ]
    assert columns_for(["cpu"], CPU_ONLY) == [Column("cpu", "cpu", True)]


def test_with_cuda_present_there_is_no_virtual_cuda_column() -> None:
    columns = columns_for(["cpu", "cuda", "mps"], CUDA_BOX)
    assert [(c.name, c.present) for c in columns] == [
        ("cpu", True),
        ("cuda", True),
        ("mps", False),
        ("mps (virtual)", False),
    ]


def test_mps_present() -> None:
    columns = columns_for(["cpu", "cuda", "mps"], MAC)
    assert [(c.name, c.present) for c in columns] == [
        ("cpu", True),
        ("cuda", False),
        ("mps", True),
        ("cuda (virtual)", False),
    ]


def test_cpu_on_a_cuda_machine_hides_cuda_and_the_cuda_column_does_not() -> None:
    cpu, cuda, _, _ = columns_for(["cpu", "cuda", "mps"], CUDA_BOX)
    assert child_setup(cpu, CUDA_BOX).env == {"CUDA_VISIBLE_DEVICES": ""}
    assert child_setup(cuda, CUDA_BOX).env == {}
    assert not child_setup(cuda, CUDA_BOX).hide_mps
    assert child_setup(cuda, CUDA_BOX).virtual is None


def test_on_a_mac_cpu_hides_mps_and_mps_hides_cuda() -> None:
    cpu, _, mps, virtual = columns_for(["cpu", "cuda", "mps"], MAC)
    assert child_setup(cpu, MAC).hide_mps
    assert not child_setup(mps, MAC).hide_mps
    assert child_setup(mps, MAC).env == {"CUDA_VISIBLE_DEVICES": ""}
    setup = child_setup(virtual, MAC)
    assert (setup.hide_mps, setup.virtual, setup.env) == (True, "virtual-cuda", {})


def test_on_a_cpu_only_machine_nothing_needs_patching() -> None:
    cpu = columns_for(["cpu"], CPU_ONLY)[0]
    assert child_setup(cpu, CPU_ONLY).hide_mps is False


def make_run(number: int, column: Column, *, fresh: bool = False, isolated: bool = False) -> Run:
    path = Path(f"/nonexistent/good_{number}.py")
    return Run(
        f"r{number}", "FAKE001", path.name, "program", column, path, path.parent, OK,
        isolated=isolated, fresh=fresh,
    )  # fmt: skip


CPU = Column("cpu", "cpu", True)
VIRTUAL = Column("cuda (virtual)", "cuda", False, virtual=True)


def test_forked_batches_one_per_job_per_column() -> None:
    runs = [make_run(i, CPU, fresh=i < 5) for i in range(40)] + [make_run(50, VIRTUAL)]
    batches = make_batches(runs, jobs=4, isolation="fork")
    sizes = sorted((len(batch), batch[0].column.name) for batch in batches)
    assert sizes == [(1, "cuda (virtual)"), (10, "cpu"), (10, "cpu"), (10, "cpu"), (10, "cpu")]


def test_inline_batches_put_warning_checks_first_and_virtual_alone() -> None:
    runs = [make_run(i, CPU, fresh=i < 6) for i in range(40)]
    runs += [make_run(50, VIRTUAL), make_run(51, CPU, isolated=True)]
    batches = make_batches(runs, jobs=2, isolation="inline", max_batch=16)
    shared = [batch for batch in batches if len(batch) > 1]
    assert len(shared) == 6  # one per warnings-sensitive run
    assert all(batch[0].fresh and not any(run.fresh for run in batch[1:]) for batch in shared)
    alone = sorted(batch[0].id for batch in batches if len(batch) == 1)
    assert alone == ["r50", "r51"]
    assert sorted(run.id for batch in batches for run in batch) == sorted(run.id for run in runs)


def test_inline_batches_are_capped() -> None:
    runs = [make_run(i, CPU) for i in range(40)]
    batches = make_batches(runs, jobs=1, isolation="inline", max_batch=16)
    assert sorted(len(batch) for batch in batches) == [13, 13, 14]


# --- the report, from synthetic results ----------------------------------------------------


def synthetic_report(found: DeviceSet) -> VerifyReport:
    columns = columns_for(["cpu", "cuda", "mps"], found)
    rules = [RuleFixtures("DEV001", Path("/f/DEV001")), RuleFixtures("DEV003", Path("/f/DEV003"))]
    plan = Plan(rules, columns)
    cpu = columns[0]
    passed = make_run(1, cpu)
    failing = Run(
        "r2", "DEV001", "bad_x.py", "program", cpu, Path("/f/DEV001/bad_x.py"), Path("/f/DEV001"),
        Expectation(("TypeError",), "can't convert", reason="the tensor is on the GPU"),
    )  # fmt: skip
    passed = Run(**{**{f: getattr(passed, f) for f in Run.__dataclass_fields__}, "rule": "DEV001"})
    results = [
        RunResult(passed, Outcome(0), None, "batch"),
        RunResult(
            failing,
            Outcome(0, stderr="line one\nline two\n"),
            "ok (exit 0)",
            "batch",
        ),
    ]
    for column in columns:
        if column.virtual:
            plan.skipped.append(
                Skipped("DEV003", "bad_y.py", "program", column, "not reproduced: why")
            )
    if found.cuda:
        plan.skipped.append(
            Skipped("DEV003", "bad_y.py", "program", columns[1], "no expectation for cuda")
        )
    return VerifyReport(found, Path("/f"), plan, results, ExecutionStats(batches=1, seconds=1.25))


def test_a_wrong_expectation_is_explained_readably() -> None:
    report = synthetic_report(CPU_ONLY)
    assert report.exit_code == 1
    assert explain(report.failures[0]) == [
        'DEV001/bad_x.py on cpu: expected raises TypeError matching "can\'t convert", got ok (exit 0)',
        "  reason: the tensor is on the GPU",
        "  stderr:",
        "  | line one",
        "  | line two",
    ]


def test_matrix_cells() -> None:
    matrix = build_matrix(synthetic_report(CPU_ONLY))
    assert {name: cell.text for name, cell in matrix["DEV001"].items()} == {
        "cpu": "FAIL 1/2",
        "cuda": "not present",
        "mps": "not present",
        "cuda (virtual)": "nothing run",
        "mps (virtual)": "nothing run",
    }
    assert matrix["DEV003"]["cuda (virtual)"].note == "not reproduced: why"
    cuda_matrix = build_matrix(synthetic_report(CUDA_BOX))
    assert cuda_matrix["DEV003"]["cuda"].text == "nothing run"
    assert cuda_matrix["DEV003"]["cuda"].note == "no expectation for cuda"


def test_plain_text_is_aligned() -> None:
    out = io.StringIO()
    render_text(synthetic_report(CPU_ONLY), out)
    text = out.getvalue()
    assert "rule    cpu          cuda         mps          cuda (virtual)  mps (virtual)\n" in text
    assert "DEV001  FAIL 1/2     not present  not present  nothing run     nothing run\n" in text
    assert "DEV003  nothing run  not present  not present  nothing run     nothing run\n" in text
    assert "DEV003 on cuda (virtual): not reproduced: why" in text
    assert "cuda (virtual) and mps (virtual): the device is absent here" in text
    assert "Mismatches (1):" in text
    assert (
        "2 runs: 1 passed, 1 failed, 2 not run; 1 processes (1 batches, 0 solo, 0 fallback)" in text
    )
    assert "live fix: not available" in text


def test_rich_table() -> None:
    out = io.StringIO()
    render_rich(synthetic_report(CUDA_BOX), out)
    text = out.getvalue()
    assert "NVIDIA H100" in text
    assert "DEV001" in text and "FAIL 1/2" in text
    assert "cuda (virtual)" not in text.split("Observed vs declared")[0]  # the table's part


def test_json_has_the_matrix_runs_and_durations() -> None:
    data = to_json(synthetic_report(CPU_ONLY))
    assert data["matrix"]["DEV001"]["cpu"]["status"] == "fail"
    assert data["matrix"]["DEV001"]["cuda (virtual)"]["status"] == "not run"
    assert [run["status"] for run in data["runs"]] == ["pass", "fail"]
    assert data["runs"][1]["explanation"].startswith("DEV001/bad_x.py on cpu: expected raises")
    assert "duration_s" in data["runs"][0] and data["summary"]["seconds"] == 1.25
    assert data["exit_code"] == 1
    assert set(data["virtual"]) == {"DEV001", "DEV003"}
    assert data["virtual"]["DEV001"]["failure_at_flagged_line"] is True
