"""The output renderers of ``devlint.report``: text, json, sarif, github, junit.

The SARIF output is validated against the official OASIS SARIF 2.1.0 JSON schema
(errata01), vendored unmodified as ``tests/data/sarif-schema-2.1.0.json`` from
https://github.com/oasis-tcs/sarif-spec (``sarif-2.1/schema/sarif-schema-2.1.0.json``).
"""

from __future__ import annotations

import copy
import io
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from devlint.diagnostics import Diagnostic, Edit, Fix, Location, Related
from devlint.report import DEFAULT_FORMAT, FORMATS, ReportOptions, RuleInfo, display_path, render

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "data" / "sarif-schema-2.1.0.json"
ANSI = re.compile(r"\x1b\[[0-9;]*m")

RULES = {
    "DEV001": RuleInfo(
        "DEV001", "numpy-on-accelerator", "`.numpy()` on an accelerator tensor.", True, True
    ),
    "DEV003": RuleInfo(
        "DEV003", "unguarded-cuda", "CUDA placement outside an availability guard.", True, True
    ),
    "DEV006": RuleInfo(
        "DEV006", "device-mismatch", "Values on different devices combined.", False, True
    ),
    "DEV007": RuleInfo(
        "DEV007", "load-without-map-location", "`torch.load` without `map_location`.", True, True
    ),
}


def _loc(row: int, column: int) -> Location:
    return Location(row, column)


def _safe_fix() -> Fix:
    return Fix("safe", "Insert `.cpu()`", (Edit(".cpu()", _loc(12, 10), _loc(12, 10)),))


def _unsafe_fix() -> Fix:
    return Fix(
        "unsafe",
        "Add `map_location=device`",
        (Edit(", map_location=device", _loc(3, 20), _loc(3, 20)),),
    )


def make(
    code: str = "DEV001",
    path: str = "src/a.py",
    row: int = 1,
    column: int = 1,
    *,
    message: str = "something is wrong",
    fix: Fix | None = None,
    cell: int | None = None,
    end: tuple[int, int] | None = None,
    url: str | None = None,
    related: tuple[Related, ...] = (),
) -> Diagnostic:
    names = {"DEV001": "numpy-on-accelerator", "DEV003": "unguarded-cuda"}
    end_row, end_column = end if end is not None else (row, column + 4)
    return Diagnostic(
        code=code,
        name=names.get(code, code.lower()),
        message=message,
        path=path,
        start=_loc(row, column),
        end=_loc(end_row, end_column),
        fix=fix,
        noqa_row=row,
        cell=cell,
        url=url,
        related=related,
    )


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def sample(cwd: Path) -> list[Diagnostic]:
    """Unsorted on purpose: a safe fix, an unsafe fix, no fix, a notebook, an outside file."""
    return [
        make("DEV003", "src/b.py", 7, 1, message="`.cuda()` outside an availability guard"),
        make(
            "DEV001",
            str(cwd / "src" / "a.py"),
            12,
            5,
            message="`.numpy()` on a tensor that may be on cuda; call `.cpu()` first",
            fix=_safe_fix(),
            end=(12, 10),
            url="https://example.org/rules/DEV001",
            related=(
                Related("device chosen here", str(cwd / "src" / "a.py"), _loc(2, 10), _loc(2, 16)),
                Related("moved to cuda here", str(cwd / "src" / "a.py"), _loc(5, 9), _loc(5, 25)),
            ),
        ),
        make(
            "DEV007",
            "src/a.py",
            3,
            9,
            fix=_unsafe_fix(),
            message="`torch.load` without `map_location`",
        ),
        make("DEV006", "src/a.py", 12, 2, message="mixes devices"),
        make(
            "DEV003",
            "nb.ipynb",
            4,
            1,
            cell=3,
            message="`.cuda()` in a notebook",
            related=(Related("reaches this placement", "nb.ipynb", _loc(1, 1), _loc(1, 9), 2),),
        ),
        make("DEV001", "/elsewhere/outside.py", 2, 3, message="outside the project"),
    ]


def run(fmt: str, diagnostics: list[Diagnostic], cwd: Path | None = None, **options: Any) -> str:
    out = io.StringIO()
    render(fmt, diagnostics, out, ReportOptions(rules=RULES, cwd=cwd, **options))
    return out.getvalue()


# ---------------------------------------------------------------------------- package


