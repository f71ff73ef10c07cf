"""Bad input, one table: every row runs the real command line on a small project.

Each row asserts what the user sees: a one-line error with exit 2 (never a traceback), or
the right DEV900 / DEV901 / DEV902 diagnostic while the project's other files are still
checked (``other_bug.py`` is reported, ``other_clean.py`` is not), and the exit code.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import run_devlint

BUG = "import torch\nx = torch.zeros(1).cuda()\n"
OTHER = {"other_bug.py": [("DEV003", 2)]}  # reported whenever the run reaches it


def notebook(cells: list[str], language: str = "python") -> str:
    return json.dumps(
        {
            "cells": [
                {"cell_type": "code", "metadata": {}, "outputs": [], "source": text}
                for text in cells
            ],
            "metadata": {"kernelspec": {"language": language, "name": language}},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


def symlink_loop(root: Path) -> None:
    (root / "loop_a.py").symlink_to("loop_b.py")
    (root / "loop_b.py").symlink_to("loop_a.py")


def unreadable(root: Path) -> None:
    (root / "locked.py").write_text(BUG)
    (root / "locked.py").chmod(0)


def device_file(root: Path) -> None:
    (root / "mem.py").symlink_to("/proc/self/mem")  # reading it fails with EIO, even as root


@dataclass(frozen=True)
class Row:
    id: str
    files: dict[str, str | bytes] = field(default_factory=dict)
    args: tuple[str, ...] = (".",)
    # relative path (or "-") -> [(code, row)]; other files must have no diagnostics
    expect: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    exit: int = 1
    stderr: str = ""  # the whole of stderr, one line (exit 2: the error)
    message: str = ""  # a part of the message of the first expected diagnostic
    setup: Callable[[Path], None] | None = None
    stdin: bytes | None = None
    skip: str | None = None


CHAIN = "y = " + " + ".join(["a"] * 3000) + "\n"
# A generated table (10,000 lines; how the time grows with size is bench/'s question).
BIG = "import torch\nTABLE = [\n" + "".join(f"    {i * 0.5},\n" for i in range(9_996))
BIG += "]\nw = torch.tensor(TABLE).cuda()\n"
PAYLOAD = b"\x7fELF\x02\x01\x01\x00\x00\x00"
NOT_ROOT = "running as root: chmod 000 does not stop root from reading (see device-file-eio)"
NO_PROC = "needs Linux /proc/self/mem"

ROWS = [
    # --- paths ---------------------------------------------------------------------------
    Row("missing-path", args=(".", "nowhere/"), expect={**OTHER, "nowhere": [("DEV900", 1)]},
        message="No such file or directory"),
    Row("explicit-txt-file-is-checked-as-python", {"notes.txt": "Remember the milk.\n"},
        args=(".", "notes.txt"), expect={**OTHER, "notes.txt": [("DEV901", 1)]},
        message="syntax error"),
    Row("folder-of-binaries-is-skipped", {"bins/lib.so": PAYLOAD, "bins/logo.png": b"\x89PNG\r\n"},
        args=("bins", "other_bug.py"), expect=OTHER),
    Row("only-binaries-warns", {"bins/lib.so": PAYLOAD}, args=("bins",), exit=0,
        stderr="warning: no Python files found under the given paths"),
    Row("explicit-binaries", {"bins/logo.png": b"\x89PNG\r\n\x1a\n", "bins/lib.so": PAYLOAD},
        args=("bins/logo.png", "bins/lib.so", "other_bug.py"),
        expect={**OTHER, "bins/logo.png": [("DEV900", 1)], "bins/lib.so": [("DEV901", 1)]},
        message="not valid utf-8"),
    Row("symlink-loop-named", args=("loop_a.py", "other_bug.py"), setup=symlink_loop,
        expect={**OTHER, "loop_a.py": [("DEV900", 1)]}, message="symbolic links"),
    Row("symlink-loop-in-folder-is-skipped", setup=symlink_loop, expect=OTHER),
    Row("dangling-symlink-named", args=("gone.py", "other_bug.py"),
        setup=lambda root: (root / "gone.py").symlink_to("missing.py"),
        expect={**OTHER, "gone.py": [("DEV900", 1)]}, message="No such file"),
    Row("unreadable-chmod-000", setup=unreadable, expect={**OTHER, "locked.py": [("DEV900", 1)]},
        message="Permission denied", skip=NOT_ROOT if os.geteuid() == 0 else None),
    Row("device-file-eio", args=("mem.py", "other_bug.py"), setup=device_file,
        expect={**OTHER, "mem.py": [("DEV900", 1)]}, message="cannot read file",
        skip=None if Path("/proc/self/mem").exists() else NO_PROC),
    # --- encodings and layout --------------------------------------------------------------
    Row("latin-1-without-cookie", {"latin.py": b"name = 'caf\xe9'\n"},
        expect={**OTHER, "latin.py": [("DEV900", 1)]}, message="not valid utf-8"),
    Row("latin-1-with-cookie", {"latin.py": b"# -*- coding: latin-1 -*-\n" + BUG.encode() + b"# \xe9\n"},
        expect={**OTHER, "latin.py": [("DEV003", 3)]}),
    Row("unknown-cookie-encoding", {"odd.py": b"# -*- coding: klingon -*-\n" + BUG.encode()},
        expect={**OTHER, "odd.py": [("DEV003", 3)]}),  # read as UTF-8, like most tools
    Row("utf-8-bom", {"bom.py": b"\xef\xbb\xbf" + BUG.encode()},
        expect={**OTHER, "bom.py": [("DEV003", 2)]}),
    Row("crlf", {"crlf.py": BUG.replace("\n", "\r\n")}, expect={**OTHER, "crlf.py": [("DEV003", 2)]}),
    Row("mixed-line-endings", {"mixed.py": "import torch\r\n\ny = 1\rx = torch.zeros(1).cuda()\n"},
        expect={**OTHER, "mixed.py": [("DEV003", 4)]}),
    Row("form-feed", {"ff.py": "import torch\n\x0c\nx = torch.zeros(1).cuda()  # noqa: DEV003\n"},
        expect=OTHER),
    Row("tabs", {"tabs.py": "import torch\nif True:\n\tx = torch.zeros(1).cuda()\n"},
        expect={**OTHER, "tabs.py": [("DEV003", 3)]}),
    Row("tabs-and-spaces-mixed", {"mixed.py": "if True:\n\tx = 1\n        y = 2\n"},
        expect={**OTHER, "mixed.py": [("DEV901", 3)]}, message="inconsistent use of tabs"),
    Row("empty-file", {"empty.py": ""}, expect=OTHER),
    Row("null-bytes", {"nul.py": "x = 1\x00\n"}, expect={**OTHER, "nul.py": [("DEV901", 1)]}),
    # --- size and depth ----------------------------------------------------------------------
    Row("10000-lines", {"big.py": BIG}, expect={**OTHER, "big.py": [("DEV003", 10_000)]}),
    Row("150-nested-parens", {"deep.py": "import torch\ny = " + "(" * 150 + "torch.zeros(1).cuda()" + ")" * 150 + "\n"},
        expect={**OTHER, "deep.py": [("DEV003", 2)]}),
    Row("1000-nested-parens", {"deep.py": "y = " + "(" * 1000 + "x" + ")" * 1000 + "\n"},
        expect={**OTHER, "deep.py": [("DEV901", 1)]}, message="too many nested parentheses"),
    Row("3000-term-chain", {"chain.py": BUG + CHAIN}, expect={**OTHER, "chain.py": [("DEV003", 2)]}),
    # --- syntax --------------------------------------------------------------------------------
    Row("syntax-error", {"broken.py": "def f(:\n    pass\n"},
        expect={**OTHER, "broken.py": [("DEV901", 1)]}, message="syntax error"),
    Row("python-2-print", {"py2.py": 'print "hello"\n'},
        expect={**OTHER, "py2.py": [("DEV901", 1)]}, message="Missing parentheses"),
    # --- notebooks -------------------------------------------------------------------------------
    Row("notebook-broken-json", {"nb.ipynb": '{"cells": [\n'},
        expect={**OTHER, "nb.ipynb": [("DEV900", 1)]}, message="invalid JSON"),
    Row("notebook-not-an-object", {"nb.ipynb": "[]"},
        expect={**OTHER, "nb.ipynb": [("DEV900", 1)]}, message="no list of cells"),
    Row("notebook-r-kernel", {"nb.ipynb": notebook(["library(torch)\nx <- torch_zeros(1)$cuda()"], "R")},
        expect=OTHER),
    Row("notebook-syntax-error-in-cell", {"nb.ipynb": notebook(["import torch", "x = (\n"])},
        expect={**OTHER, "nb.ipynb": [("DEV901", 1)]}),
    # --- configuration and options ---------------------------------------------------------------
    Row("config-wrong-type", {"pyproject.toml": '[tool.devlint]\nselect = "DEV001"\n'}, exit=2,
        stderr="error: invalid value for 'select' in [tool.devlint] of pyproject.toml: expected a "
        "list of rule codes or prefixes (strings), got 'DEV001' (a string)"),
    Row("config-unknown-key", {"pyproject.toml": "[tool.devlint]\nselct = ['DEV001']\n"}, exit=2,
        stderr="error: unknown key 'selct' (did you mean 'select'?) in [tool.devlint] of pyproject.toml"),
    Row("config-invalid-toml", {"pyproject.toml": "[tool.devlint]\nselect = [\n"}, exit=2,
        stderr="error: invalid TOML in pyproject.toml: Invalid value (at end of document)"),
    Row("select-unknown-code", args=(".", "--select", "DEV001,XYZ999"), exit=2,
        stderr="error: unknown rule code(s) in select: XYZ999"),
    Row("noqa-with-unknown-code", {"noqa.py": "import torch\nx = torch.zeros(1).cuda()  # noqa: XYZ999\n"},
        args=(".", "--extend-select", "DEV015"), expect={**OTHER, "noqa.py": [("DEV003", 2)]}),
    # --- stdin -----------------------------------------------------------------------------------
    Row("stdin-without-filename", args=("-",), stdin=BUG.encode(), expect={"-": [("DEV003", 2)]}),
    Row("stdin-not-utf-8", args=("-",), stdin=b"name = 'caf\xe9'\n",
        expect={"-": [("DEV900", 1)]}, message="not valid utf-8"),
    Row("stdin-with-cookie", args=("-",), stdin=b"# coding: latin-1\n" + BUG.encode() + b"# \xe9\n",
        expect={"-": [("DEV003", 3)]}),
    Row("stdin-with-paths", args=("-", "other_bug.py"), stdin=BUG.encode(), exit=2,
        stderr="error: `-` (stdin) cannot be combined with other paths"),
]  # fmt: skip


def run(root: Path, args: tuple[str, ...], stdin: bytes | None) -> subprocess.CompletedProcess[str]:
    command = ("check", "--no-cache", "--output-format", "json", *args)
    return run_devlint(*command, cwd=root, stdin=stdin if stdin is not None else b"")


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_bad_input(row: Row, tmp_path: Path) -> None:
    if row.skip:
        pytest.skip(row.skip)
    (tmp_path / "other_bug.py").write_text(BUG)
    (tmp_path / "other_clean.py").write_text("import torch\nx = torch.zeros(1)\n")
    for name, content in row.files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))
    if row.setup is not None:
        row.setup(tmp_path)

    result = run(tmp_path, row.args, row.stdin)

    assert "Traceback" not in result.stderr
    assert result.returncode == row.exit, result.stderr
    assert result.stderr.strip() == row.stderr
    if row.exit == 2:
        assert result.stdout == ""
        return
    found: dict[str, list[tuple[str, int]]] = {}
    messages = []
    for item in json.loads(result.stdout):
        name = item["filename"]
        name = "-" if name == "-" else Path(name).relative_to(tmp_path.resolve()).as_posix()
        found.setdefault(name, []).append((item["code"], item["location"]["row"]))
        messages.append(item["message"])
    assert found == row.expect
    if row.message:
        assert any(row.message in message for message in messages), messages
