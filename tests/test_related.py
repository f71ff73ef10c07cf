"""Every diagnostic carries its proof: the chain of facts behind it (``Diagnostic.related``),
from the rules through every output format, the language server and ``devlint explain``."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pytest
from conftest import run_devlint

from devlint.api import lint_path, lint_text
from devlint.diagnostics import Diagnostic
from devlint.engine import CheckOptions
from devlint.report import ReportOptions, render
from devlint.rule import all_rules
from devlint.testing import fixture_options

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SCHEMA_PATH = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"
ALL = CheckOptions(frozenset(all_rules()))
DEVICE = "device chosen here"
MOVED = "moved to the device here"
COMPUTED = "computed by the model here"
MADE_ON_CPU = "tensor created on the CPU here (no `device=`)"
SOURCE = (
    "import torch\n"
    'device = "cuda" if torch.cuda.is_available() else "cpu"\n'
    "model = torch.nn.Linear(4, 2).to(device)\n"
    "out = model(torch.randn(3, 4).to(device))\n"
    "preds = out.argmax(1).numpy()\n"
)


def chain_at(fixture: str, row: int, code: str) -> list[tuple[int, str]]:
    """The chain of the ``code`` diagnostic at ``row`` of a fixture: (row, message) steps."""
    path = FIXTURES / code / fixture
    found = lint_path(path, str(path), fixture_options(path)).diagnostics
    [here] = [d for d in found if d.code == code and d.start.row == row]
    return [(step.start.row, step.message) for step in here.related]


@pytest.mark.parametrize(
    ("code", "fixture", "row", "expected"),
    [
        ("DEV001", "bad_method_one_numpy.py", 21, [(15, "moved to cuda here")]),
        ("DEV001", "bad_eval_np_asarray.py", 24, [(8, DEVICE), (15, MOVED), (22, COMPUTED)]),
        (
            "DEV002",
            "bad_labels_not_moved.py",
            34,
            [
                (31, "batch taken from the data loader here, on the CPU"),
                (6, DEVICE),
                (25, MOVED),
                (33, COMPUTED),
            ],
        ),
        (
            "DEV003",
            "bad_device_default.py",
            8,
            [(20, "reaches this placement"), (21, "reaches this placement")],
        ),
        (
            "DEV006",
            "bad_accuracy_compare.py",
            15,
            [(10, MADE_ON_CPU), (5, DEVICE), (8, MOVED), (14, COMPUTED)],
        ),
        ("DEV008", "bad_inputs_to_device.py", 12, [(11, MADE_ON_CPU)]),
        (
            "DEV012",
            "bad_running_loss_item.py",
            22,
            [(6, DEVICE), (10, MOVED), (19, COMPUTED), (17, MOVED)],
        ),
        ("DEV013", "bad_cls_token_zeros_cat.py", 14, [(15, "combined with the inputs here")]),
        (
            "DEV013",
            "bad_noise_moved_only_for_cuda.py",
            24,
            [(25, "moved only when this tensor is on CUDA")],
        ),
        (
            "DEV016",
            "bad_method_one_use_cuda_flag.py",
            17,
            [(7, "cuda availability tested here")],
        ),
        ("DEV018", "bad_double_explicit.py", 7, [(4, DEVICE)]),
        (
            "DEV019",
            "bad_accelerator_device.py",
            13,
            [(8, DEVICE), (12, "moved to the device here")],
        ),
    ],
)
def test_rules_report_the_chain_of_the_analysis(
    code: str, fixture: str, row: int, expected: list[tuple[int, str]]
) -> None:
    assert chain_at(fixture, row, code) == expected


def test_a_placement_written_in_place_has_no_chain() -> None:
    """``.to("cuda")``: the literal is the diagnostic; nothing is invented around it."""
    assert chain_at("bad_to_cuda_string.py", 19, "DEV003") == []


def checked(tmp_path: Path) -> list[Diagnostic]:
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    found = lint_path(path, str(path), CheckOptions(frozenset({"DEV001"}))).diagnostics
    assert [d.code for d in found] == ["DEV001"]
    return found


def rendered(fmt: str, found: list[Diagnostic], cwd: Path) -> str:
    out = io.StringIO()
    render(fmt, found, out, ReportOptions(cwd=cwd))
    return out.getvalue()


def test_full_shows_each_step_as_a_labelled_secondary_span(tmp_path: Path) -> None:
    lines = rendered("full", checked(tmp_path), tmp_path).splitlines()
    step = lines.index(" ::: train.py:3:9")
    assert lines[step : step + 4] == [
        " ::: train.py:3:9",
        "3 | model = torch.nn.Linear(4, 2).to(device)",
        "  |         -------------------------------- moved to the device here",
        "  |",
    ]
    assert " ::: train.py:2:10" in lines
    assert "  |       ----------------------------------- computed by the model here" in lines
    assert lines.index(" ::: train.py:2:10") < step < lines.index("help: Insert `.cpu()`")


def test_full_names_each_step_when_the_source_is_gone(tmp_path: Path) -> None:
    found = checked(tmp_path)
    (tmp_path / "train.py").unlink()
    lines = rendered("full", found, tmp_path).splitlines()
    assert lines[:5] == [
        "DEV001 [*] `.numpy()` on a tensor that may be on cuda; call `.cpu()` first",
        " --> train.py:5:9",
        f" ::: train.py:2:10: {DEVICE}",
        f" ::: train.py:3:9: {MOVED}",
        f" ::: train.py:4:7: {COMPUTED}",
    ]


def test_json_and_json_lines_carry_the_related_array(tmp_path: Path) -> None:
    [item] = json.loads(rendered("json", checked(tmp_path), tmp_path))
    assert [(r["location"]["row"], r["message"]) for r in item["related"]] == [
        (2, DEVICE),
        (3, MOVED),
        (4, COMPUTED),
    ]
    assert item["related"][1]["filename"] == str(tmp_path / "train.py")
    [line] = rendered("json-lines", checked(tmp_path), tmp_path).splitlines()
    assert json.loads(line)["related"] == item["related"]


def test_sarif_code_flow_validates_and_ends_at_the_result(tmp_path: Path) -> None:
    document = json.loads(rendered("sarif", checked(tmp_path), tmp_path))
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert list(jsonschema.Draft4Validator(schema).iter_errors(document)) == []
    [result] = document["runs"][0]["results"]
    assert len(result["relatedLocations"]) == 3
    [flow] = result["codeFlows"][0]["threadFlows"]
    lines = [
        step["location"]["physicalLocation"]["region"]["startLine"] for step in flow["locations"]
    ]
    assert lines == [2, 3, 4, 5]


@pytest.mark.parametrize(
    "fmt", ["concise", "grouped", "github", "gitlab", "junit", "pylint", "azure"]
)
def test_other_formats_still_render(fmt: str, tmp_path: Path) -> None:
    assert "DEV001" in rendered(fmt, checked(tmp_path), tmp_path)


def test_language_server_sends_related_information(tmp_path: Path) -> None:
    pytest.importorskip("pygls")
    from devlint.server import lsp_lines, to_lsp_diagnostic

    [found] = checked(tmp_path)
    converted = to_lsp_diagnostic(found, lsp_lines(SOURCE))
    assert converted.related_information is not None
    moved = converted.related_information[1]
    assert moved.message == MOVED
    assert moved.location.uri == (tmp_path / "train.py").as_uri()
    assert (moved.location.range.start.line, moved.location.range.start.character) == (2, 8)


def test_notebook_steps_name_their_own_cell() -> None:
    cells = [
        "import torch\nx = torch.ones(2).cuda()\n",
        "y = x.numpy()\n",
    ]
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "source": c,
                "outputs": [],
                "execution_count": None,
            }
            for c in cells
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    data = json.dumps(notebook).encode()
    found = lint_text(data, "nb.ipynb", CheckOptions(frozenset({"DEV001"}))).diagnostics
    [numpy] = found
    assert (numpy.cell, numpy.start.row) == (2, 1)
    [step] = numpy.related
    assert (step.cell, step.start.row, step.start.column, step.message) == (
        1,
        2,
        5,
        "moved to cuda here",
    )


def test_explain_prints_the_chain_in_order(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SOURCE)
    done = run_devlint("explain", "--select", "DEV001", "train.py:5", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "train.py:5:9: DEV001 `.numpy()` on a tensor that may be on cuda; call `.cpu()` first",
        f"  1. train.py:2:10: {DEVICE}",
        f"  2. train.py:3:9: {MOVED}",
        f"  3. train.py:4:7: {COMPUTED}",
    ]
    by_column = run_devlint("explain", "--select", "DEV001", "train.py:5:12", cwd=tmp_path)
    assert by_column.stdout == done.stdout


def test_explain_says_when_nothing_is_reported_or_the_file_is_missing(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SOURCE)
    nothing = run_devlint("explain", "train.py:1", cwd=tmp_path)
    assert (nothing.returncode, nothing.stdout) == (1, "")
    assert nothing.stderr == "error: nothing is reported at train.py:1\n"
    missing = run_devlint("explain", "gone.py:3", cwd=tmp_path)
    assert (missing.returncode, missing.stderr) == (1, "error: no such file: gone.py\n")
    malformed = run_devlint("explain", "train.py", cwd=tmp_path)
    assert malformed.returncode == 2
    assert "expected PATH:LINE[:COL]" in malformed.stderr