def test_formats() -> None:
    # ruff's names (but rdjson), and `text`, another name of `concise` (docs/design.md §2).
    assert set(FORMATS) == {
        "full", "concise", "grouped", "json", "json-lines", "sarif", "github", "gitlab",
        "pylint", "azure", "junit", "text",
    }  # fmt: skip
    assert DEFAULT_FORMAT == "full"


def test_unknown_format_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown output format"):
        render("xml", [], io.StringIO(), ReportOptions(rules=RULES))


@pytest.mark.parametrize("fmt", FORMATS)
def test_only_the_chosen_renderer_is_imported(fmt: str) -> None:
    code = (
        "import io, sys\n"
        "from devlint.report import render\n"
        f"render({fmt!r}, [], io.StringIO())\n"
        "print(sorted(m for m in sys.modules if m.startswith('devlint.report.')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    module = "text" if fmt == "concise" else fmt.replace("-", "_")
    imported = eval(result.stdout)
    # full and grouped share the summary of the concise (text) renderer, json-lines the
    # objects of json
    shared = {
        "full": {"devlint.report.text_format"},
        "grouped": {"devlint.report.text_format"},
        "json-lines": {"devlint.report.json_format"},
    }.get(fmt, set())
    assert set(imported) == {f"devlint.report.{module}_format"} | shared


def test_display_path(cwd: Path) -> None:
    assert display_path(str(cwd / "pkg" / "m.py"), cwd) == "pkg/m.py"
    assert display_path("pkg/m.py", cwd) == "pkg/m.py"
    assert display_path("/elsewhere/m.py", cwd) == "/elsewhere/m.py"
    assert display_path("pkg/m.py", None) == "pkg/m.py"
    assert display_path("-", cwd) == "-"


@pytest.mark.parametrize("fmt", FORMATS)
def test_input_is_not_mutated_and_order_does_not_matter(
    fmt: str, sample: list[Diagnostic], cwd: Path
) -> None:
    before = list(sample)
    first = run(fmt, sample, cwd)
    assert sample == before
    assert run(fmt, list(reversed(sample)), cwd) == first


# ------------------------------------------------------------------------------- text


def test_text_lines_sorted_relative_and_marked(sample: list[Diagnostic], cwd: Path) -> None:
    lines = run("text", sample, cwd).splitlines()
    assert lines[:6] == [
        "/elsewhere/outside.py:2:3: DEV001 outside the project",
        "nb.ipynb:cell 3:4:1: DEV003 `.cuda()` in a notebook",
        "src/a.py:3:9: DEV007 `torch.load` without `map_location`",
        "src/a.py:12:2: DEV006 mixes devices",
        "src/a.py:12:5: DEV001 [*] `.numpy()` on a tensor that may be on cuda; call `.cpu()` first",
        "src/b.py:7:1: DEV003 `.cuda()` outside an availability guard",
    ]
    assert lines[6:] == [
        "Found 6 errors (1 fixable with --fix).",
        "(1 hidden fix can be enabled with the `--unsafe-fixes` option).",
    ]


def test_text_sorts_numerically_not_lexically(cwd: Path) -> None:
    diagnostics = [make(row=10), make(row=9), make(row=9, column=12), make(row=9, column=2)]
    lines = run("text", diagnostics, cwd, quiet=True).splitlines()
    assert [line.split(": ")[0] for line in lines] == [
        "src/a.py:9:1",
        "src/a.py:9:2",
        "src/a.py:9:12",
        "src/a.py:10:1",
    ]


def test_text_notebook_cells_sort_before_lines(cwd: Path) -> None:
    diagnostics = [make(path="nb.ipynb", row=1, cell=2), make(path="nb.ipynb", row=5, cell=1)]
    lines = run("text", diagnostics, cwd, quiet=True).splitlines()
    assert lines == [
        "nb.ipynb:cell 1:5:1: DEV001 something is wrong",
        "nb.ipynb:cell 2:1:1: DEV001 something is wrong",
    ]


@pytest.mark.parametrize(
    ("diagnostics", "summary"),
    [
        ([], ["All checks passed!"]),
        ([make()], ["Found 1 error."]),
        ([make(), make(row=2), make(row=3)], ["Found 3 errors."]),
        (
            [make(fix=_safe_fix()), make(row=2, fix=_safe_fix()), make(row=3)],
            ["Found 3 errors (2 fixable with --fix)."],
        ),
        (
            [make(fix=_unsafe_fix())],
            [
                "Found 1 error.",
                "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).",
            ],
        ),
        (
            [make(fix=_unsafe_fix()), make(row=2, fix=_unsafe_fix()), make(row=3, fix=_safe_fix())],
            [
                "Found 3 errors (1 fixable with --fix).",
                "(2 hidden fixes can be enabled with the `--unsafe-fixes` option).",
            ],
        ),
    ],
)
def test_text_summary_wording(diagnostics: list[Diagnostic], summary: list[str], cwd: Path) -> None:
    lines = run("text", diagnostics, cwd).splitlines()
    assert lines[len(diagnostics) :] == summary


def test_text_unsafe_fixes_enabled_count_as_fixable(cwd: Path) -> None:
    diagnostics = [make(fix=_unsafe_fix()), make(row=2, fix=_safe_fix())]
    lines = run("text", diagnostics, cwd, unsafe_fixes=True).splitlines()
    assert lines == [
        "src/a.py:1:1: DEV001 [*] something is wrong",
        "src/a.py:2:1: DEV001 [*] something is wrong",
        "Found 2 errors (2 fixable with --fix).",
    ]


def test_text_quiet_has_no_summary(cwd: Path) -> None:
    assert run("text", [], cwd, quiet=True) == ""
    assert run("text", [make()], cwd, quiet=True) == "src/a.py:1:1: DEV001 something is wrong\n"


def test_text_colour_only_when_asked(sample: list[Diagnostic], cwd: Path) -> None:
    plain = run("text", sample, cwd)
    coloured = run("text", sample, cwd, color=True)
    assert "\x1b[" not in plain
    assert "\x1b[" in coloured
    assert ANSI.sub("", coloured) == plain
    line = coloured.splitlines()[4]
    assert "\x1b[1msrc/a.py" in line  # path
    assert "\x1b[31m\x1b[1mDEV001" in line or "\x1b[1m\x1b[31mDEV001" in line  # code
    assert "\x1b[36m:\x1b[0m12" in line  # position separators


def test_text_colour_statistics_and_show_fixes_are_plain_without_colour(
    sample: list[Diagnostic], cwd: Path
) -> None:
    for options in ({"statistics": True}, {"show_fixes": True}):
        assert "\x1b[" not in run("text", sample, cwd, **options)
        assert ANSI.sub("", run("text", sample, cwd, color=True, **options)) == run(
            "text", sample, cwd, **options
        )


def test_text_show_fixes(sample: list[Diagnostic], cwd: Path) -> None:
    text = run("text", sample, cwd, show_fixes=True)
    tail = text.split("(1 hidden fix can be enabled with the `--unsafe-fixes` option).\n", 1)[1]
    assert tail.splitlines() == [
        "",
        "Fixable with --fix:",
        "  - src/a.py:12:5: DEV001 Insert `.cpu()`",
        "",
        "Fixable with --fix --unsafe-fixes:",
        "  - src/a.py:3:9: DEV007 Add `map_location=device`",
    ]
    assert run("text", [make()], cwd, show_fixes=True) == run("text", [make()], cwd)


def test_text_statistics(sample: list[Diagnostic], cwd: Path) -> None:
    extra = [make("DEV003", "src/c.py", row) for row in (1, 2)]
    lines = run("text", sample + extra, cwd, statistics=True).splitlines()
    rows = [line.split("\t") for line in lines[:4]]
    assert rows == [
        ["4", "DEV003", "[ ] unguarded-cuda"],
        ["2", "DEV001", "[-] numpy-on-accelerator"],  # one of the two is fixable
        ["1", "DEV006", "[ ] device-mismatch"],
        ["1", "DEV007", "[ ] load-without-map-location"],
    ]
    assert lines[4:] == [
        "Found 8 errors (1 fixable with --fix).",
        "(1 hidden fix can be enabled with the `--unsafe-fixes` option).",
    ]
    assert not any(line.startswith("src/") for line in lines)


def test_text_statistics_aligns_counts_and_drops_the_fix_column_when_nothing_is_fixable(
    cwd: Path,
) -> None:
    diagnostics = [make("DEV001", row=row) for row in range(1, 12)] + [make("DEV099")]
    lines = run("text", diagnostics, cwd, statistics=True, quiet=True).splitlines()
    assert lines == ["11\tDEV001\tnumpy-on-accelerator", " 1\tDEV099\tdev099"]


def test_text_statistics_when_clean(cwd: Path) -> None:
    assert run("text", [], cwd, statistics=True) == "All checks passed!\n"


# ------------------------------------------------------------------------------- json


def test_json_ruff_compatible(sample: list[Diagnostic], cwd: Path) -> None:
    data = json.loads(run("json", sample, cwd))
    assert isinstance(data, list)
    assert len(data) == len(sample)
    keys = {
        "cell",
        "code",
        "end_location",
        "filename",
        "fix",
        "location",
        "message",
        "noqa_row",
        "related",
        "url",
    }
    for item in data:
        assert set(item) == keys
        assert Path(item["filename"]).is_absolute()
        for key in ("location", "end_location"):
            assert set(item[key]) == {"row", "column"}
            assert item[key]["row"] >= 1
            assert item[key]["column"] >= 1
    by_code = {(item["code"], item["location"]["row"]): item for item in data}
    numpy = by_code["DEV001", 12]
    assert numpy == {
        "cell": None,
        "code": "DEV001",
        "end_location": {"row": 12, "column": 10},
        "filename": str(cwd / "src" / "a.py"),
        "fix": {
            "applicability": "safe",
            "edits": [
                {
                    "content": ".cpu()",
                    "end_location": {"row": 12, "column": 10},
                    "location": {"row": 12, "column": 10},
                }
            ],
            "message": "Insert `.cpu()`",
        },
        "location": {"row": 12, "column": 5},
        "message": "`.numpy()` on a tensor that may be on cuda; call `.cpu()` first",
        "noqa_row": 12,
        "related": [
            {
                "cell": None,
                "end_location": {"row": 2, "column": 16},
                "filename": str(cwd / "src" / "a.py"),
                "location": {"row": 2, "column": 10},
                "message": "device chosen here",
            },
            {
                "cell": None,
                "end_location": {"row": 5, "column": 25},
                "filename": str(cwd / "src" / "a.py"),
                "location": {"row": 5, "column": 9},
                "message": "moved to cuda here",
            },
        ],
        "url": "https://example.org/rules/DEV001",
    }
    assert by_code["DEV007", 3]["fix"]["applicability"] == "unsafe"
    assert by_code["DEV007", 3]["filename"] == str(cwd / "src" / "a.py")  # relative path resolved
    assert by_code["DEV006", 12]["fix"] is None
    assert by_code["DEV003", 4]["cell"] == 3
    assert by_code["DEV003", 4]["filename"] == str(cwd / "nb.ipynb")
    assert by_code["DEV001", 2]["filename"] == "/elsewhere/outside.py"


def test_json_empty_and_loadable_with_json_load(cwd: Path) -> None:
    text = run("json", [], cwd)
    assert json.load(io.StringIO(text)) == []
    assert text.strip() == "[]"


def test_json_indent_two_and_odd_characters(cwd: Path) -> None:
    odd = make(message='quote " backslash \\ newline \n tab \t unicode é \x00')
    text = run("json", [odd], cwd)
    assert text.startswith('[\n  {\n    "cell"')
    assert json.load(io.StringIO(text))[0]["message"] == odd.message


# ------------------------------------------------------------------------------ sarif


@pytest.fixture(scope="module")
def sarif_validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    cls = jsonschema.validators.validator_for(schema)
    assert cls is jsonschema.Draft4Validator  # the draft the official schema declares
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _errors(validator: jsonschema.protocols.Validator, document: Any) -> list[str]:
    return [error.message for error in validator.iter_errors(document)]


def test_sarif_validates_against_the_official_schema(
    sample: list[Diagnostic], cwd: Path, sarif_validator: jsonschema.protocols.Validator
) -> None:
    document = json.loads(run("sarif", sample, cwd))
    assert _errors(sarif_validator, document) == []


def test_sarif_empty_validates(cwd: Path, sarif_validator: jsonschema.protocols.Validator) -> None:
    document = json.loads(run("sarif", [], cwd))
    assert _errors(sarif_validator, document) == []
    assert document["runs"][0]["results"] == []
    assert document["runs"][0]["tool"]["driver"]["rules"] == []
    assert _errors(sarif_validator, json.loads(run("sarif", [], None))) == []


def _break_level(doc: dict[str, Any]) -> None:
    doc["runs"][0]["results"][0]["level"] = "fatal"


def _break_line(doc: dict[str, Any]) -> None:
    doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0


def _break_version(doc: dict[str, Any]) -> None:
    doc["version"] = "2.0.0"


def _break_driver(doc: dict[str, Any]) -> None:
    del doc["runs"][0]["tool"]["driver"]["name"]


def _break_message(doc: dict[str, Any]) -> None:
    doc["runs"][0]["results"][0]["message"] = "a bare string"


def _break_replacement(doc: dict[str, Any]) -> None:
    result = next(r for r in doc["runs"][0]["results"] if "fixes" in r)
    del result["fixes"][0]["artifactChanges"][0]["replacements"][0]["deletedRegion"]


def _break_extra_key(doc: dict[str, Any]) -> None:
    doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["line"] = 3


@pytest.mark.parametrize(
    "breakage",
    [
        _break_level,
        _break_line,
        _break_version,
        _break_driver,
        _break_message,
        _break_replacement,
        _break_extra_key,
    ],
)
def test_sarif_schema_catches_broken_output(
    breakage: Any,
    sample: list[Diagnostic],
    cwd: Path,
    sarif_validator: jsonschema.protocols.Validator,
) -> None:
    document = json.loads(run("sarif", sample, cwd))
    broken = copy.deepcopy(document)
    breakage(broken)
    assert _errors(sarif_validator, broken)


def test_sarif_content(sample: list[Diagnostic], cwd: Path) -> None:
    document = json.loads(run("sarif", sample, cwd))
    assert document["version"] == "2.1.0"
    assert document["$schema"].endswith("sarif-schema-2.1.0.json")
    [run_] = document["runs"]
    driver = run_["tool"]["driver"]
    assert driver["name"] == "devlint"
    assert driver["informationUri"].startswith("https://")
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", driver["version"])
    assert run_["originalUriBaseIds"]["%SRCROOT%"]["uri"] == cwd.as_uri() + "/"
    rules = driver["rules"]
    assert [rule["id"] for rule in rules] == ["DEV001", "DEV003", "DEV006", "DEV007"]
    assert rules[0]["name"] == "numpy-on-accelerator"
    assert rules[0]["shortDescription"]["text"] == RULES["DEV001"].summary
    assert RULES["DEV001"].summary in rules[0]["fullDescription"]["text"]
    assert RULES["DEV001"].summary in rules[0]["help"]["text"]
    assert rules[0]["defaultConfiguration"]["level"] == "error"
    assert rules[0]["helpUri"] == "https://example.org/rules/DEV001"
    results = run_["results"]
    assert len(results) == len(sample)
    for result in results:
        assert result["level"] == "error"
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    located = {
        (r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]): r
        for r in results
    }
    numpy = located["DEV001", 12]
    physical = numpy["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"] == {"uri": "src/a.py", "uriBaseId": "%SRCROOT%"}
    assert physical["region"] == {"startLine": 12, "startColumn": 5, "endLine": 12, "endColumn": 10}
    assert numpy["message"]["text"] == sample[1].message
    [fix] = numpy["fixes"]
    assert fix["description"]["text"] == "Insert `.cpu()`"
    [change] = fix["artifactChanges"]
    assert change["artifactLocation"] == {"uri": "src/a.py", "uriBaseId": "%SRCROOT%"}
    assert change["replacements"] == [
        {
            "deletedRegion": {"startLine": 12, "startColumn": 10, "endLine": 12, "endColumn": 10},
            "insertedContent": {"text": ".cpu()"},
        }
    ]
    assert "fixes" not in located["DEV006", 12]
    outside = located["DEV001", 2]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert outside == {"uri": "file:///elsewhere/outside.py"}
    assert located["DEV003", 4]["properties"] == {"cell": 3}


