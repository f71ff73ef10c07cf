"""Availability flags a project's script sets on its parsed options, read in another
module (``project_flags.py``): Informer's ``exp/exp_basic.py`` and ``main_informer.py``."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from devlint.analysis import project_flags
from devlint.api import LintRequest, lint
from devlint.engine import CheckOptions, check_text

OPTIONS = CheckOptions(frozenset({"DEV003", "DEV004"}))

EXPERIMENT = """
    import torch

    class Exp_Basic:
        def __init__(self, args):
            self.args = args
            self.device = self._acquire_device()

        def _acquire_device(self):
            if self.args.use_gpu:
                device = torch.device("cuda:{}".format(self.args.gpu))
            else:
                device = torch.device("cpu")
            return device
"""

SCRIPT = """
    import argparse
    import torch
    from exp.exp_basic import Exp_Basic

    parser = argparse.ArgumentParser()
    parser.add_argument("--use_gpu", type=bool, default=True)
    args = parser.parse_args()
    args.use_gpu = {flag}
    Exp_Basic(args)
"""


def _project(tmp_path: Path, flag: str, script: str = SCRIPT) -> Path:
    (tmp_path / "exp").mkdir()
    experiment = tmp_path / "exp" / "exp_basic.py"
    experiment.write_text(textwrap.dedent(EXPERIMENT).lstrip())
    (tmp_path / "main.py").write_text(textwrap.dedent(script.format(flag=flag)).lstrip())
    return experiment


def _codes(path: Path) -> list[tuple[int, str]]:
    options = CheckOptions(OPTIONS.codes, origin=path)
    return [(d.start.row, d.code) for d in check_text(path.read_text(), str(path), options)]


@pytest.mark.parametrize(
    "flag",
    [
        "True if torch.cuda.is_available() and args.use_gpu else False",
        "args.use_gpu and torch.cuda.is_available()",
        "torch.cuda.is_available()  # on when there is a GPU",
    ],
)
def test_a_flag_the_script_derives_from_availability_guards_the_module(
    tmp_path: Path, flag: str
) -> None:
    # The if/else is a CUDA-or-CPU choice (DEV004), and "cuda:{}" is guarded (no DEV003).
    assert _codes(_project(tmp_path, flag)) == [(9, "DEV004")]


@pytest.mark.parametrize(
    "flag",
    [
        "args.use_gpu",  # the user's option alone
        "not torch.cuda.is_available()",  # true where CUDA is missing
        "False if torch.cuda.is_available() else True",
        "args.use_gpu or torch.cuda.is_available()",
    ],
)
def test_other_flags_stay_the_users_options(tmp_path: Path, flag: str) -> None:
    assert _codes(_project(tmp_path, flag)) == [(10, "DEV003")]


def test_only_options_parsed_from_the_command_line(tmp_path: Path) -> None:
    script = SCRIPT.replace("args = parser.parse_args()", "args = load_settings()")
    assert _codes(_project(tmp_path, "torch.cuda.is_available()", script)) == [(10, "DEV003")]


@pytest.mark.parametrize("built", ["Data()", "config.Settings(path)"])
def test_a_settings_object_the_script_builds_holds_flags_too(tmp_path: Path, built: str) -> None:
    # NCRFpp's main.py: ``data = Data()``, then ``data.HP_gpu = torch.cuda.is_available()``
    script = SCRIPT.replace("args = parser.parse_args()", f"args = {built}")
    assert _codes(_project(tmp_path, "torch.cuda.is_available()", script)) == [(9, "DEV004")]


def test_the_scan_stops_at_the_project_root(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("")
    experiment = _project(project, "torch.cuda.is_available()")
    (project / "main.py").rename(tmp_path / "main.py")  # above the root: not the project's
    assert _codes(experiment) == [(10, "DEV003")]
    flags, scripts = project_flags.namespace_flags(experiment)
    assert flags == frozenset() and scripts == frozenset()


def test_the_scripts_read_are_the_results_dependencies(tmp_path: Path) -> None:
    experiment = _project(tmp_path, "torch.cuda.is_available()")
    flags, scripts = project_flags.namespace_flags(experiment)
    assert flags == {"args.use_gpu"}
    assert scripts == {(tmp_path / "main.py").resolve()}


def test_a_run_reads_each_folder_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A project run (``api.lint``, one process) reads a folder's scripts once, not once
    per file analysed there; the module still sees the script's flag."""
    experiment = _project(tmp_path, "args.use_gpu and torch.cuda.is_available()")
    (tmp_path / ".git").mkdir()  # the project's root: the scan stops there
    for i in range(6):
        (tmp_path / "exp" / f"exp_{i}.py").write_text(EXPERIMENT)
    read: list[str] = []
    original = project_flags._flags_of_folder

    def counting(folder: str) -> tuple[tuple[str, frozenset[str]], ...]:
        read.append(folder)
        return original(folder)

    monkeypatch.setattr(project_flags, "_flags_of_folder", counting)
    request = LintRequest(paths=(tmp_path,), jobs=1, use_cache=False, isolated=True)
    outcome = lint(request)
    assert outcome.files_checked == 8
    assert sorted(read) == sorted({str(tmp_path), str(experiment.parent)})
    assert (9, "DEV004") in _codes(experiment)


