"""``# noqa`` directives: suppression, unused directives (DEV015) and ``--add-noqa``."""

from __future__ import annotations

import json
import logging
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import run_devlint

from devlint.api import lint_path, lint_text
from devlint.diagnostics import Diagnostic
from devlint.engine import CheckOptions, check_text
from devlint.fixing import apply_fixes
from devlint.noqa import (
    INVALID_CODE_SUFFIX,
    INVALID_SUFFIX,
    MISSING_CODES,
    line_directives,
)
from devlint.rule import all_rules
from devlint.source import split_lines

DEFAULT = frozenset(code for code, rule in all_rules().items() if rule.default)
WITH_UNUSED = CheckOptions(DEFAULT | {"DEV015"})
CUDA = "x = torch.zeros(1).cuda()"
CLEAN = "y = torch.zeros(1)"


def check(text: str, options: CheckOptions = WITH_UNUSED) -> list[Diagnostic]:
    return check_text(f"import torch\n{text}", "t.py", options)


def found(text: str, options: CheckOptions = WITH_UNUSED) -> list[tuple[int, str, str]]:
    return [(d.start.row, d.code, d.message) for d in check(text, options)]


def fixed(text: str) -> str:
    source = f"import torch\n{text}"
    fixes = [d.fix for d in check_text(source, "t.py", WITH_UNUSED) if d.code == "DEV015"]
    result, _ = apply_fixes(source, [fix for fix in fixes if fix])
    return result.removeprefix("import torch\n")


# --- parsing and suppression -------------------------------------------------------------


def test_directives_come_from_comments_only() -> None:
    text = 's = "# noqa: DEV003"\nt = 1  # see below  # NOQA:DEV001,DEV003\n'
    [directive] = line_directives(text).values()
    assert directive.row == 2
    assert [code.code for code in directive.codes or ()] == ["DEV001", "DEV003"]


@pytest.mark.parametrize(
    ("comment", "codes"),
    [
        ("# noqa", None),
        ("# NOQA  # why", None),
        ("# noqa because the API is CUDA-only", None),  # a blanket with a reason, as in ruff
        ("#noqa:DEV001,DEV003", ["DEV001", "DEV003"]),
        ("# noqa :DEV003", ["DEV003"]),
        ("# noqa: DEV001 see issue 12", ["DEV001"]),  # the first non-code word ends the list
        ("# noqa: DEV001, dev003", ["DEV001"]),  # codes are upper-case, as in ruff
        ("# noqa: DEV001DEV003", ["DEV001", "DEV003"]),
        ("# type: ignore  # noqa: DEV007", ["DEV007"]),
    ],
)
def test_directives_are_read_as_ruff_reads_them(comment: str, codes: list[str] | None) -> None:
    [directive] = line_directives(f"x = 1  {comment}\n").values()
    assert (None if directive.codes is None else [c.code for c in directive.codes]) == codes


