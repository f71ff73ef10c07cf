"""``devlint run --device cuda|mps script.py``: the verdicts, on shipped fixtures (needs torch)."""

from __future__ import annotations

import importlib.util
import os
import runpy
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.verify.run_script import run

HAS_TORCH = importlib.util.find_spec("torch") is not None
pytestmark = pytest.mark.skipif(
    not HAS_TORCH and not os.environ.get("DEVLINT_REQUIRE_TORCH"),
    reason="devlint run needs torch (pip install 'devlint[verify]')",
)
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(run, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("device", "program", "rule", "message"),
    [
        ("cuda", "DEV001/bad_predict_argmax_numpy.py", "DEV001", "can't convert cuda:0"),
        ("mps", "DEV002/bad_regression_arith.py", "DEV002", "Expected all tensors"),
        ("cuda", "DEV013/bad_contrastive_mask_and_targets.py", "DEV013", "mask on cpu"),
    ],
)
def test_a_bad_fixture_stops_at_its_bug_with_its_rule(
    device: str, program: str, rule: str, message: str
) -> None:
    path = FIXTURES / program
    code, out, _ = invoke("--device", device, str(path))
    assert code == 1, out
    first, second = out.splitlines()[:2]
    assert first.startswith(f"{path}:") and f"device bug on virtual {device}" in first
    assert message in first
    assert second.startswith(f"  rule: {rule} (")
    # DEV001/DEV002 report the failing line; DEV013 reports its cause, the factory above it
    found = "found it too:" if rule != "DEV013" else "reports its rule elsewhere in the file"
    assert f"  static analysis {found}" in out and f": {rule} " in out.split("static analysis")[1]


def test_a_good_fixture_runs_to_the_end_and_steps_are_counted() -> None:
    path = FIXTURES / "DEV001" / "good_item_tolist.py"
    code, out, _ = invoke("--device", "cuda", str(path))
    assert code == 0, out
    assert out.splitlines()[-1].startswith(f"{path}: ran to the end on virtual cuda in ")
    assert "6 optimizer steps" in out
    code, out, _ = invoke("--device", "cuda", "--max-steps", "2", str(path))
    assert (code, out.splitlines()[-1].split(" (")[0]) == (
        0,
        f"{path}: stopped after 2 optimizer steps on virtual cuda: no device bug so far",
    )


def test_an_unrelated_failure_is_one_line(tmp_path: Path) -> None:
    script = tmp_path / "broken.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            import torch

            x = torch.ones(2).cuda()
            print(sys.argv[1:], x.device)
            {}["missing"]
            """
        ),
        encoding="utf-8",
    )
    code, out, err = invoke("--device", "cuda", str(script), "--flag", "value")
    assert code == 2
    assert out == "['--flag', 'value'] cuda:0\n"
    assert err == (
        f"error: {script}:7: KeyError: 'missing' (not a device bug; it failed for another "
        "reason on virtual cuda)\n"
    )


CHOOSER = """
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
parser.add_argument("--max-steps", type=int, default=1)
options = parser.parse_args()
x = torch.ones(3).to(options.device)
print("device", x.device, "steps", options.max_steps)
"""


def run_main(*args: str) -> tuple[int, str, str]:
    """Through ``devlint``'s own group, as a user types it."""
    from devlint.cli import main

    result = CliRunner().invoke(main, ["run", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_options_after_the_script_are_the_scripts(tmp_path: Path) -> None:
    script = tmp_path / "main.py"
    script.write_text(CHOOSER, encoding="utf-8")
    code, out, _ = run_main("--device", "cuda", str(script), "--max-steps", "3", "--device", "cpu")
    assert code == 0, out
    assert out.splitlines()[0] == "device cpu steps 3"  # like python main.py --max-steps 3 …
    code, out, _ = run_main("--device", "cuda", str(script), "--max-steps", "3")
    assert out.splitlines()[0] == "device cuda:0 steps 3" and "note:" not in out
    code, out, _ = run_main("--device", "cuda", str(script), "--help")
    assert code == 0 and out.startswith("usage: main.py [-h] [--device DEVICE]")


def test_the_note_on_cpu_only_runs_is_for_a_device_choice_that_missed(tmp_path: Path) -> None:
    """The note is for a script that asked which accelerator there is, ran, and placed
    nothing on the one offered (DEV004 / DEV016); not for early exits or scripts that never
    choose a device."""
    script = tmp_path / "main.py"
    script.write_text(CHOOSER, encoding="utf-8")
    code, out, _ = run_main("--device", "mps", str(script))
    assert (code, out.splitlines()[0]) == (0, "device cpu steps 1")
    assert "  note: nothing was placed on mps: the script asked which device" in out
    for exit_early in ("--help", "--max-steps=x"):
        code, out, _ = run_main("--device", "mps", str(script), exit_early)
        assert "note:" not in out, out
    assert code == 2 and f"{script}: exited with status 2 on virtual mps (" in out
    plain = tmp_path / "plain.py"
    plain.write_text("import torch\nprint(torch.ones(2).sum().item())\n", encoding="utf-8")
    code, out, _ = run_main("--device", "cuda", str(plain))
    assert code == 0 and "note:" not in out, out
    stops = tmp_path / "stops.py"
    stops.write_text("import sys\nimport torch\n\nsys.exit(0)\n", encoding="utf-8")
    code, out, _ = run_main("--device", "cuda", str(stops))
    assert (code, out) == (
        0,
        f"{stops}: exited on virtual cuda before any tensor operation "
        "(0 optimizer steps, 0 host syncs)\n",
    )


def test_a_failure_is_blamed_on_the_innermost_user_frame(tmp_path: Path) -> None:
    """Never on devlint's own frames (the virtual device raises PyTorch's errors from them),
    also where the script's folder holds devlint; a helper module outside the script's folder
    is the user's code too."""
    import devlint
    from devlint.verify.run_script import classify
    from devlint.verify.virtual import VirtualDevice

    helpers = tmp_path / "lib"
    helpers.mkdir()
    (helpers / "placement.py").write_text("def place(x):\n    return x.cuda()\n", encoding="utf-8")
    app = tmp_path / "app"
    app.mkdir()
    script = app / "main.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(helpers)!r})\n"
        "import torch\n"
        "from placement import place\n"
        "\n"
        "place(torch.ones(2))\n",
        encoding="utf-8",
    )
    code, out, _ = invoke("--device", "mps", str(script))
    assert code == 1
    assert out.splitlines()[0].startswith(
        f"{helpers / 'placement.py'}:2: device bug on virtual mps"
    )
    # a script whose folder holds devlint (a checkout): still the user's frame
    with VirtualDevice("mps"):
        try:
            runpy.run_path(str(script), run_name="__main__")
        except AssertionError as error:
            raised = error
    beside_devlint = Path(devlint.__file__).resolve().parents[1] / "main.py"
    bug = classify(raised, beside_devlint)
    assert bug is not None and (bug.path, bug.line) == (str(helpers / "placement.py"), 2)
