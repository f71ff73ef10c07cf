"""The renderers added for ruff parity: full, grouped, pylint, gitlab, json-lines, azure,
``--statistics`` as JSON, rule addresses, and notebooks in SARIF."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from devlint.diagnostics import Diagnostic, Edit, Fix, Location
from devlint.report import ReportOptions, RuleInfo, render

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "data" / "sarif-schema-2.1.0.json"
SOURCE = (
    "import torch\n"
    "\n"
    "def f():\n"
    "\tx = torch.zeros(3).cuda()\n"
    "\treturn x\n"
    "y = torch.load('a',\n"
    "    weights_only=True)\n"
)
MOVE = Fix("safe", "Use `.to(device)`", (Edit(".to(device)", Location(4, 20), Location(4, 27)),))
LOAD = Fix(
    "unsafe",
    "Add `map_location`",
    (Edit(", map_location='cpu'", Location(6, 19), Location(6, 19)),),
)


def diagnostic(
    code: str,
    row: int,
    column: int,
    end: tuple[int, int],
    *,
    path: str = "t.py",
    fix: Fix | None = None,
    cell: int | None = None,
    message: str = "message",
) -> Diagnostic:
    return Diagnostic(
        code, code.lower(), message, path, Location(row, column), Location(*end), fix, row, cell
    )


CUDA = diagnostic("DEV003", 4, 6, (4, 27), fix=MOVE, message="`.cuda()` unguarded")
LOAD_CALL = diagnostic("DEV007", 6, 5, (7, 23), fix=LOAD, message="no map_location")


def run(fmt: str, found: list[Diagnostic], cwd: Path, **options: Any) -> str:
    out = io.StringIO()
    render(fmt, found, out, ReportOptions(cwd=cwd, **options))
    return out.getvalue()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "t.py").write_text(SOURCE)
    return tmp_path


# ------------------------------------------------------------------------------- full


def test_full_shows_the_line_with_carets_and_the_fix_title(project: Path) -> None:
    assert run("full", [LOAD_CALL, CUDA], project).splitlines() == [
        "DEV003 [*] `.cuda()` unguarded",
        " --> t.py:4:6",
        "  |",
        "2 |",
        "3 | def f():",
        "4 |     x = torch.zeros(3).cuda()",  # tabs shown as four spaces, carets to match
        "  |         ^^^^^^^^^^^^^^^^^^^^^",
        "5 |     return x",
        "6 | y = torch.load('a',",
        "  |",
        "help: Use `.to(device)`",
        "",
        "DEV007 no map_location",  # unsafe: no [*] without --unsafe-fixes
        " --> t.py:6:5",
        "  |",
        "4 |     x = torch.zeros(3).cuda()",
        "5 |     return x",
        "6 | y = torch.load('a',",
        "  |     ^^^^^^^^^^^^^^^",  # a span over two lines: to the end of the first
        "7 |     weights_only=True)",
        "  |",
        "help: Add `map_location`",
        "",
        "Found 2 errors (1 fixable with --fix).",
        "(1 hidden fix can be enabled with the `--unsafe-fixes` option).",
    ]


def test_full_says_why_a_diagnostic_has_no_fix(project: Path) -> None:
    """help: the rule's reason (RuleInfo.no_fix) when there is no fix; nothing for an
    unknown rule."""
    rules = {
        "DEV003": RuleInfo("DEV003", "unguarded-cuda", "s", True, True, "No fix here (see docs)"),
        "DEV006": RuleInfo("DEV006", "device-mismatch", "s", False, True, "No fix: a decision"),
    }
    found = [
        diagnostic("DEV003", 4, 6, (4, 27)),
        diagnostic("DEV006", 5, 2, (5, 10)),
        diagnostic("DEV099", 6, 1, (6, 2)),
    ]
    blocks = run("full", found, project, rules=rules, quiet=True).split("\n\n")
    assert [block.splitlines()[-1] for block in blocks[:3]] == [
        "help: No fix here (see docs)",
        "help: No fix: a decision",
        "  |",
    ]
    with_fix = run("full", [CUDA], project, rules=rules, quiet=True)
    assert "help: Use `.to(device)`" in with_fix and "No fix here" not in with_fix


def test_full_reads_stdin_sources_notebook_cells_and_survives_missing_files(
    tmp_path: Path,
) -> None:
    (tmp_path / "nb.ipynb").write_text(
        json.dumps({"cells": [{"cell_type": "markdown", "source": "# T"},
                              {"cell_type": "code", "source": ["import torch\n", "x.cuda()"]}]})
    )  # fmt: skip
    found = [
        diagnostic("DEV003", 2, 1, (2, 9), path="nb.ipynb", cell=2),
        diagnostic("DEV003", 1, 1, (1, 2), path="gone.py"),
        diagnostic("DEV003", 1, 5, (1, 13), path="-"),
    ]
    lines = run("full", found, tmp_path, sources={"-": "y = x.cuda()\n"}, quiet=True)
    assert lines.split("\n\n") == [
        "DEV003 message\n --> -:1:5\n  |\n1 | y = x.cuda()\n  |     ^^^^^^^^\n  |",
        "DEV003 message\n --> gone.py:1:1",
        "DEV003 message\n --> nb.ipynb:cell 2:2:1\n  |\n1 | import torch\n2 | x.cuda()"
        "\n  | ^^^^^^^^\n  |",
        "",
    ]


def test_full_widens_the_gutter_for_long_files(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("x = 1\n" * 9 + "y = x.cuda()\nz = 2\n")
    lines = run("full", [diagnostic("DEV003", 10, 5, (10, 13))], tmp_path, quiet=True)
    assert lines.splitlines()[1:4] == ["  --> t.py:10:5", "   |", " 8 | x = 1"]
    assert "   |     ^^^^^^^^" in lines.splitlines()


# ------------------------------------------------------------------ grouped, pylint


def test_grouped(project: Path) -> None:
    other = diagnostic("DEV001", 12, 10, (12, 11), path="src/b.py", message="numpy")
    assert run("grouped", [other, LOAD_CALL, CUDA], project).splitlines() == [
        "src/b.py:",
        "  12:10 DEV001 numpy",
        "",
        "t.py:",
        "  4:6 DEV003 [*] `.cuda()` unguarded",
        "  6:5 DEV007 no map_location",
        "",
        "Found 3 errors (1 fixable with --fix).",
        "(1 hidden fix can be enabled with the `--unsafe-fixes` option).",
    ]


def test_pylint(project: Path) -> None:
    notebook = diagnostic("DEV003", 4, 1, (4, 2), path="nb.ipynb", cell=3, message="nb")
    assert run("pylint", [CUDA, notebook], project).splitlines() == [
        "nb.ipynb:cell 3:4: [DEV003] nb",
        "t.py:4: [DEV003] `.cuda()` unguarded",
    ]


# ---------------------------------------------------------------------------- gitlab


def test_gitlab_code_climate(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI_PROJECT_DIR", raising=False)
    twin = diagnostic("DEV003", 9, 1, (9, 5), message=CUDA.message)
    notebook = diagnostic("DEV003", 4, 1, (4, 2), path="nb.ipynb", cell=3, message="nb")
    issues = json.loads(run("gitlab", [CUDA, twin, notebook], project))
    assert [issue["location"] for issue in issues] == [
        {"path": "nb.ipynb", "positions": {"begin": {"line": 1, "column": 1},
                                           "end": {"line": 1, "column": 1}}},
        {"path": "t.py", "positions": {"begin": {"line": 4, "column": 6},
                                       "end": {"line": 4, "column": 27}}},
        {"path": "t.py", "positions": {"begin": {"line": 9, "column": 1},
                                       "end": {"line": 9, "column": 5}}},
    ]  # fmt: skip
    assert issues[0]["description"] == "DEV003: cell 3:4:1: nb"
    assert issues[1]["check_name"] == "DEV003" and issues[1]["severity"] == "major"
    assert issues[1]["description"] == "DEV003: `.cuda()` unguarded"
    fingerprints = [issue["fingerprint"] for issue in issues]
    assert len(set(fingerprints)) == 3  # the twins differ
    # no position in the fingerprint: moving the code keeps the identity
    moved = json.loads(
        run("gitlab", [diagnostic("DEV003", 40, 6, (40, 27), message=CUDA.message)], project)
    )
    assert moved[0]["fingerprint"] == fingerprints[1]


def test_gitlab_paths_are_relative_to_the_ci_project(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI_PROJECT_DIR", str(project.parent))
    found = [diagnostic("DEV003", 1, 1, (1, 2), path=str(project / "t.py"))]
    [issue] = json.loads(run("gitlab", found, project))
    assert issue["location"]["path"] == f"{project.name}/t.py"


# ------------------------------------------------------------------ json-lines, azure


def test_json_lines_has_one_json_object_per_line(project: Path) -> None:
    lines = run("json-lines", [LOAD_CALL, CUDA], project).splitlines()
    assert [json.loads(line) for line in lines] == json.loads(
        run("json", [LOAD_CALL, CUDA], project)
    )


def test_azure(project: Path) -> None:
    odd = diagnostic("DEV001", 2, 3, (2, 4), path="a;b.py", message="50% off\nnext")
    notebook = diagnostic("DEV003", 4, 1, (4, 2), path="nb.ipynb", cell=3, message="nb")
    assert run("azure", [odd, notebook], project).splitlines() == [
        f"##vso[task.logissue type=error;sourcepath={project}/a%3Bb.py;linenumber=2;"
        "columnnumber=3;code=DEV001;]50%AZP25 off%0Anext",
        f"##vso[task.logissue type=error;sourcepath={project}/nb.ipynb;code=DEV003;]cell 3:4:1: nb",
    ]


# ----------------------------------------------------------------------- statistics


def test_statistics_as_json_are_ruffs_objects(project: Path) -> None:
    found = [CUDA, CUDA, LOAD_CALL, diagnostic("DEV003", 9, 1, (9, 2))]
    assert json.loads(run("json", found, project, statistics=True)) == [
        {"code": "DEV003", "name": "dev003", "count": 3, "fixable": False, "fixable_count": 2},
        {"code": "DEV007", "name": "dev007", "count": 1, "fixable": False, "fixable_count": 0},
    ]
    unsafe = json.loads(run("json", found, project, statistics=True, unsafe_fixes=True))
    assert unsafe[1]["fixable"] is True
    assert json.loads(run("json", [], project, statistics=True)) == []


@pytest.mark.parametrize("fmt", ["full", "concise", "grouped", "text"])
def test_statistics_table_in_every_format_for_people(fmt: str, project: Path) -> None:
    assert run(fmt, [CUDA], project, statistics=True).splitlines()[0] == "1\tDEV003\t[*] dev003"


def test_statistics_cannot_be_sarif(project: Path) -> None:
    with pytest.raises(ValueError, match="--statistics cannot be written as sarif"):
        run("sarif", [CUDA], project, statistics=True)


# ---------------------------------------------------------------------- rule addresses


def test_every_format_gets_the_rule_address_from_the_template(project: Path) -> None:
    template = "https://lint.example.org/rules/{name}.html"
    [row] = json.loads(run("json", [CUDA], project, docs_url=template))
    assert row["url"] == "https://lint.example.org/rules/dev003.html"
    sarif = json.loads(run("sarif", [CUDA], project, docs_url=template))
    assert sarif["runs"][0]["tool"]["driver"]["rules"][0]["helpUri"] == row["url"]


# ------------------------------------------------------------------ SARIF, notebooks


def test_sarif_names_the_notebook_cell(project: Path) -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    notebook = diagnostic("DEV003", 4, 2, (4, 9), path="nb.ipynb", cell=3)
    document = json.loads(run("sarif", [notebook, CUDA], project))
    jsonschema.validate(document, schema)
    [in_cell, in_file] = document["runs"][0]["results"]
    location = in_cell["locations"][0]
    assert location["physicalLocation"]["region"]["startLine"] == 4  # the line in the cell
    assert location["logicalLocations"] == [
        {"name": "cell 3", "fullyQualifiedName": "nb.ipynb:cell 3", "kind": "module"}
    ]
    assert in_cell["properties"] == {"cell": 3}
    assert "logicalLocations" not in in_file["locations"][0] and "properties" not in in_file
