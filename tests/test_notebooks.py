"""Notebooks: IPython syntax only where a statement starts, timed code analysed, cell diffs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_devlint

from devlint.api import FixMode, lint_path, lint_text
from devlint.engine import CheckOptions
from devlint.notebooks import read_notebook, rewrite
from devlint.rule import all_rules

DEFAULTS = CheckOptions(frozenset(code for code, rule in all_rules().items() if rule.default))


def notebook(*cells: str, indent: int = 1) -> bytes:
    """A notebook of code cells (a cell starting with ``md:`` is markdown)."""
    return (
        json.dumps(
            {
                "cells": [
                    {
                        "cell_type": "markdown" if text.startswith("md:") else "code",
                        "metadata": {},
                        "source": text.removeprefix("md:").splitlines(keepends=True),
                    }
                    for text in cells
                ],
                "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
                "nbformat": 4,
                "nbformat_minor": 5,
            },
            indent=indent,
        )
        + "\n"
    ).encode()


def found(data: bytes) -> list[tuple[str, int | None, int, int]]:
    result = lint_text(data, "nb.ipynb", DEFAULTS)
    return [(d.code, d.cell, d.start.row, d.start.column) for d in result.diagnostics]


def test_a_percent_continuation_line_inside_brackets_is_python() -> None:
    data = notebook(
        "import torch\nx = torch.zeros(3).cuda()\n"
        'print("epoch %d loss %.3f"\n      % (1, 0.5))\n'
        "y = (1\n% 2)\n"
        '"""\n%not a magic inside a string\n"""\n'
    )
    assert found(data) == [("DEV003", 1, 2, 5)]


def test_magics_at_statement_starts_are_skipped_anywhere_in_a_cell() -> None:
    data = notebook(
        "!nvidia-smi\nimport torch\nfiles = !ls\n%matplotlib inline\ntorch.zeros?\n"
        "# is this a question?\nif True:\n    %load_ext autoreload\n"
        "x = torch.zeros(3).cuda()\n"
    )
    assert found(data) == [("DEV003", 1, 9, 5)]


def test_shell_escapes_go_on_past_a_backslash_and_a_first_line_indent() -> None:
    """``!tts ... \\`` with indented continuation lines, and a cell that starts with
    `` !tts`` (IPython drops a cell's leading indent): shell, not Python (coqui TTS's
    tutorials: stop 37's corpus sweep)."""
    data = notebook(
        "!tts --model_name en \\\n     --encoder_path x.pth \\\n     --out_path y.wav\n",
        " !tts --text 'hi' \\\n    --out_path z.wav",
        "import torch\nif True:\n    !echo a \\\n      b\n    x = torch.zeros(3).cuda()\n",
    )
    assert found(data) == [("DEV003", 3, 5, 9)]


def test_a_cell_whose_first_line_is_indented_runs_dedented_as_in_ipython(tmp_path: Path) -> None:
    """IPython removes the first line's indent from every line that starts with it (a
    pasted `` def f():`` cell runs): the cell is checked, at its own columns, not DEV901
    (machine-learning-book's chapter notebooks). Fixed lines get the indent back."""
    cell = " x = torch.zeros(3).cuda()\n for _ in range(2):\n     print(x)\nx\n %time y = x.cuda()"
    data = notebook("import torch", cell, "  \n  z = torch.ones(2).cuda()")
    assert found(data) == [("DEV003", 2, 1, 6), ("DEV003", 2, 5, 12), ("DEV003", 3, 2, 7)]
    source = read_notebook(data)
    assert source is not None
    assert rewrite(data, source.text) == data
    path = tmp_path / "nb.ipynb"
    path.write_bytes(data)
    result = lint_path(path, "nb.ipynb", DEFAULTS, FixMode())
    assert result.error is None and result.applied == {"DEV003": 3}
    cells = ["".join(cell["source"]) for cell in json.loads(path.read_bytes())["cells"]]
    assert cells[1].splitlines()[:4] == [
        " x = torch.zeros(3).to(device)",
        " for _ in range(2):",
        "     print(x)",
        "x",
    ]
    assert cells[2] == "  \n  z = torch.ones(2).to(device)"
    assert found(path.read_bytes()) == []


def test_time_magics_run_python_and_it_is_checked_at_its_own_columns() -> None:
    data = notebook(
        "import torch\n%time a = torch.zeros(3).cuda()\n%timeit -n 3 a.cuda()",
        "%%time\nb = torch.zeros(3).cuda()",
        "%%bash\necho $x.cuda()",
    )
    assert found(data) == [
        ("DEV003", 1, 2, 11),
        ("DEV003", 1, 3, 14),
        ("DEV008", 1, 3, 14),  # the moved tensor is discarded: the body is analysed
        ("DEV003", 2, 2, 5),
    ]


def test_fixing_timed_code_keeps_the_magic(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_bytes(notebook("import torch", "%time a = torch.zeros(3).cuda()", "%%bash\nls"))
    result = lint_path(path, "nb.ipynb", DEFAULTS, FixMode())
    assert result.applied == {"DEV003": 1} and result.error is None
    sources = ["".join(cell["source"]) for cell in json.loads(path.read_bytes())["cells"]]
    assert sources[1] == "%time a = torch.zeros(3).to(device)"
    assert sources[2] == "%%bash\nls"
    assert "device = torch.device(" in sources[0]


def test_a_fix_that_would_lose_a_magic_is_refused() -> None:
    data = notebook("import torch\n%time x = 1")
    source = read_notebook(data)
    assert source is not None
    with pytest.raises(Exception, match="IPython syntax"):
        rewrite(data, source.text.replace("  # devlint-magic: 0", ""))


def test_diff_headers_of_notebooks_and_scripts_alike(tmp_path: Path) -> None:
    """The path as shown, without git's a/ b/ prefixes, for a cell as for a script (ruff)."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "nb.ipynb").write_bytes(notebook("import torch\nx = torch.zeros(3).cuda()"))
    (tmp_path / "src" / "script.py").write_text("import torch\nx = torch.zeros(3).cuda()\n")
    result = run_devlint("--diff", "--no-cache", "src", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    headers = [line for line in result.stdout.splitlines() if line.startswith(("---", "+++"))]
    assert headers == [
        "--- src/nb.ipynb:cell 1",
        "+++ src/nb.ipynb:cell 1",
        "--- src/script.py",
        "+++ src/script.py",
    ]


def test_diff_prints_changed_cells_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    before = notebook("import torch", "md:# Title", "x = torch.zeros(3).cuda()\nprint(x)")
    path.write_bytes(before)
    result = run_devlint("--diff", "--no-cache", str(path), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert path.read_bytes() == before
    diff = result.stdout
    assert f"--- {path}:cell 3\n+++ {path}:cell 3\n" in diff
    assert "-x = torch.zeros(3).cuda()\n+x = torch.zeros(3).to(device)\n print(x)\n" in diff
    assert f"--- {path}:cell 1\n" in diff and ":cell 2" not in diff
    assert '\\"' not in diff and '"cells"' not in diff  # source lines, not the JSON


def test_notebook_is_fixed_in_place_with_layout_and_outputs_intact(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "language": "python",
        "display_name": "Py",
    }
    code = nbformat.v4.new_code_cell
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# Train"),
        code("!nvidia-smi\nimport torch\nfrom torch import nn"),
        code("%timeit y = 1\nmodel = nn.Linear(3, 1).cuda()\nx = torch.randn(4, 3).cuda()"),
        code("%%bash\necho hi"),
        code("print(model(x).detach().numpy())"),
    ]
    notebook.cells[2].outputs = [nbformat.v4.new_output("stream", text="hello\n")]
    path = tmp_path / "train.ipynb"
    nbformat.write(notebook, path)
    before = path.read_text()
    result = run_devlint("--fix", "--no-cache", "train.ipynb", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    after = nbformat.read(path, as_version=4)
    nbformat.validate(after)
    sources = [cell.source for cell in after.cells]
    assert sources[0] == "# Train" and sources[3] == "%%bash\necho hi"
    assert (
        sources[1].startswith("!nvidia-smi\nimport torch\n")
        and "device = torch.device(" in sources[1]
    )
    assert sources[2] == (
        "%timeit y = 1\nmodel = nn.Linear(3, 1).to(device)\nx = torch.randn(4, 3).to(device)"
    )
    assert sources[4] == "print(model(x).detach().cpu().numpy())"
    assert after.cells[2].outputs == notebook.cells[2].outputs
    edited = ("cuda()", "numpy", "from torch import nn")  # the last one gains a newline
    unchanged = [line for line in before.splitlines() if not any(e in line for e in edited)]
    assert set(unchanged) <= set(path.read_text().splitlines())  # the rest byte for byte
    assert run_devlint("--fix", "--no-cache", "train.ipynb", cwd=tmp_path).returncode == 0
    assert nbformat.read(path, as_version=4) == after