def test_sarif_related_locations_and_code_flow(sample: list[Diagnostic], cwd: Path) -> None:
    """The chain as ``relatedLocations`` and as one thread flow ending at the result."""
    [run_] = json.loads(run("sarif", sample, cwd))["runs"]
    located = {
        (r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]): r
        for r in run_["results"]
    }
    numpy = located["DEV001", 12]
    related = numpy["relatedLocations"]
    assert [(r["id"], r["message"]["text"]) for r in related] == [
        (0, "device chosen here"),
        (1, "moved to cuda here"),
    ]
    assert related[1]["physicalLocation"] == {
        "artifactLocation": {"uri": "src/a.py", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 5, "startColumn": 9, "endLine": 5, "endColumn": 25},
    }
    [flow] = numpy["codeFlows"]
    [thread] = flow["threadFlows"]
    steps = [step["location"] for step in thread["locations"]]
    assert [step["message"]["text"] for step in steps] == [
        "device chosen here",
        "moved to cuda here",
        numpy["message"]["text"],
    ]
    assert steps[-1]["physicalLocation"] == numpy["locations"][0]["physicalLocation"]
    cell_step = located["DEV003", 4]["relatedLocations"][0]
    assert cell_step["logicalLocations"][0]["name"] == "cell 2"
    assert "relatedLocations" not in located["DEV006", 12]
    assert "codeFlows" not in located["DEV006", 12]