HELPERS = """
    import torch

    CUDA_ENABLED = False


    def get_tensor(tensor):
        if CUDA_ENABLED:
            return tensor.cuda()
        else:
            return tensor
"""

TRAINER = """
    from pkg.utils import cuda


    def train(model):
        if cuda.CUDA_ENABLED:
            model.cuda()
        return model
"""

WORKFLOW = """
    import torch
    from pkg.utils import (
        cuda,  # the module whose flag this sets
    )


    def set_cuda(use_cuda_if_available):
        cuda.CUDA_ENABLED = {flag}
"""


def _module_flag_project(tmp_path: Path, flag: str) -> tuple[Path, Path]:
    """pytext's layout (eval/blind125): ``utils/cuda.py`` declares ``CUDA_ENABLED = False``,
    ``workflow.py`` sets it, ``trainers/trainer.py`` reads it as ``cuda.CUDA_ENABLED``."""
    (tmp_path / "setup.py").write_text("")
    for folder in ("pkg", "pkg/utils", "pkg/trainers"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    files = {
        "pkg/utils/cuda.py": HELPERS,
        "pkg/trainers/trainer.py": TRAINER,
        "pkg/workflow.py": WORKFLOW.format(flag=flag),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip())
    return tmp_path / "pkg/utils/cuda.py", tmp_path / "pkg/trainers/trainer.py"


def test_a_module_flag_another_module_sets_from_availability(tmp_path: Path) -> None:
    helpers, trainer = _module_flag_project(
        tmp_path, "use_cuda_if_available and torch.cuda.is_available()"
    )
    options = CheckOptions(frozenset({"DEV003", "DEV004", "DEV016"}))
    found = {
        path.name: [
            (d.start.row, d.code)
            for d in check_text(path.read_text(), str(path), replace(options, origin=path))
        ]
        for path in (helpers, trainer)
    }
    # read as the flag in the module that declares it and in the one that imports it
    assert found == {"cuda.py": [(7, "DEV004")], "trainer.py": [(5, "DEV016")]}


def test_a_module_flag_set_from_a_users_option_stays_one(tmp_path: Path) -> None:
    helpers, trainer = _module_flag_project(tmp_path, "use_cuda_if_available")
    options = CheckOptions(frozenset({"DEV003", "DEV004", "DEV016"}))
    found = [
        (path.name, d.start.row, d.code)
        for path in (helpers, trainer)
        for d in check_text(path.read_text(), str(path), replace(options, origin=path))
    ]
    assert found == [("cuda.py", 8, "DEV003"), ("trainer.py", 6, "DEV003")]
