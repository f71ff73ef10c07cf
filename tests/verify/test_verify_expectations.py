"""expect.toml parsing, checking an outcome against it, and the virtual columns' expectations."""

from __future__ import annotations

import pytest

from devlint.verify.expectations import (
    OK,
    Expectation,
    FileExpectations,
    Outcome,
    RaisedException,
    Skip,
    mismatch,
    parse_expect_toml,
)
from devlint.verify.virtual_columns import virtual_expectation, virtuals

NUMPY_CUDA = "can't convert cuda:0 device type tensor to numpy"
MIXED_CUDA = "Expected all tensors to be on the same device"


def raised(*names: str, message: str = "", lines: tuple[int, ...] = ()) -> Outcome:
    return Outcome(1, RaisedException(names, tuple(f"builtins.{n}" for n in names), message, lines))


def test_parse_the_readme_example() -> None:
    parsed = parse_expect_toml(
        """
["bad_numpy_after_move.py"]
cpu  = "ok"
cuda = { raises = "TypeError", match = "can't convert cuda:0 device type tensor to numpy" }
mps  = { raises = ["TypeError", "RuntimeError"], match = "mps:0" }
reason = "because"

["bad_pin_memory.py"]
cpu = { warns = "pin_memory.*no accelerator is found" }
mps = { skip = "not certain on MPS" }
cuda-virtual = { raises = "TypeError", match = "cuda", reason = "own reason" }
isolated = true
"""
    )
    assert parsed.problems == []
    entry = parsed.entries["bad_numpy_after_move.py"]
    assert entry.devices["cpu"] == Expectation(reason="because")
    assert entry.devices["cuda"] == Expectation(("TypeError",), NUMPY_CUDA, reason="because")
    assert entry.devices["mps"] == Expectation(
        ("TypeError", "RuntimeError"), "mps:0", reason="because"
    )
    pin = parsed.entries["bad_pin_memory.py"]
    assert pin.isolated
    assert pin.devices["mps"] == Skip("not certain on MPS")
    assert pin.devices["cuda-virtual"] == Expectation(("TypeError",), "cuda", reason="own reason")
    assert pin.devices["cpu"].describe() == 'warns "pin_memory.*no accelerator is found"'  # type: ignore[union-attr]


def test_bad_entries_are_problems_and_the_rest_stays() -> None:
    parsed = parse_expect_toml(
        """
["good.py"]
cpu = "ok"

["typo.py"]
cpu = "ok"
cdua = "ok"

["match_alone.py"]
cpu = { match = "x" }

["bad_regex.py"]
cpu = { raises = "RuntimeError", match = "(" }

["empty_table.py"]
cpu = { reason = "nothing declared" }

["not_a_table.py"]
cpu = 3
""",
        "FAKE/expect.toml",
    )
    assert list(parsed.entries) == ["good.py"]
    problems = "\n".join(parsed.problems)
    assert """FAKE/expect.toml ["typo.py"]: unknown key 'cdua'""" in problems
    assert "match needs raises" in problems
    assert "match is not a valid regular expression" in problems
    assert "a table needs raises, warns or prints" in problems
    assert 'expected "ok" or a table, got 3' in problems


def test_invalid_toml_is_one_problem() -> None:
    parsed = parse_expect_toml('["x.py"\ncpu = "ok"', "DEV009/expect.toml")
    assert parsed.entries == {}
    assert parsed.problems[0].startswith("DEV009/expect.toml: not valid TOML")


def test_ok_means_exit_zero_without_exception() -> None:
    assert mismatch(OK, Outcome(0)) is None
    assert mismatch(OK, Outcome(3)) == "exit 3"
    assert (
        mismatch(OK, raised("TypeError", "Exception", message="bad\nmore"))
        == "TypeError: bad (exit 1)"
    )
    assert mismatch(OK, Outcome(None, timed_out=True, duration=60)) == "a timeout after 60 s"
    crash = Outcome(-6, crash="killed by signal 6, SIGABRT")
    assert mismatch(OK, crash) == "a crash (killed by signal 6, SIGABRT)"