def test_sarif_uri_is_percent_encoded(
    cwd: Path, sarif_validator: jsonschema.protocols.Validator
) -> None:
    document = json.loads(run("sarif", [make(path="my dir/a#b.py")], cwd))
    assert _errors(sarif_validator, document) == []
    location = document["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "my%20dir/a%23b.py"


def test_sarif_rule_not_in_registry_uses_the_diagnostic(cwd: Path) -> None:
    document = json.loads(run("sarif", [make("DEV099")], cwd))
    [rule] = document["runs"][0]["tool"]["driver"]["rules"]
    assert rule["id"] == "DEV099"
    assert rule["name"] == "dev099"


# ----------------------------------------------------------------------------- github


def test_github_annotation(sample: list[Diagnostic], cwd: Path) -> None:
    lines = run("github", sample, cwd).splitlines()
    assert len(lines) == len(sample)
    assert (
        "::error file=src/a.py,line=12,col=5,endLine=12,endColumn=10,title=DEV001::"
        "`.numpy()` on a tensor that may be on cuda; call `.cpu()` first"
    ) in lines
    assert "::error file=nb.ipynb,title=DEV003::cell 3:4:1: `.cuda()` in a notebook" in lines
    assert all(
        re.match(
            r"::error file=[^,]+,(line=\d+,col=\d+,endLine=\d+,endColumn=\d+,)?title=DEV\d{3}::", x
        )
        for x in lines
    )


def test_github_escaping(cwd: Path) -> None:
    odd = make(path="dir,x/we:ird%.py", message="100% bad\r\nsecond line: a, b")
    [line] = run("github", [odd], cwd).splitlines()
    assert line == (
        "::error file=dir%2Cx/we%3Aird%25.py,line=1,col=1,endLine=1,endColumn=5,title=DEV001::"
        "100%25 bad%0D%0Asecond line: a, b"
    )


def test_github_empty(cwd: Path) -> None:
    assert run("github", [], cwd) == ""


# ------------------------------------------------------------------------------ junit


def test_junit_parses_back(sample: list[Diagnostic], cwd: Path) -> None:
    text = run("junit", sample, cwd)
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(text.encode("utf-8"))
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("6", "6", "0")
    suites = {suite.get("name"): suite for suite in root.findall("testsuite")}
    assert list(suites) == ["/elsewhere/outside.py", "nb.ipynb", "src/a.py", "src/b.py"]
    a = suites["src/a.py"]
    assert (a.get("tests"), a.get("failures")) == ("3", "3")
    cases = a.findall("testcase")
    assert len(cases) == 3
    failures = [case.find("failure") for case in cases]
    assert [f.get("type") for f in failures if f is not None] == ["DEV007", "DEV006", "DEV001"]
    last = cases[-1]
    assert last.get("classname") == "src/a.py"
    assert last.get("line") == "12"
    failure = last.find("failure")
    assert failure is not None
    assert failure.get("message") == sample[1].message
    assert failure.text == f"src/a.py:12:5: DEV001 {sample[1].message}"
    notebook = suites["nb.ipynb"].find("testcase")
    assert notebook is not None
    assert notebook.get("cell") == "3"
    assert "cell 3:4:1" in (notebook.get("name") or "")
    total = sum(int(suite.get("tests") or 0) for suite in suites.values())
    assert total == int(root.get("tests") or 0)


def test_junit_passing_summary_when_clean(cwd: Path) -> None:
    root = ET.fromstring(run("junit", [], cwd, files_checked=7).encode("utf-8"))
    assert (root.get("tests"), root.get("failures")) == ("1", "0")
    [suite] = root.findall("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures")) == ("devlint", "1", "0")
    [case] = suite.findall("testcase")
    assert case.find("failure") is None
    prop = suite.find("properties/property")
    assert prop is not None
    assert (prop.get("name"), prop.get("value")) == ("files_checked", "7")


def test_junit_survives_characters_xml_cannot_hold(cwd: Path) -> None:
    odd = make(message='bad \x00 \x1b byte <tag> & "quote" é')
    root = ET.fromstring(run("junit", [odd], cwd).encode("utf-8"))
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None
    assert failure.get("message") == 'bad \ufffd \ufffd byte <tag> & "quote" é'
