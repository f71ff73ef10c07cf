"""One settings path: every entry point resolves a project's settings the same way.

``devlint check`` (``--show-settings`` and the pipeline), the language server, ``devlint
run`` and ``devlint verify``'s fixtures all go through ``api.project_settings``; here the
same projects are resolved through each and compared.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_devlint

from devlint.api import LintRequest, project_settings, request_settings
from devlint.testing import fixture_options
from devlint.torch_target import DEFAULT_TARGET_TORCH
from devlint.verify.run_script import script_options

PROJECTS = {
    "requirements.txt": ({"requirements.txt": "numpy\ntorch>=2.9\n"}, (2, 9)),
    "pyproject dependency": (
        {"pyproject.toml": '[project]\nname = "x"\ndependencies = ["torch>=2.8"]\n'},
        (2, 8),
    ),
    "pyproject table": (
        {
            "pyproject.toml": '[tool.devlint]\ntarget-torch = "2.6"\n',
            "requirements.txt": "torch>=2.9\n",
        },
        (2, 6),
    ),
    "pyproject table and dependency": (
        {
            "pyproject.toml": '[project]\nname = "x"\ndependencies = ["torch>=2.7"]\n\n'
            '[tool.devlint]\nselect = ["DEV"]\n'
        },
        (2, 7),
    ),
    "devlint.toml": ({"devlint.toml": 'target-torch = "2.10"\n'}, (2, 10)),
    "devlint.toml beside requirements": (
        {"devlint.toml": 'extend-select = ["DEV017"]\n', "requirements.txt": "torch>=2.11\n"},
        (2, 11),
    ),
    "nothing": ({}, DEFAULT_TARGET_TORCH),
}


def shown_target(path: Path, cwd: Path) -> tuple[int, int]:
    result = run_devlint("check", "--show-settings", str(path), cwd=cwd)
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("target-torch"))
    major, minor = line.split(" = ")[1].strip('"').split(".")
    return int(major), int(minor)


@pytest.mark.parametrize("variant", list(PROJECTS))
def test_every_entry_point_resolves_the_same_settings(variant: str, tmp_path: Path) -> None:
    pytest.importorskip("pygls")
    from devlint.server import SettingsCache

    files, target = PROJECTS[variant]
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    for name, text in files.items():
        (project / name).write_text(text)
    script = project / "src" / "train.py"
    script.write_text("import torch\nx = torch.ones(2).cuda()\n")

    one = project_settings(script)
    resolved = {
        "api.project_settings": one.target_torch,
        "devlint check": request_settings(LintRequest((script,))).target_torch,
        "devlint check (folder)": request_settings(LintRequest((project,))).target_torch,
        "devlint check --show-settings": shown_target(script, project),
        "language server": SettingsCache().settings_for(script).target_torch,
        "devlint run": script_options(script).target_torch,
    }
    assert resolved == dict.fromkeys(resolved, target)
    server = SettingsCache().settings_for(script)
    assert server.enabled == one.enabled
    assert server.options_for(script) == one.options_for(script)
    assert script_options(script).codes >= one.options_for(script).codes  # run selects ALL


def test_verify_fixtures_resolve_through_the_same_function(tmp_path: Path) -> None:
    """A fixture folder is a project whose devlint.toml is the configuration (isolated from
    the repository's own when it has none)."""
    folder = tmp_path / "DEV017"
    folder.mkdir()
    (folder / "devlint.toml").write_text('target-torch = "2.9"\n')
    (tmp_path / "requirements.txt").write_text("torch>=2.4\n")
    program = folder / "bad_x.py"
    program.write_text("import torch\n")
    assert fixture_options(program).target_torch == (2, 9)
    assert project_settings(program).target_torch == (2, 9)
    assert "DEV017" in fixture_options(program).codes
    (folder / "devlint.toml").unlink()
    assert fixture_options(program).target_torch == DEFAULT_TARGET_TORCH