def test_raises_matches_any_class_of_the_mro_and_the_message() -> None:
    expected = Expectation(("LookupError",), r"missing \d")
    assert (
        mismatch(expected, raised("KeyError", "LookupError", "Exception", message="missing 1"))
        is None
    )
    assert mismatch(expected, raised("KeyError", "LookupError", message="present")) == (
        "KeyError: present (exit 1), whose message does not match"
    )
    assert (
        mismatch(expected, raised("TypeError", message="missing 1"))
        == "TypeError: missing 1 (exit 1)"
    )
    assert mismatch(expected, Outcome(0)) == "ok (exit 0)"
    qualified = Expectation(("builtins.KeyError",))
    assert mismatch(qualified, raised("KeyError", message="x")) is None


def test_raises_at_a_flagged_line() -> None:
    expected = Expectation(("TypeError",))
    at_line_8 = raised("TypeError", message="x", lines=(3, 8))
    assert mismatch(expected, at_line_8, flagged_lines=frozenset({8})) is None
    assert mismatch(expected, at_line_8, flagged_lines=frozenset({5})) == (
        "TypeError: x (exit 1) at line 8, not at a line marked `# expect:`"
    )


def test_warns_and_prints_need_a_clean_exit() -> None:
    warns = Expectation(warns="pin_memory")
    warned = Outcome(0, warnings=("UserWarning: 'pin_memory' is set",))
    assert mismatch(warns, warned) is None
    assert mismatch(warns, Outcome(0, stderr="Warning: pin_memory on stderr")) is None
    assert mismatch(warns, Outcome(0, warnings=("UserWarning: other",))) == (
        "ok (exit 0) without a matching warning (warnings: UserWarning: other)"
    )
    assert mismatch(warns, Outcome(1, warnings=warned.warnings)) == "exit 1"
    prints = Expectation(prints="device: cpu")
    assert mismatch(prints, Outcome(0, stdout="x\ndevice: cpu\n")) is None
    assert mismatch(prints, Outcome(0, stdout="device: mps\n")) == (
        "ok (exit 0) whose output does not match (stdout ends: 'device: mps')"
    )


def test_clean_runs_must_not_emit_the_rules_own_warning() -> None:
    outcome = Outcome(0, warnings=("UserWarning: 'pin_memory' argument is set as true",))
    got = mismatch(OK, outcome, forbidden_warnings=("pin_memory.*set as true",))
    assert (
        got
        == "ok (exit 0), but it warned \"pin_memory' argument is set as true\" (the rule's own warning)"
    )
    assert mismatch(OK, Outcome(0), forbidden_warnings=("pin_memory",)) is None


def entry(**devices: Expectation | Skip) -> FileExpectations:
    return FileExpectations(
        "bad_x.py", {key.replace("_", "-"): value for key, value in devices.items()}
    )


def test_a_virtual_column_checks_the_declared_expectation_itself() -> None:
    numpy = Expectation(("TypeError",), NUMPY_CUDA, reason="r")
    assert virtual_expectation("DEV001", entry(cpu=OK, cuda=numpy), "cuda") == (
        numpy,
        "virtual-cuda",
    )
    assert virtual_expectation("DEV001", entry(mps=OK), "mps") == (OK, "virtual-mps")
    undeclared, mechanism = virtual_expectation("DEV001", entry(cpu=OK), "mps")
    assert (undeclared, mechanism) == (Skip("no expectation for mps"), None)
    skipped, _ = virtual_expectation("DEV001", entry(mps=Skip("unsure")), "mps")
    assert skipped == Skip("skipped on mps: unsure")


def test_an_explicit_virtual_entry_wins() -> None:
    own = Expectation(("RuntimeError",), "cuda")
    derived = virtual_expectation("DEV003", entry(cuda=OK, cuda_virtual=own), "cuda")
    assert derived == (own, "virtual-cuda")
    skip = Skip("needs triton")
    assert virtual_expectation("DEV011", entry(cuda=OK, cuda_virtual=skip), "cuda") == (skip, None)


def test_every_virtual_entry_explains_itself() -> None:
    for code, virtual in virtuals().items():
        assert virtual.note, code


