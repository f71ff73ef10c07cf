"""Start-up stays lazy: what each command imports, checked in a fresh interpreter.

No timings here (bench/startup.py measures them); the imports are what makes them, and a
module-level import that creeps back in fails these tests instead of slowing every run.
"""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from devlint.cli import DefaultGroup

# Run devlint's main in a fresh interpreter and print the top-level packages and the
# devlint modules it imported.
PROBE = """
import json, sys
from devlint.cli import main
try:
    main({args!r})
except SystemExit as done:
    code = done.code
print(json.dumps([code, sorted({{m.split(".")[0] for m in sys.modules}}),
                  sorted(m for m in sys.modules if m.startswith("devlint"))]))
"""
HEAVY = {"libcst", "rich", "pygls", "lsprotocol", "torch", "pathspec", "packaging", "pygments"}
BUG = "import torch\nx = torch.zeros(3).cuda()\n"


def imported(args: list[str], cwd: Path) -> tuple[int, set[str], set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    code, packages, modules = json.loads(done.stdout.splitlines()[-1])
    return code, set(packages), set(modules)


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["check", "--help"]])
def test_version_and_help_import_click_and_no_more(args: list[str], tmp_path: Path) -> None:
    code, packages, modules = imported(args, tmp_path)
    assert code == 0
    unwanted = packages & (HEAVY | {"logging", "tempfile", "difflib"})
    assert not unwanted
    assert modules == {"devlint", "devlint.cli", "devlint.formats"}


def test_a_one_file_check_imports_what_checking_needs_only(tmp_path: Path) -> None:
    """libcst and the rules, not the language server, rich, notebooks, fixing's writes, the
    pattern matcher (no excludes apply to a named file) or packaging (the project's torch
    requirement is read without it)."""
    (tmp_path / "pyproject.toml").write_text('[project]\ndependencies = ["torch>=2.4"]\n')
    (tmp_path / "train.py").write_text(BUG)
    code, packages, modules = imported(["check", "--no-cache", "train.py"], tmp_path)
    assert code == 1  # the bug is found
    assert "libcst" in packages
    unwanted = packages & (HEAVY - {"libcst"} | {"tempfile", "difflib", "hashlib"})
    assert not unwanted
    assert not {"devlint.notebooks", "devlint.server", "devlint.verify"} & modules


def test_the_lazy_commands_help_is_their_own() -> None:
    """`devlint --help` lists the lazy commands from DefaultGroup's table, unimported."""
    for name, (module, help_text) in DefaultGroup.lazy_commands.items():
        command = getattr(importlib.import_module(module), name)
        assert inspect.cleandoc(command.help or "").split("\n\n")[0] == help_text, name
