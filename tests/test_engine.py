"""The single-file engine: suppression, unreadable input, notebooks."""

from __future__ import annotations

import json
from pathlib import Path

import libcst as cst
import pytest

from devlint.api import lint_path
from devlint.engine import CheckOptions, check_text, unvalidated_nodes
from devlint.rule import all_rules

ALL = CheckOptions(frozenset(all_rules()) - {"DEV015"})  # unused noqa: tests/test_noqa.py
CUDA_LINE = "import torch\nx = torch.zeros(3).cuda(){comment}\n"


def codes(text: str, options: CheckOptions = ALL) -> list[tuple[int, str]]:
    return [(d.start.row, d.code) for d in check_text(text, "t.py", options)]


FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_parse_without_node_validation_builds_the_same_trees() -> None:
    sources = [path.read_text(encoding="utf-8") for path in sorted(FIXTURES.rglob("*.py"))]
    sources.append(Path(__file__).read_text(encoding="utf-8"))
    for source in sources:
        with unvalidated_nodes():
            module = cst.parse_module(source)
        assert module.deep_equals(cst.parse_module(source))
        assert module.code == source


def test_node_validation_is_back_on_after_the_block() -> None:
    with unvalidated_nodes():
        cst.parse_module("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not an identifier")


def test_reports_with_one_based_positions() -> None:
    [diagnostic] = check_text(CUDA_LINE.format(comment=""), "t.py", ALL)
    assert (diagnostic.code, diagnostic.start.row, diagnostic.start.column) == ("DEV003", 2, 5)
    assert diagnostic.noqa_row == 2


def test_noqa_with_matching_code_suppresses() -> None:
    assert codes(CUDA_LINE.format(comment="  # noqa: DEV003")) == []
    assert codes(CUDA_LINE.format(comment="  # noqa")) == []
    assert codes(CUDA_LINE.format(comment="  # NOQA:DEV001,DEV003")) == []


def test_noqa_with_other_code_keeps_diagnostic() -> None:
    assert codes(CUDA_LINE.format(comment="  # noqa: DEV001")) == [(2, "DEV003")]


def test_file_level_noqa() -> None:
    text = CUDA_LINE.format(comment="")
    assert codes("# devlint: noqa\n" + text) == []
    assert codes("# devlint: noqa: DEV003\n" + text) == []
    assert codes("# devlint: noqa: DEV001\n" + text) == [(3, "DEV003")]


def test_selection_limits_rules() -> None:
    text = CUDA_LINE.format(comment="")
    assert codes(text, CheckOptions(frozenset({"DEV001"}))) == []


def test_syntax_error_is_dev901_with_position() -> None:
    [diagnostic] = check_text("x = (\n", "t.py", ALL)
    assert diagnostic.code == "DEV901"
    assert diagnostic.start.row == 1
    assert "never closed" in diagnostic.message


def test_python2_print_is_dev901() -> None:
    [diagnostic] = check_text('print "hello"\n', "t.py", ALL)
    assert diagnostic.code == "DEV901"


def test_undecodable_file_is_dev900(tmp_path: Path) -> None:
    path = tmp_path / "latin.py"
    path.write_bytes(b"name = '\xe9t\xe9'\n")
    [diagnostic] = lint_path(path, str(path), ALL).diagnostics
    assert diagnostic.code == "DEV900"
    assert "utf-8" in diagnostic.message


def test_coding_cookie_and_bom_are_honoured(tmp_path: Path) -> None:
    latin = tmp_path / "latin.py"
    latin.write_bytes(
        b"# -*- coding: latin-1 -*-\nimport torch\nx = torch.zeros(1).cuda()  # \xe9\n"
    )
    assert [d.code for d in lint_path(latin, "latin.py", ALL).diagnostics] == ["DEV003"]
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbfimport torch\nx = torch.zeros(1).cuda()\n")
    assert [(d.code, d.start.row) for d in lint_path(bom, "bom.py", ALL).diagnostics] == [
        ("DEV003", 2)
    ]


def test_missing_file_is_dev900(tmp_path: Path) -> None:
    [diagnostic] = lint_path(tmp_path / "gone.py", "gone.py", ALL).diagnostics
    assert diagnostic.code == "DEV900"


def test_deep_expression_is_checked_or_dev902() -> None:
    chain = " + ".join(["x"] * 3000)
    found = codes(f"import torch\nx = torch.zeros(1).cuda()\ny = {chain}\n")
    assert found == [(2, "DEV003")]


def test_brackets_nested_beyond_python_limit_are_dev901() -> None:
    nested = "f(" * 5000 + "x" + ")" * 5000
    [diagnostic] = check_text(f"y = {nested}\n", "t.py", ALL)
    assert diagnostic.code == "DEV901"
    assert "nested" in diagnostic.message
    # Deeper than MAX_BRACKET_DEPTH, within CPython's limit: asked to CPython, then checked.
    # (Parentheses: 150 nested calls take the analysis seconds, a question for bench/.)
    within_limit = "(" * 150 + "x.cuda()" + ")" * 150
    assert codes(f"y = {within_limit}\n") == [(1, "DEV003")]


def _notebook(cells: list[tuple[str, str]]) -> str:
    return json.dumps(
        {
            "cells": [
                {"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True)}
                for kind, text in cells
            ],
            "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


def test_notebook_diagnostics_name_the_cell(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_text(
        _notebook(
            [
                ("code", "!nvidia-smi\nimport torch\n%timeit 1 + 1"),
                ("markdown", "# Train"),
                ("code", "model = torch.nn.Linear(2, 2)\nmodel = model.cuda()"),
            ]
        )
    )
    [diagnostic] = lint_path(path, "nb.ipynb", ALL).diagnostics
    assert (diagnostic.code, diagnostic.cell, diagnostic.start.row) == ("DEV003", 3, 2)


def test_broken_notebook_is_dev900(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_text("{not json")
    [diagnostic] = lint_path(path, "nb.ipynb", ALL).diagnostics
    assert diagnostic.code == "DEV900"