@pytest.mark.parametrize(
    ("comment", "reason"),
    [
        ("# noqa: some words", MISSING_CODES),
        ("# noqa: dev003", MISSING_CODES),
        ("# noqa:", MISSING_CODES),
        ("# noqa; DEV003", INVALID_SUFFIX),
        ("#noqaDEV003", INVALID_SUFFIX),
        ("# noqa: DEV003abc", INVALID_CODE_SUFFIX),
    ],
)
def test_invalid_directives_suppress_nothing_and_warn(
    comment: str, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert [code for _, code, _ in found(f"{CUDA}  {comment}\n")] == ["DEV003"]
    with caplog.at_level(logging.WARNING, logger="devlint"):
        linted = lint_text(f"import torch\n{CUDA}  {comment}\n".encode(), "t.py", WITH_UNUSED)
    assert [d.code for d in linted.diagnostics] == ["DEV003"]
    assert caplog.messages == [f"Invalid `# noqa` directive on t.py:2: {reason}"]
    assert line_directives(f"{CUDA}  {comment}\n") == {}


def test_valid_directives_do_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    text = f"{CUDA}  # noqa: DEV003\n{CUDA}  # noqa\n{CUDA}  # noqa because\n"
    with caplog.at_level(logging.WARNING, logger="devlint"):
        assert lint_text(f"import torch\n{text}".encode(), "t.py", WITH_UNUSED).diagnostics == []
    assert caplog.messages == []


def test_invalid_directive_in_a_notebook_names_the_cell(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "nb.ipynb"
    _notebook(path, ["import torch\n", f"{CLEAN}\n{CUDA}  # noqa: move later"])
    with caplog.at_level(logging.WARNING, logger="devlint"):
        found = [
            (d.code, d.cell, d.start.row)
            for d in lint_path(path, "nb.ipynb", WITH_UNUSED).diagnostics
        ]
    assert found == [("DEV003", 2, 2)]
    assert caplog.messages == [f"Invalid `# noqa` directive on nb.ipynb:cell 2:2: {MISSING_CODES}"]


def test_cli_prints_the_warning_once_on_stderr(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(f"import torch\n{CUDA}  # noqa: later\n")
    result = devlint("--fix", "t.py", cwd=tmp_path)
    warning = f"warning: Invalid `# noqa` directive on t.py:2: {MISSING_CODES}"
    assert result.stderr.splitlines().count(warning) == 1, result.stderr


def test_a_directive_in_a_string_suppresses_nothing() -> None:
    assert [code for _, code, _ in found(f'{CUDA}; s = "# noqa"\n')] == ["DEV003"]


def test_lines_are_counted_as_python_counts_them() -> None:
    # str.splitlines() also breaks at form feeds, which shifted every later directive.
    assert split_lines("a\x0cb\r\nc\rd\ne", keepends=True) == ["a\x0cb\r\n", "c\r", "d\n", "e"]
    assert found(f"\x0c\n{CUDA}  # noqa: DEV003\n") == []


def test_file_level_noqa_silences_internal_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("devlint.engine.analyze", broken)
    assert [code for _, code, _ in found(f"{CUDA}  # noqa: DEV003\n")] == ["DEV902"]
    assert found(f"# devlint: noqa\n{CUDA}\n") == []
    assert found(f"# devlint: noqa: DEV902\n{CUDA}\n") == []


# --- DEV015 unused-noqa --------------------------------------------------------------------


def test_unused_noqa_is_off_by_default() -> None:
    assert found(f"{CLEAN}  # noqa: DEV003\n", CheckOptions(DEFAULT)) == []


def test_used_directives_are_not_reported() -> None:
    assert found(f"{CUDA}  # noqa: DEV003\n{CUDA}  # noqa\n") == []


def test_unused_codes_are_reported() -> None:
    assert found(f"{CLEAN}  # noqa: DEV003\n{CUDA}  # noqa: DEV003, DEV007\n") == [
        (2, "DEV015", "Unused `noqa` directive (unused: `DEV003`)"),
        (3, "DEV015", "Unused `noqa` directive (unused: `DEV007`)"),
    ]


def test_blanket_directives_are_never_judged_unused() -> None:
    # A blanket directive may silence flake8 or ruff on that line: devlint cannot tell.
    assert found(f"import os  # noqa\n{CLEAN}  # noqa\n{CLEAN}  # NOQA  # why\n") == []
    assert found(f"{CUDA}  # noqa\n") == []  # and it still silences devlint
    assert fixed(f"{CLEAN}  # noqa\n{CLEAN}  # noqa: DEV003\n") == f"{CLEAN}  # noqa\n{CLEAN}\n"


def test_unknown_devlint_codes_are_reported_and_removed() -> None:
    assert found(f"{CUDA}  # noqa: DEV0003\n") == [
        (2, "DEV003", "`.cuda()` without a CUDA availability check"),
        (2, "DEV015", "Unused `noqa` directive (unknown: `DEV0003`)"),
    ]
    assert found(f"{CLEAN}  # noqa: DEV003, DEV999, E501\n") == [
        (2, "DEV015", "Unused `noqa` directive (unused: `DEV003`; unknown: `DEV999`)")
    ]
    assert fixed(f"{CLEAN}  # noqa: DEV999, E501\n") == f"{CLEAN}  # noqa: E501\n"
    assert fixed(f"{CLEAN}  # noqa: DEV0003\n") == f"{CLEAN}\n"


def test_only_selected_devlint_codes_are_judged() -> None:
    # DEV010 is off by default; E501 belongs to another linter; XYZ999 to nobody.
    assert found(f"{CLEAN}  # noqa: DEV010, E501, XYZ999\n") == []
    selected = CheckOptions(DEFAULT | {"DEV010", "DEV015"})
    assert [row for row, _, _ in found(f"{CLEAN}  # noqa: DEV010\n", selected)] == [2]
    assert found(f"{CLEAN}  # noqa: DEV003\n", CheckOptions(frozenset({"DEV001", "DEV015"}))) == []


def test_unused_noqa_can_itself_be_silenced() -> None:
    assert found(f"{CLEAN}  # noqa: DEV003, DEV015\n") == []
    assert found(f"# devlint: noqa: DEV015\n{CLEAN}  # noqa: DEV003\n") == []
    assert found(f"# devlint: noqa\n{CLEAN}  # noqa: DEV003\n") == []


def test_not_judged_when_the_rules_did_not_run() -> None:
    assert [code for _, code, _ in found(f"{CLEAN}  # noqa: DEV003\nx = (\n")] == ["DEV901"]


def test_position_and_fix_safety() -> None:
    [diagnostic] = check(f"{CLEAN}  # noqa: DEV003\n")
    assert (diagnostic.start.row, diagnostic.start.column) == (2, 21)
    assert (diagnostic.end.row, diagnostic.end.column) == (2, 35)
    assert diagnostic.fix is not None and diagnostic.fix.applicability == "safe"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (f"{CLEAN}  # noqa: DEV003\n", f"{CLEAN}\n"),
        (f"{CLEAN}  # noqa\n", f"{CLEAN}  # noqa\n"),  # blanket: kept
        (f"{CUDA}  # noqa: DEV007, DEV003, E501\n", f"{CUDA}  # noqa: DEV003, E501\n"),
        (f"{CLEAN}  # noqa: DEV001  # type: ignore\n", f"{CLEAN}  # type: ignore\n"),
        (f"{CLEAN}  # type: ignore  # noqa: DEV001\n", f"{CLEAN}  # type: ignore\n"),
        (f"{CLEAN}  # noqa: DEV001 stale since the fix\n", f"{CLEAN}  # stale since the fix\n"),
        (f"# noqa: DEV003\n{CLEAN}\n", f"{CLEAN}\n"),
        (f"{CLEAN}\r\n    # noqa: DEV001\r\n", f"{CLEAN}\r\n"),
        (f"{CLEAN}\n# noqa: DEV001", f"{CLEAN}\n"),
        (f"{CLEAN}\r\n    # noqa\r\n", f"{CLEAN}\r\n    # noqa\r\n"),
        (f"{CLEAN}  # noqa: DEV003", f"{CLEAN}"),
        (f"{CLEAN}  # noqa: DEV003, DEV001\n", f"{CLEAN}\n"),
    ],
)
def test_fix_removes_only_the_unused_part(line: str, expected: str) -> None:
    assert fixed(line) == expected
    assert found(expected) == []


def _notebook(path: Path, cells: list[str]) -> None:
    path.write_text(
        json.dumps(
            {
                "cells": [
                    {"cell_type": "code", "metadata": {}, "source": text.splitlines(True)}
                    for text in cells
                ],
                "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )


def test_unused_noqa_in_notebooks_names_the_cell(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    _notebook(
        path,
        [
            "import torch  # noqa\n%matplotlib inline  # noqa: DEV003",
            f"{CUDA}\n{CLEAN}  # noqa: DEV003",
        ],
    )
    found = [
        (d.code, d.cell, d.start.row) for d in lint_path(path, "nb.ipynb", WITH_UNUSED).diagnostics
    ]
    assert found == [("DEV003", 2, 1), ("DEV015", 2, 2)]


# --- --add-noqa ----------------------------------------------------------------------------


def devlint(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_devlint("check", "--no-cache", *args, cwd=cwd, stdin=stdin)


def test_add_noqa_merges_keeps_comments_and_is_idempotent(tmp_path: Path) -> None:
    source = (
        "import torch\n"
        f"{CUDA}\n"
        f"{CUDA}  # type: ignore[attr-defined]\n"
        f"{CUDA}  # noqa: E501\n"
        "y = torch.zeros(1).cuda() + len('''\n"  # this line ends inside a string
        "''')\n"
        "z = torch.load('w.pt').cuda()\n"
    )
    path = tmp_path / "train.py"
    path.write_text(source)
    first = devlint("--add-noqa", "train.py", cwd=tmp_path)
    assert first.returncode == 1, first.stderr
    assert first.stderr.splitlines() == [
        "train.py:5: not added: the line ends inside a string or with a backslash",
        "Added 5 noqa directives.",
    ]
    assert path.read_text().splitlines()[1:] == [
        f"{CUDA}  # noqa: DEV003",
        f"{CUDA}  # type: ignore[attr-defined]  # noqa: DEV003",
        f"{CUDA}  # noqa: E501, DEV003",
        "y = torch.zeros(1).cuda() + len('''",
        "''')",
        "z = torch.load('w.pt').cuda()  # noqa: DEV003, DEV007",
    ]
    before = path.read_bytes()
    second = devlint("--add-noqa", "train.py", cwd=tmp_path)
    assert second.stderr.splitlines()[-1] == "Added 0 noqa directives."
    assert path.read_bytes() == before
    assert [
        line.split(":")[1]
        for line in devlint(
            "-q", "--output-format", "concise", "train.py", cwd=tmp_path
        ).stdout.splitlines()
    ] == ["5"]


def test_add_noqa_preserves_bytes_encoding_and_mode(tmp_path: Path) -> None:
    crlf = tmp_path / "crlf.py"
    crlf.write_bytes(f"\ufeffimport torch\r\n{CUDA}\r\n{CLEAN}\r\n".encode())
    crlf.chmod(0o750)
    latin = tmp_path / "latin.py"
    latin.write_bytes(
        f"# -*- coding: latin-1 -*-\nimport torch\n{CUDA}  # caf\xe9\n".encode("latin-1")
    )
    clean = tmp_path / "clean.py"
    clean.write_bytes(b"import torch\r\ny = 1\n\x0c\n")
    clean_before = clean.read_bytes()
    result = devlint("--add-noqa", ".", cwd=tmp_path)
    assert (result.returncode, result.stderr.strip()) == (0, "Added 2 noqa directives.")
    assert (
        crlf.read_bytes() == f"\ufeffimport torch\r\n{CUDA}  # noqa: DEV003\r\n{CLEAN}\r\n".encode()
    )
    assert stat.S_IMODE(crlf.stat().st_mode) == 0o750
    assert (
        latin.read_bytes().decode("latin-1").splitlines()[2] == f"{CUDA}  # caf\xe9  # noqa: DEV003"
    )
    assert clean.read_bytes() == clean_before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clean.py", "crlf.py", "latin.py"]
    assert devlint(".", cwd=tmp_path).returncode == 0


def test_add_noqa_writes_through_symlinks(tmp_path: Path) -> None:
    (tmp_path / "real.py").write_text(f"import torch\n{CUDA}\n")
    (tmp_path / "link.py").symlink_to("real.py")
    assert devlint("--add-noqa", "link.py", cwd=tmp_path).returncode == 0
    assert (tmp_path / "link.py").is_symlink()
    assert (tmp_path / "real.py").read_text().endswith("# noqa: DEV003\n")


def test_add_noqa_leaves_notebooks_and_rejects_stdin(tmp_path: Path) -> None:
    notebook = tmp_path / "nb.ipynb"
    _notebook(notebook, ["import torch", CUDA])
    before = notebook.read_bytes()
    result = devlint("--add-noqa", "nb.ipynb", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "nb.ipynb: --add-noqa does not support notebooks yet",
        "Added 0 noqa directives.",
    ]
    assert notebook.read_bytes() == before
    piped = devlint("--add-noqa", "-", cwd=tmp_path, stdin=f"import torch\n{CUDA}\n")
    assert piped.returncode == 2
    assert piped.stderr.strip() == "error: --add-noqa cannot change stdin; give file paths"
