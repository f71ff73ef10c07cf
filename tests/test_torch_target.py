"""``target-torch``: parsing, the project's own declaration, the config key and the option."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.cli import main
from devlint.config import ConfigError, load_config, target_torch
from devlint.torch_target import DEFAULT_TARGET_TORCH, declared_target, parse_target


@pytest.mark.parametrize(
    ("text", "version"),
    [("2.6", (2, 6)), ("2.10.1", (2, 10)), (" 2.9 ", (2, 9)), ("2", None), ("latest", None)],
)
def test_parse_target(text: str, version: tuple[int, int] | None) -> None:
    assert parse_target(text) == version


def _project(tmp_path: Path, name: str, text: str) -> Path:
    (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("name", "text", "version"),
    [
        ("pyproject.toml", '[project]\ndependencies = ["numpy", "torch>=2.6,<3"]\n', (2, 6)),
        ("pyproject.toml", '[project]\ndependencies = ["torch~=2.9.1"]\n', (2, 9)),
        (
            "pyproject.toml",
            '[project]\ndependencies = ["torch>=2.8"]\n'
            '[project.optional-dependencies]\nold = ["torch==2.6.*"]\n',
            (2, 6),
        ),
        ("pyproject.toml", '[project]\ndependencies = ["torch"]\n', None),
        ("pyproject.toml", '[project]\ndependencies = ["torchvision>=0.20"]\n', None),
        ("pyproject.toml", "[project\n", None),
        ("setup.cfg", "[options]\ninstall_requires =\n    torch>=2.7\n    numpy\n", (2, 7)),
        ("requirements.txt", "-r base.txt\ntorch>2.5  # pinned by CI\n", (2, 5)),
        ("requirements.txt", "torch @ https://example.invalid/torch.whl\n", None),
        ("requirements.txt", "Torch[opt] (>=2.3); python_version >= '3.9'\n", (2, 3)),
        ("requirements.txt", "torch==2.4.0+cu121\ntorch-geometric>=2.0\n", (2, 4)),
        ("requirements.txt", "torch>=2.4 nonsense\npy-torch>=3.0\n", None),
    ],
)
def test_declared_target(
    tmp_path: Path, name: str, text: str, version: tuple[int, int] | None
) -> None:
    assert declared_target(_project(tmp_path, name, text)) == version


def test_the_config_key_wins_over_the_declaration(tmp_path: Path) -> None:
    _project(
        tmp_path,
        "pyproject.toml",
        '[project]\ndependencies = ["torch>=2.6"]\n[tool.devlint]\ntarget-torch = "2.9"\n',
    )
    config = load_config(tmp_path / "pyproject.toml")
    assert (config.target_torch, target_torch(config)) == ((2, 9), (2, 9))


def test_the_declaration_then_the_default(tmp_path: Path) -> None:
    _project(tmp_path, "pyproject.toml", '[project]\ndependencies = ["torch>=2.6"]\n')
    assert target_torch(load_config(tmp_path / "pyproject.toml")) == (2, 6)
    (tmp_path / "pyproject.toml").write_text("[tool.devlint]\n", encoding="utf-8")
    assert target_torch(load_config(tmp_path / "pyproject.toml")) == DEFAULT_TARGET_TORCH


@pytest.mark.parametrize("value", ['"two"', "2.6", '"2"'])
def test_a_bad_config_value_is_a_one_line_error(tmp_path: Path, value: str) -> None:
    _project(tmp_path, "pyproject.toml", f"[tool.devlint]\ntarget-torch = {value}\n")
    with pytest.raises(ConfigError, match=r"invalid value for 'target-torch'.*such as '2\.6'"):
        load_config(tmp_path / "pyproject.toml")


SCRIPT = "import torch\ntorch.cuda.synchronize()\n"


def _fix(tmp_path: Path, *options: str) -> tuple[int, str]:
    script = tmp_path / "bench.py"
    script.write_text(SCRIPT, encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--no-cache", "--fix", *options, str(script)])
    return result.exit_code, script.read_text(encoding="utf-8")


def test_the_option_picks_the_fix(tmp_path: Path) -> None:
    _project(tmp_path, "pyproject.toml", '[project]\ndependencies = ["torch>=2.1"]\n')
    code, text = _fix(tmp_path)
    assert code == 0 and "if torch.cuda.is_available():\n    torch.cuda.synchronize()" in text
    code, text = _fix(tmp_path, "--target-torch", "2.6")
    assert code == 0
    assert "if torch.accelerator.is_available():\n    torch.accelerator.synchronize()" in text


def test_the_project_declaration_picks_the_fix(tmp_path: Path) -> None:
    _project(tmp_path, "pyproject.toml", '[project]\ndependencies = ["torch>=2.6"]\n')
    assert "torch.accelerator.synchronize()" in _fix(tmp_path)[1]


def test_a_bad_option_is_a_one_line_error(tmp_path: Path) -> None:
    script = tmp_path / "x.py"
    script.write_text(SCRIPT, encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--target-torch", "new", str(script)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: invalid value for '--target-torch': expected a release such as 2.6, got 'new'"
    ]


def _bound_by_packaging(line: str) -> tuple[int, int] | None:
    """What packaging's Requirement reads as the lowest torch release of ``line``."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion, Version

    try:
        requirement = Requirement(line)
    except InvalidRequirement:
        return None
    if requirement.name.lower() != "torch":
        return None
    bounds = []
    for spec in requirement.specifier:
        if spec.operator in (">=", "~=", "==", "===", ">"):
            try:
                release = Version(spec.version.removesuffix(".*")).release
            except InvalidVersion:
                continue
            bounds.append((release[0], release[1] if len(release) > 1 else 0))
    return max(bounds) if bounds else None


OPERATORS = (">=", "~=", "==", "===", ">", "<", "<=", "!=")
VERSIONS = ("2", "2.6", "2.6.1", "2.6.*", "2.*", "2.4.0+cu121", "2.7.0.dev20250101", "2.5rc1",
            "1!2.6", "v2.6", "2.6.post1", "2.6-1", "2.x", "2..6", "2.6rc1.*", "foo")  # fmt: skip


def test_the_torch_bound_reads_as_packaging_reads_it() -> None:
    """devlint reads a torch requirement without importing packaging (start-up time); it
    agrees with packaging's Requirement on every operator and version form, valid or not."""
    from devlint.torch_target import _lower_bound

    lines = [f"torch{op}{version}" for op in OPERATORS for version in VERSIONS]
    lines += [
        f"torch {a}{v}, {b}{w}; python_version >= '3.9'"
        for a, b in (("<", ">="), (">=", "!="), ("~=", "<"))
        for v in VERSIONS
        for w in VERSIONS
    ]
    lines += [
        "torch",
        "torch>=2.4 junk",
        "torch (>=2.2)",
        "Torch_[x]>=2.3",
        "torch>=2.4,",
        "torch,",
    ]
    assert [_lower_bound(line) for line in lines] == list(map(_bound_by_packaging, lines))