# What torch raises where CUDA is absent, as measured (exception class and its bases, most
# derived first; message): CPU builds (2.13.0+cpu, and macOS builds), CUDA builds on a machine
# without a GPU or driver (2.1.0+cu121, 2.14.1+cu130) and a GPU machine with CUDA hidden
# (CUDA_VISIBLE_DEVICES="", as verify's cpu column runs it).
NO_CUDA_HERE = (
    (("AssertionError",), "Torch not compiled with CUDA enabled"),  # CPU build: .cuda()
    (("RuntimeError",), "torch.cuda.Stream requires CUDA support"),  # CPU build
    (("RuntimeError",), "PyTorch was compiled without CUDA support"),  # torch.cuda.device(0)
    (("RuntimeError",), "Tried to instantiate dummy base class Event"),  # torch.cuda.Event()
    (("RuntimeError",), "Cannot access accelerator device when none is available."),  # .to(0)
    (
        ("RuntimeError",),  # CUDA build, no driver: the first torch.cuda call (2.1 and 2.14)
        "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
        "installed a driver from http://www.nvidia.com/Download/index.aspx",
    ),
    (
        ("AcceleratorError", "RuntimeError"),  # CUDA build, no driver: torch.cuda.Stream()
        "CUDA error: CUDA driver version is insufficient for CUDA runtime version",
    ),
    (
        ("RuntimeError",),
        "The NVIDIA driver on your system is too old (found version 11040). Please update "
        "your GPU driver by downloading and installing a new version from the URL: "
        "http://www.nvidia.com/Download/index.aspx",
    ),
    (("RuntimeError",), "CUDA driver initialization failed, you might not have a CUDA gpu."),
    (("RuntimeError",), "No CUDA GPUs are available"),  # a GPU machine, CUDA hidden
    (("RuntimeError",), "CUDA error: no CUDA-capable device is detected"),  # ditto: a stream
)


def test_a_cpu_expectation_of_absent_cuda_holds_on_every_build() -> None:
    """An entry that expects CUDA's absence on the CPU accepts every way torch says so with
    an exception type it declares: whatever build (CPU, or CUDA without a GPU) runs it."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "fixtures"
    checked, wrong = 0, []
    for path in sorted(root.glob("*/expect.toml")):
        for name, entry in parse_expect_toml(path.read_text(encoding="utf-8")).entries.items():
            expected = entry.devices.get("cpu")
            if not isinstance(expected, Expectation) or not expected.raises or not expected.match:
                continue
            outcomes = [
                Outcome(1, RaisedException(names, (), message))
                for names, message in NO_CUDA_HERE
                if set(names) & set(expected.raises)
            ]
            if all(mismatch(expected, outcome) for outcome in outcomes):
                continue  # not about CUDA's absence
            checked += 1
            wrong += [
                f"{path.parent.name}/{name}: {outcome.exception.message[:60]}"
                for outcome in outcomes
                if outcome.exception is not None and mismatch(expected, outcome)
            ]
    assert checked >= 20 and wrong == []


def test_what_runs_know_of_a_rule_lives_in_its_class() -> None:
    """The virtual columns and ``devlint run`` read the rules' own attributes."""
    from devlint.verify.run_script import device_bugs

    assert virtuals()["DEV001"].at_flagged_line and not virtuals()["DEV003"].at_flagged_line
    named = dict(device_bugs())
    mixing = next(rules for pattern, rules in named.items() if "same device" in pattern)
    assert mixing == ("DEV006", "DEV002", "DEV013", "DEV014", "DEV008")
    numpy = next(rules for pattern, rules in named.items() if "numpy" in pattern)
    assert numpy == ("DEV001", "DEV008")


def test_an_outcome_declared_from_a_torch_release_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """``mps = { torch = "2.12" }``: ok from 2.12 on; with an older torch, skipped, saying why."""
    from devlint.verify import expectations

    text = '["a.py"]\nmps = { torch = "2.12" }\ncuda = { torch = "2.12", raises = "E" }\n'
    monkeypatch.setattr(expectations, "installed_torch", lambda: (2, 13))
    entry = expectations.parse_expect_toml(text).entries["a.py"]
    assert entry.devices["mps"] == expectations.Expectation()
    assert isinstance(entry.devices["cuda"], expectations.Expectation)
    assert entry.devices["cuda"].raises == ("E",)
    monkeypatch.setattr(expectations, "installed_torch", lambda: (2, 9))
    entry = expectations.parse_expect_toml(text).entries["a.py"]
    assert isinstance(entry.devices["mps"], expectations.Skip)
    assert entry.devices["mps"].reason == "declared for torch 2.12 and newer (installed: 2.9)"
    bad = expectations.parse_expect_toml('["a.py"]\nmps = { torch = "new" }\n')
    assert bad.problems and "torch must be a release" in bad.problems[0]
