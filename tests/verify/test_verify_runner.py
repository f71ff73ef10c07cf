"""The verify runner on small fake fixture sets, in real child processes (needs torch).

Device detection is faked (``devlint.verify.devices.detect_devices``), so the cuda and mps
paths run here too: a "cuda" or "mps" run on this machine is a CPU run with the
environment verify gives that device (what is hidden, what is patched).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.verify import devices, runner
from devlint.verify.command import verify
from devlint.verify.devices import DeviceSet
from devlint.verify.runner import VerifyOptions, run_verify

HAS_TORCH = importlib.util.find_spec("torch") is not None
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not HAS_TORCH and not os.environ.get("DEVLINT_REQUIRE_TORCH"),
        reason="the fixture programs need torch (pip install 'devlint[verify]')",
    ),
]

CPU_ONLY = DeviceSet(cuda=False, mps=False, torch_version="fake")
CUDA_AND_MPS = DeviceSet(cuda=True, mps=True, torch_version="fake")

BASIC = {
    "FAKE001/good_plain.py": """
        import sys
        import warnings

        import helper_module  # a sibling: sys.path[0] is the fixture's folder

        assert __name__ == "__main__"
        assert sys.argv == [__file__], sys.argv
        warnings.warn("an unrelated warning", DeprecationWarning)  # not the rule's own
        print("hello from", __name__, helper_module.ANSWER)
    """,
    "FAKE001/helper_module.py": "ANSWER = 42\n",
    "FAKE001/bad_value_error.py": """
        numbers = {"one": 1}
        raise ValueError(f"boom {numbers['one'] + 41}")  # expect: FAKE001
    """,
    "FAKE001/bad_value_error.fixed.py": """
        print("no boom")
    """,
    "FAKE001/bad_key_error.py": """
        from pathlib import Path

        Path("scratch.txt").write_text("the working directory is a scratch folder")
        {}["missing"]  # expect: FAKE001
    """,
    "FAKE001/bad_warns.py": """
        import warnings

        warnings.warn("slow path taken for this device", UserWarning)  # expect: FAKE001
        print("done")
    """,
    "FAKE001/good_quiet.py": """
        import warnings

        warnings.warn("a fast path", UserWarning)
        print("quiet")
    """,
    "FAKE001/good_env.py": """
        import inspect
        import os

        import torch

        cvd = os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>")
        # "patched" where verify hides MPS: the replacement keeps the original's name and
        # lru_cache shape; what it wraps is verify's answer
        unwrapped = inspect.unwrap(torch.backends.mps.is_available).__name__
        check = "real" if unwrapped == "is_available" else "patched"
        print(f"cvd={cvd} mps_check={check}")
    """,
    "FAKE001/expect.toml": """
        ["good_plain.py"]
        cpu  = { prints = "hello from __main__ 42" }
        cuda = { prints = "hello from __main__ 42" }
        mps  = { prints = "hello from __main__ 42" }

        ["bad_value_error.py"]
        cpu  = { raises = "ValueError", match = 'boom \\d+' }
        cuda = { raises = ["ArithmeticError", "ValueError"], match = "boom 42" }
        mps  = { raises = "builtins.ValueError" }

        ["bad_key_error.py"]
        cpu  = { raises = "LookupError", match = "missing" }
        cuda = { raises = "Exception" }
        mps  = { skip = "not interesting on mps" }

        ["bad_warns.py"]
        cpu  = { warns = "slow path taken", prints = "done" }
        cuda = "ok"
        reason = "only CUDA takes the fast path"

        ["good_quiet.py"]
        cpu  = "ok"
        cuda = "ok"
        mps  = "ok"

        ["good_env.py"]
        cpu  = { prints = "cvd= mps_check=(real|patched)" }
        cuda = { prints = "cvd=<unset> mps_check=patched" }
        mps  = { prints = "cvd= mps_check=real" }
        mps-virtual = { prints = "cvd= mps_check=patched", reason = "the virtual MPS patches it" }
        reason = "cpu hides CUDA (and MPS where present); cuda hides MPS; mps hides CUDA"
    """,
    # Named after a real rule, so that its virtual columns note applies.
    "DEV001/bad_numpy.py": """
        import torch

        x = torch.ones(3)
        if torch.cuda.is_available():
            x = x.cuda()
        print(x.numpy())  # expect: DEV001
    """,
    "DEV001/good_cpu_first.py": """
        import torch

        x = torch.ones(3)
        print(x.to("cpu").numpy())
    """,
    "DEV001/expect.toml": """
        ["bad_numpy.py"]
        cpu  = "ok"
        cuda = { raises = "TypeError", match = "can't convert cuda:0 device type tensor to numpy" }

        ["good_cpu_first.py"]
        cpu  = "ok"
        cuda = "ok"
    """,
}

WRONG = {
    "FAKE002/bad_wrong_type.py": """
        print("about to fail")
        raise TypeError("wrong type of thing")  # expect: FAKE002
    """,
    "FAKE002/good_exit_status.py": """
        import sys

        sys.exit(3)
    """,
    "FAKE002/good_prints_other.py": 'print("epoch 1")\n',
    "FAKE002/bad_hang.py": """
        import time

        print("hanging", flush=True)
        while True:  # expect: FAKE002
            time.sleep(0.5)
    """,
    "FAKE002/bad_missing_warning.py": 'print("no warning here")\n',
    "FAKE002/good_not_declared.py": "pass\n",
    "FAKE002/expect.toml": """
        ["bad_wrong_type.py"]
        cpu = { raises = "ValueError", match = "wrong type" }
        reason = "a deliberately wrong expectation"

        ["good_exit_status.py"]
        cpu = "ok"

        ["good_prints_other.py"]
        cpu = { prints = "epoch 2" }

        ["bad_hang.py"]
        cpu = "ok"

        ["bad_missing_warning.py"]
        cpu = { warns = "deprecated" }
    """,
}

CRASH = {
    "FAKE003/bad_abort.py": """
        import os

        print("aborting", flush=True)
        os.abort()  # expect: FAKE003
    """,
    "FAKE003/bad_hang.py": """
        import time

        while True:  # expect: FAKE003
            time.sleep(0.5)
    """,
    "FAKE003/good_fine.py": 'print("fine")\n',
    "FAKE003/expect.toml": """
        ["bad_abort.py"]
        cpu = "ok"

        ["bad_hang.py"]
        cpu = "ok"

        ["good_fine.py"]
        cpu = "ok"
    """,
    "FAKE005/good_isolated.py": """
        import sys

        print(f"torch preloaded: {'torch' in sys.modules}")
    """,
    "FAKE005/expect.toml": """
        ["good_isolated.py"]
        cpu = { prints = "torch preloaded: False" }
        isolated = true
    """,
}

# Two programs that would break each other if they shared more than the interpreter.
ISOLATION = {
    "FAKE006/good_first.py": """
        import os
        import sys

        import shared_state
        import torch

        assert sys.argv == [__file__] and __name__ == "__main__"
        shared_state.SEEN.append(__file__)
        assert shared_state.SEEN == [__file__], shared_state.SEEN
        assert "LEFT_BEHIND" not in os.environ and "left_behind" not in globals()
        assert torch.is_grad_enabled() and torch.get_default_dtype() == torch.float32
        os.environ["LEFT_BEHIND"] = "1"
        torch.set_grad_enabled(False)
        torch.set_default_dtype(torch.float64)
        open("scratch.txt", "w").close()
        left_behind = True
        print(f"files={','.join(os.listdir('.'))}")
    """,
    "FAKE006/good_second.py": """
        exec(open(__file__.replace("good_second", "good_first")).read())
    """,
    "FAKE006/shared_state.py": "SEEN = []\n",
    "FAKE006/expect.toml": """
        ["good_first.py"]
        cpu = { prints = "^files=scratch.txt$" }
        ["good_second.py"]
        cpu = { prints = "^files=scratch.txt$" }
    """,
}

FIXABLE = {
    "FAKE004/bad_fixable.py": 'raise RuntimeError("FIXME_OK")  # expect: FAKE004\n',
    "FAKE004/bad_fix_still_broken.py": 'raise RuntimeError("FIXME_BROKEN")  # expect: FAKE004\n',
    "FAKE004/bad_fixer_crashes.py": 'raise RuntimeError("FIXME_CRASH")  # expect: FAKE004\n',
    "FAKE004/bad_unfixable.py": 'raise RuntimeError("no fix")  # expect: FAKE004\n',
    "FAKE004/expect.toml": """
        ["bad_fixable.py"]
        cpu = { raises = "RuntimeError" }
        ["bad_fix_still_broken.py"]
        cpu = { raises = "RuntimeError" }
        ["bad_fixer_crashes.py"]
        cpu = { raises = "RuntimeError" }
        ["bad_unfixable.py"]
        cpu = { raises = "RuntimeError" }
    """,
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


@pytest.fixture
def found(monkeypatch: pytest.MonkeyPatch) -> list[DeviceSet]:
    """Fake device detection: set ``found[0]``."""
    box = [CPU_ONLY]
    monkeypatch.setattr(devices, "detect_devices", lambda: box[0])
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return box


@pytest.fixture
def cold(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake programs need no warm-up beyond torch itself: start processes faster."""
    monkeypatch.setattr(runner, "PRELOAD", ("torch",))


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(verify, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def runs_by_name(data: dict, column: str) -> dict[str, dict]:  # type: ignore[type-arg]
    return {f"{run['rule']}/{run['file']}": run for run in data["runs"] if run["column"] == column}


def test_a_fixture_set_that_behaves_as_declared(
    tmp_path: Path, found: list[DeviceSet], cold: None
) -> None:
    root = write_tree(tmp_path, BASIC)
    code, out, err = invoke("--fixtures", str(root), "--device", "all", "--json")
    data = json.loads(out)
    assert code == 0, out
    assert err == ""
    # 6 programs + 1 fixed; devlint has no fix for FAKE001, so its 3 live fixes are not run
    assert data["matrix"]["FAKE001"]["cpu"]["text"] == "pass 7 (3 not run)"
    assert data["matrix"]["FAKE001"]["cuda"]["status"] == "not present"
    assert data["matrix"]["FAKE001"]["mps"]["status"] == "not present"
    cpu = runs_by_name(data, "cpu")
    assert "helper_module.py" not in {run["file"] for run in data["runs"]}
    assert cpu["FAKE001/good_env.py"]["outcome"]["stdout_tail"] == "cvd= mps_check=real"
    assert cpu["FAKE001/bad_value_error.fixed.py"]["kind"] == "fixed"
    assert cpu["FAKE001/bad_key_error.py"]["outcome"]["exception"]["types"][:2] == [
        "KeyError",
        "LookupError",
    ]
    assert all(run["duration_s"] >= 0 for run in data["runs"])
    assert data["live_fix"] == "available"
    unchanged = {s["file"] for s in data["not_run"] if s["kind"] == "live-fix"}
    assert "bad_key_error.py [live fix]" in unchanged
    # The virtual columns check the declared cuda / mps expectations themselves.
    virtual = runs_by_name(data, "cuda (virtual)")
    run = virtual["DEV001/bad_numpy.py"]
    assert run["virtual"] and run["status"] == "pass"
    assert run["expected"]["match"] == "can't convert cuda:0 device type tensor to numpy"
    assert run["outcome"]["exception"]["lines"] == [6]
    assert virtual["DEV001/good_cpu_first.py"]["status"] == "pass"
    env = virtual["FAKE001/good_env.py"]["outcome"]["stdout_tail"]
    assert env == "cvd=<unset> mps_check=patched"  # CUDA present, MPS absent
    mps = runs_by_name(data, "mps (virtual)")
    assert mps["FAKE001/good_env.py"]["expected"]["prints"] == "cvd= mps_check=patched"
    assert data["matrix"]["DEV001"]["mps (virtual)"]["note"] == "no expectation for mps"
    assert data["summary"]["processes"] >= 1


def test_cuda_and_mps_paths_with_detection_faked_present(
    tmp_path: Path, found: list[DeviceSet], cold: None
) -> None:
    found[0] = CUDA_AND_MPS
    root = write_tree(tmp_path, BASIC)
    code, out, _ = invoke("--fixtures", str(root), "--rule", "FAKE001", "--json", "-j", "2")
    data = json.loads(out)
    assert code == 0, "\n".join(run["explanation"] or "" for run in data["runs"])
    assert [c["name"] for c in data["columns"]] == ["cpu", "cuda", "mps"]  # no virtual column
    stdout = {
        column: runs_by_name(data, column)["FAKE001/good_env.py"]["outcome"]["stdout_tail"]
        for column in ("cpu", "cuda", "mps")
    }
    assert stdout == {
        "cpu": "cvd= mps_check=patched",  # CUDA and MPS hidden
        "cuda": "cvd=<unset> mps_check=patched",  # MPS hidden
        "mps": "cvd= mps_check=real",  # CUDA hidden
    }
    assert data["matrix"]["FAKE001"]["mps"]["text"] == "pass 5 (5 not run)"  # 3 live fixes
    skipped = [s for s in data["not_run"] if s["column"] == "mps" and s["kind"] != "live-fix"]
    assert [(s["file"], s["reason"]) for s in skipped] == [
        ("bad_key_error.py", "not interesting on mps"),
        ("bad_warns.py", "no expectation for mps"),
    ]
    # the fixed program runs clean on every present device
    fixed = [run["column"] for run in data["runs"] if run["kind"] == "fixed"]
    assert fixed == ["cpu", "cuda", "mps"]


def test_cuda_path_with_detection_faked_absent(
    tmp_path: Path, found: list[DeviceSet], cold: None
) -> None:
    root = write_tree(tmp_path, BASIC)
    code, out, _ = invoke("--fixtures", str(root), "--device", "cuda", "--rule", "DEV001")
    assert code == 0, out
    assert "rule    cuda         cuda (virtual)" in out
    assert "DEV001  not present  virtual 2" in out
    assert "Not a real device run." in out


def test_wrong_expectations_fail_with_readable_explanations(
    tmp_path: Path, found: list[DeviceSet], cold: None
) -> None:
    root = write_tree(tmp_path, WRONG)
    code, out, _ = invoke("--fixtures", str(root), "--device", "cpu", "--timeout", "3")
    assert code == 1
    assert "FAKE002  FAIL 5/5" in out
    lines = out.splitlines()
    explanation = lines.index(
        '  FAKE002/bad_wrong_type.py on cpu: expected raises ValueError matching "wrong type", '
        "got TypeError: wrong type of thing (exit 1)"
    )
    assert lines[explanation + 1] == "    reason: a deliberately wrong expectation"
    assert lines[explanation + 2] == "    stderr:"
    assert "    | TypeError: wrong type of thing" in lines[explanation + 3 : explanation + 10]
    assert "  FAKE002/good_exit_status.py on cpu: expected ok, got exit 3" in lines
    assert (
        '  FAKE002/good_prints_other.py on cpu: expected prints "epoch 2", got ok (exit 0) '
        "whose output does not match (stdout ends: 'epoch 1')" in lines
    )
    assert "  FAKE002/bad_hang.py on cpu: expected ok, got a timeout after 3 s" in lines
    assert (
        '  FAKE002/bad_missing_warning.py on cpu: expected warns "deprecated", got ok (exit 0) '
        "without a matching warning (warnings: none)" in lines
    )
    assert (
        '  FAKE002/expect.toml: no entry for good_not_declared.py (add ["good_not_declared.py"])'
        in lines
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork isolation is Linux-only")
def test_crash_and_hang_with_forked_programs(
    tmp_path: Path, found: list[DeviceSet], cold: None
) -> None:
    root = write_tree(tmp_path, CRASH)
    code, out, _ = invoke("--fixtures", str(root), "--device", "cpu", "--timeout", "3", "--json")
    data = json.loads(out)
    assert code == 1
    cpu = runs_by_name(data, "cpu")
    assert cpu["FAKE003/bad_abort.py"]["outcome"]["crash"] == "killed by signal 6, SIGABRT"
    assert cpu["FAKE003/bad_abort.py"]["outcome"]["stdout_tail"] == "aborting"
    assert cpu["FAKE003/bad_hang.py"]["outcome"]["timed_out"]
    assert cpu["FAKE003/good_fine.py"]["status"] == "pass"
    assert cpu["FAKE005/good_isolated.py"]["status"] == "pass"
    assert cpu["FAKE005/good_isolated.py"]["process"] == "solo"
    assert data["summary"]["fallback"] == 0  # the batch survived its crashing program


def test_a_crashed_or_hung_batch_falls_back_to_one_process_per_program(
    tmp_path: Path, found: list[DeviceSet], cold: None
) -> None:
    root = write_tree(tmp_path, CRASH)
    options = VerifyOptions(
        ["cpu"], rules=["FAKE003"], fixtures=root, jobs=1, timeout=3, isolation="inline"
    )
    report = run_verify(options)
    results = {result.run.name: result for result in report.results}
    abort = results["bad_abort.py"]
    assert abort.outcome.crash is not None and "SIGABRT" in abort.outcome.crash
    assert abort.process == "fallback"
    assert results["bad_hang.py"].outcome.timed_out
    assert results["good_fine.py"].passed
    assert report.stats.batches == 1 and report.stats.fallback >= 2
    assert report.exit_code == 1


@pytest.mark.parametrize("isolation", ["inline", "fork"])
def test_programs_sharing_a_process_are_isolated(
    tmp_path: Path, found: list[DeviceSet], cold: None, isolation: str
) -> None:
    if isolation == "fork" and not sys.platform.startswith("linux"):
        pytest.skip("fork isolation is Linux-only")
    root = write_tree(tmp_path, ISOLATION)
    options = VerifyOptions(["cpu"], fixtures=root, jobs=1, isolation=isolation)
    report = run_verify(options)
    assert report.exit_code == 0, [(r.mismatch, r.outcome.stderr) for r in report.results]
    assert [result.process for result in report.results] == ["batch", "batch"]
    assert report.stats.processes == 1


def test_live_fix_hook(
    tmp_path: Path, found: list[DeviceSet], cold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fix_source(source: str, path: Path) -> str:
        if "FIXME_CRASH" in source:
            raise ValueError("the fixer broke")
        if "FIXME_BROKEN" in source:
            return "import sys\nsys.exit(4)\n"
        return source.replace('raise RuntimeError("FIXME_OK")', 'print("fixed")')

    monkeypatch.setattr("devlint.verify.plan.live_fixer", lambda: fix_source)
    root = write_tree(tmp_path, FIXABLE)
    code, out, _ = invoke("--fixtures", str(root), "--device", "cpu", "--json")
    data = json.loads(out)
    assert code == 1
    assert data["live_fix"] == "available"
    live = {run["file"]: run for run in data["runs"] if run["kind"] == "live-fix"}
    assert live["bad_fixable.py [live fix]"]["status"] == "pass"
    assert live["bad_fix_still_broken.py [live fix]"]["explanation"].startswith(
        "FAKE004/bad_fix_still_broken.py [live fix] on cpu: expected ok, got exit 4"
    )
    assert [p["message"] for p in data["problems"]] == [
        "FAKE004/bad_fixer_crashes.py: devlint --fix failed: ValueError: the fixer broke"
    ]
    unchanged = [s for s in data["not_run"] if s["kind"] == "live-fix"]
    assert [(s["file"], s["reason"]) for s in unchanged] == [
        ("bad_unfixable.py [live fix]", "devlint --fix changes nothing")
    ]


def test_the_shipped_fixtures_run_on_the_virtual_devices(found: list[DeviceSet]) -> None:
    """DEV001 (numpy) and DEV002 (batch not moved): every declared cuda and mps outcome."""
    code, out, _ = invoke("--device", "cuda,mps", "--rule", "DEV001,DEV002", "--json")
    data = json.loads(out)
    assert code == 0, "\n".join(run["explanation"] or "" for run in data["runs"])
    for rule in ("DEV001", "DEV002"):
        for device in ("cuda", "mps"):
            assert data["matrix"][rule][f"{device} (virtual)"]["status"] == "virtual"
            assert data["matrix"][rule][device]["status"] == "not present"
    assert all(run["virtual"] for run in data["runs"])
    failures = {
        run["outcome"]["exception"]["types"][0]
        for run in data["runs"]
        if run["outcome"]["exception"]
    }
    assert failures == {"TypeError", "RuntimeError"}  # numpy refused; devices mixed


STRAYS = {
    "FAKE007/good_leaves_a_child.py": """
        import subprocess
        import sys

        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        print(f"child={child.pid}")
    """,
    "FAKE007/expect.toml": """
        ["good_leaves_a_child.py"]
        cpu = { prints = "child=" }
    """,
}


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("isolation", ["inline", "fork"])
def test_subprocesses_a_program_leaves_behind_are_ended(
    tmp_path: Path, found: list[DeviceSet], cold: None, isolation: str
) -> None:
    import time

    root = write_tree(tmp_path, STRAYS)
    report = run_verify(VerifyOptions(["cpu"], fixtures=root, jobs=1, isolation=isolation))
    (result,) = report.results
    assert result.passed, result.mismatch
    pid = int(result.outcome.stdout.strip().split("=")[1])
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid)
