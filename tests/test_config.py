"""``[tool.devlint]``: finding, reading, validating; rule selection; per-file-ignores."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from devlint.config import (
    ConfigError,
    FileConfig,
    check_codes,
    codes_for_file,
    find_config,
    load_config,
    resolve_codes,
)

KNOWN = [f"DEV{n:03d}" for n in range(1, 15)] + ["DEV900", "DEV901", "DEV902"]
DEFAULT_ON = [code for code in KNOWN if code not in ("DEV010", "DEV012")]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "\n" not in message, message
    return message


# --------------------------------------------------------------------------- loading


def test_no_file_gives_defaults_rooted_at_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = load_config(None)
    assert config == FileConfig(path=None, root=tmp_path)
    assert (config.select, config.ignore, config.exclude, config.accelerator_api) == (
        None,
        (),
        None,
        "auto",
    )
    assert dict(config.per_file_ignores) == {}


def test_every_key_is_read(tmp_path: Path) -> None:
    path = write(
        tmp_path / "pyproject.toml",
        """
[project]
name = "x"

[tool.devlint]
select = ["DEV00", "DEV013"]
ignore = ["DEV004"]
extend-select = ["DEV010"]
per-file-ignores = { "tests/*" = ["DEV003"], "__init__.py" = ["DEV001", "DEV002"] }
exclude = ["generated"]
extend-exclude = ["tests/data", "*.gen.py"]
guard-functions = ["mylib.has_cuda", "has_gpu"]
accelerator-api = "three-way"
cache-dir = ".cache/devlint"
fixable = ["DEV00"]
unfixable = ["DEV004"]
respect-gitignore = false
force-exclude = true
output-format = "grouped"
docs-url = "https://example.org/devlint/{code}"
""",
    )
    config = load_config(path)
    assert config.path == path
    assert config.root == tmp_path
    assert config.select == ("DEV00", "DEV013")
    assert config.ignore == ("DEV004",)
    assert config.extend_select == ("DEV010",)
    assert dict(config.per_file_ignores) == {
        "tests/*": ("DEV003",),
        "__init__.py": ("DEV001", "DEV002"),
    }
    assert config.exclude == ("generated",)
    assert config.extend_exclude == ("tests/data", "*.gen.py")
    assert config.guard_functions == ("mylib.has_cuda", "has_gpu")
    assert config.accelerator_api == "three-way"
    assert config.cache_dir == tmp_path / ".cache" / "devlint"
    assert (config.fixable, config.unfixable) == (("DEV00",), ("DEV004",))
    assert (config.respect_gitignore, config.force_exclude) == (False, True)
    assert config.output_format == "grouped"
    assert config.docs_url == "https://example.org/devlint/{code}"


def test_new_keys_default_like_ruff(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "pyproject.toml", "[tool.devlint]\n"))
    assert (config.fixable, config.unfixable) == (None, ())
    assert (config.respect_gitignore, config.force_exclude) == (True, False)
    assert (config.output_format, config.docs_url) == (None, None)


def test_config_is_immutable_and_hashable(tmp_path: Path) -> None:
    path = write(
        tmp_path / "pyproject.toml", '[tool.devlint]\nper-file-ignores = {"a.py" = ["DEV001"]}\n'
    )
    config = load_config(path)
    assert hash(config) == hash(load_config(path))
    assert config == load_config(path)
    with pytest.raises(TypeError):
        config.per_file_ignores["b.py"] = ("DEV002",)  # type: ignore[index]


def test_absolute_cache_dir_is_kept(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    path = write(tmp_path / "p" / "pyproject.toml", f"[tool.devlint]\ncache-dir = '{elsewhere}'\n")
    assert load_config(path).cache_dir == elsewhere


def test_unknown_key_is_named_with_a_suggestion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "pyproject.toml", "[tool.devlint]\nselct = ['DEV001']\n")
    assert error_of(Path("pyproject.toml")) == (
        "unknown key 'selct' (did you mean 'select'?) in [tool.devlint] of pyproject.toml"
    )


def test_snake_case_key_suggests_the_kebab_case_one(tmp_path: Path) -> None:
    path = write(tmp_path / "pyproject.toml", "[tool.devlint]\nextend_select = ['DEV010']\n")
    assert "unknown key 'extend_select' (did you mean 'extend-select'?)" in error_of(path)


def test_unknown_key_without_a_close_match_has_no_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path / "pyproject.toml", "[tool.devlint]\nzzzz = 1\n")
    message = error_of(path)
    assert message.startswith("unknown key 'zzzz' in [tool.devlint] of ")
    assert "did you mean" not in message


def test_all_unknown_keys_are_named(tmp_path: Path) -> None:
    path = write(
        tmp_path / "pyproject.toml", "[tool.devlint]\nselct = []\nignore = []\nwhatever = 1\n"
    )
    message = error_of(path)
    assert message.startswith("unknown keys 'selct'")
    assert "'whatever'" in message
    assert "'ignore'" not in message.replace("did you mean", "")


@pytest.mark.parametrize(
    ("body", "key", "expected"),
    [
        ('select = "DEV001"', "select", "a list of rule codes"),
        ("select = [1, 2]", "select", "a list of rule codes"),
        ('select = [""]', "select", "empty rule code"),
        ("ignore = 3", "ignore", "a list of rule codes"),
        ("extend-select = {a = 1}", "extend-select", "a list of rule codes"),
        ('per-file-ignores = ["tests/*"]', "per-file-ignores", "a table of glob"),
        ('per-file-ignores = { "tests/*" = "DEV001" }', "per-file-ignores", "a list of rule codes"),
        ('per-file-ignores = { "tests/*" = [1] }', "per-file-ignores", "a list of rule codes"),
        ('per-file-ignores = { "!" = ["DEV001"] }', "per-file-ignores", "empty glob"),
        ('exclude = "build"', "exclude", "a list of glob patterns"),
        ("extend-exclude = [true]", "extend-exclude", "a list of glob patterns"),
        ('guard-functions = "mylib.has_cuda"', "guard-functions", "a list of dotted names"),
        ('guard-functions = ["has cuda()"]', "guard-functions", "a dotted name"),
        ('guard-functions = ["mylib..has_cuda"]', "guard-functions", "a dotted name"),
        (
            'accelerator-api = "cuda"',
            "accelerator-api",
            "one of 'auto', 'torch.accelerator', 'three-way'",
        ),
        ("accelerator-api = 1", "accelerator-api", "one of 'auto'"),
        ("cache-dir = 3", "cache-dir", "a directory path"),
        ('fixable = "DEV001"', "fixable", "a list of rule codes"),
        ("unfixable = [1]", "unfixable", "a list of rule codes"),
        ('respect-gitignore = "no"', "respect-gitignore", "true or false"),
        ("force-exclude = 1", "force-exclude", "true or false"),
        ('output-format = "xml"', "output-format", "one of 'full', 'concise'"),
        ('docs-url = "a b"', "docs-url", "a URL"),
        ("docs-url = 3", "docs-url", "a URL"),
    ],
)
def test_bad_values_name_the_key_and_what_was_expected(
    tmp_path: Path, body: str, key: str, expected: str
) -> None:
    path = write(tmp_path / "pyproject.toml", f"[tool.devlint]\n{body}\n")
    message = error_of(path)
    assert message.startswith(f"invalid value for '{key}' in [tool.devlint] of "), message
    assert expected in message


def test_tool_devlint_must_be_a_table(tmp_path: Path) -> None:
    path = write(tmp_path / "pyproject.toml", "[tool]\ndevlint = 3\n")
    assert "[tool.devlint] in " in error_of(path) and "must be a table" in error_of(path)


def test_invalid_toml_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "pyproject.toml", "[tool.devlint]\nselect = [\n")
    assert error_of(Path("pyproject.toml")).startswith("invalid TOML in pyproject.toml: ")


def test_relative_config_path_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "sub" / "devlint.toml", "cache-dir = 'c'\n")
    monkeypatch.chdir(tmp_path)
    config = load_config(Path("sub/devlint.toml"))
    assert (config.path, config.root, config.cache_dir) == (
        tmp_path / "sub" / "devlint.toml",
        tmp_path / "sub",
        tmp_path / "sub" / "c",
    )


def test_non_utf8_config_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "devlint.toml"
    path.write_bytes(b"select = ['\xff']\n")
    assert "not valid UTF-8" in error_of(path)


def test_missing_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert error_of(Path("nope.toml")) == "config file not found: nope.toml"


def test_config_that_is_a_directory(tmp_path: Path) -> None:
    assert error_of(tmp_path).startswith("config file is a directory: ")


def test_devlint_toml_has_top_level_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path / "cfg" / "devlint.toml",
        'ignore = ["DEV004"]\naccelerator-api = "torch.accelerator"\n',
    )
    config = load_config(path)
    assert (config.ignore, config.accelerator_api, config.root) == (
        ("DEV004",),
        "torch.accelerator",
        tmp_path / "cfg",
    )


def test_devlint_toml_errors_name_the_file_not_a_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "devlint.toml", "ignroe = []\n")
    assert error_of(Path("devlint.toml")) == (
        "unknown key 'ignroe' (did you mean 'ignore'?) in devlint.toml"
    )


def test_devlint_toml_may_use_a_tool_devlint_table(tmp_path: Path) -> None:
    path = write(tmp_path / "devlint.toml", '[tool.devlint]\nselect = ["DEV001"]\n')
    assert load_config(path).select == ("DEV001",)


def test_pyproject_is_read_from_tool_devlint_only(tmp_path: Path) -> None:
    # top-level keys of a pyproject.toml are not devlint's, even when they look like it
    path = write(tmp_path / "pyproject.toml", 'select = ["DEV001"]\n[project]\nname = "x"\n')
    config = load_config(path)
    assert (config.select, config.root, config.path) == (None, tmp_path, path)


# --------------------------------------------------------------------------- finding


def test_nearest_pyproject_with_a_devlint_table_wins(tmp_path: Path) -> None:
    outer = write(tmp_path / "pyproject.toml", "[tool.devlint]\nignore = ['DEV004']\n")
    write(tmp_path / "pkg" / "pyproject.toml", "[project]\nname = 'pkg'\n")  # no [tool.devlint]
    inner = write(tmp_path / "pkg" / "sub" / "pyproject.toml", "[tool.devlint]\n")
    deep = tmp_path / "pkg" / "sub" / "a" / "b"
    deep.mkdir(parents=True)
    assert find_config(deep) == inner
    assert find_config(tmp_path / "pkg") == outer
    assert find_config(tmp_path / "pkg" / "mod.py") == outer  # a file: its directory
    assert find_config(tmp_path) == outer


def test_no_config_anywhere(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.ruff]\nline-length = 100  # not devlint\n")
    found = find_config(tmp_path)
    # nothing in tmp_path qualifies (whatever lies above the temp dir is not ours)
    assert found is None or tmp_path not in found.parents


def test_devlint_toml_is_found_and_beats_pyproject_in_the_same_directory(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.devlint]\n")
    dedicated = write(tmp_path / "devlint.toml", "")
    write(tmp_path / "deeper" / "pyproject.toml", "[tool.devlint]\n")
    assert find_config(tmp_path) == dedicated
    assert find_config(tmp_path / "deeper") == tmp_path / "deeper" / "pyproject.toml"


def test_broken_pyproject_meant_for_devlint_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.devlint\nselect = ['DEV001']\n")
    with pytest.raises(ConfigError, match=r"^invalid TOML in .*pyproject\.toml: "):
        find_config(tmp_path)


def test_broken_pyproject_not_about_devlint_is_passed_over(tmp_path: Path) -> None:
    outer = write(tmp_path / "pyproject.toml", "[tool.devlint]\n")
    write(tmp_path / "sub" / "pyproject.toml", "[project\nname = 'devlint-plugin'\n")
    assert find_config(tmp_path / "sub") == outer


# --------------------------------------------------------------------------- rule selection


def resolve(
    select: list[str] | None = None,
    extend: tuple[str, ...] = (),
    ignore: tuple[str, ...] = (),
) -> list[str]:
    return sorted(resolve_codes(select, extend, ignore, KNOWN, DEFAULT_ON))


def test_no_select_means_the_default_set() -> None:
    assert resolve() == sorted(DEFAULT_ON)
    assert "DEV010" not in resolve()


def test_select_prefixes_and_all() -> None:
    assert resolve(["DEV00"]) == [f"DEV00{n}" for n in range(1, 10)]
    assert resolve(["DEV01"]) == ["DEV010", "DEV011", "DEV012", "DEV013", "DEV014"]
    assert resolve(["DEV003", "DEV9"]) == ["DEV003", "DEV900", "DEV901", "DEV902"]
    assert resolve(["ALL"]) == sorted(KNOWN)
    assert resolve(["DEV"]) == sorted(KNOWN)
    assert resolve([]) == []


def test_codes_are_case_insensitive() -> None:
    assert resolve(["dev001", "all"], ignore=("dev9",)) == [f"DEV{n:03d}" for n in range(1, 15)]


def test_extend_select_adds_to_the_default_or_the_selection() -> None:
    assert resolve(extend=("DEV010",)) == sorted([*DEFAULT_ON, "DEV010"])
    assert resolve(["DEV001"], extend=("DEV012",)) == ["DEV001", "DEV012"]


def test_ignore_removes_and_more_specific_entries_win() -> None:
    assert "DEV001" not in resolve(["DEV"], ignore=("DEV001",))
    assert resolve(["DEV00"], ignore=("DEV0",)) == [f"DEV00{n}" for n in range(1, 10)]
    assert resolve(["DEV001"], ignore=("DEV",)) == ["DEV001"]  # more specific select wins
    assert resolve(["ALL"], ignore=("DEV0",)) == ["DEV900", "DEV901", "DEV902"]
    assert resolve(["DEV0"], extend=("DEV005",), ignore=("DEV00",)) == [
        "DEV005",
        "DEV010",
        "DEV011",
        "DEV012",
        "DEV013",
        "DEV014",
    ]


def test_ignore_wins_at_equal_specificity() -> None:
    assert resolve(["DEV001", "DEV002"], ignore=("DEV001",)) == ["DEV002"]
    assert resolve(["DEV00"], ignore=("DEV00",)) == []


def test_any_ignore_beats_the_default_set() -> None:
    assert resolve(ignore=("DEV",)) == []
    assert resolve(ignore=("ALL",)) == []
    assert resolve(ignore=("DEV00",)) == [
        c for c in sorted(DEFAULT_ON) if not c.startswith("DEV00")
    ]


def test_unknown_codes_are_all_named() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve(["DEV001", "DEV999", "FOO", "FOO"])
    assert str(caught.value) == "unknown rule code(s) in select: DEV999, FOO"


def test_unknown_codes_in_several_inputs_are_one_line() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve(["DEV7"], extend=("X1",), ignore=("DEV0000", "DEV001"))
    assert str(caught.value) == (
        "unknown rule code(s) in select: DEV7; in extend-select: X1; in ignore: DEV0000"
    )


def test_labels_name_the_inputs() -> None:
    with pytest.raises(ConfigError, match=r"^unknown rule code\(s\) in --ignore: NOPE$"):
        resolve_codes(
            None,
            (),
            ("NOPE",),
            KNOWN,
            DEFAULT_ON,
            labels=("--select", "--extend-select", "--ignore"),
        )


def test_check_codes() -> None:
    check_codes(["DEV001", "DEV0", "ALL"], KNOWN, "per-file-ignores")
    with pytest.raises(ConfigError, match=r"^unknown rule code\(s\) in per-file-ignores: DEV77$"):
        check_codes(["DEV001", "DEV77"], KNOWN, "per-file-ignores")


# --------------------------------------------------------------------------- per-file-ignores

ENABLED = frozenset(DEFAULT_ON)


def off_for(path: Path, root: Path, per_file: Mapping[str, tuple[str, ...]]) -> list[str]:
    return sorted(ENABLED - codes_for_file(path, root, per_file, ENABLED))


@pytest.mark.parametrize(
    ("glob", "relative", "matches"),
    [
        ("tests/*", "tests/test_a.py", True),
        ("tests/*", "tests/unit/test_a.py", True),
        ("tests/*", "src/tests/test_a.py", False),
        ("tests/", "tests/unit/test_a.py", True),
        ("__init__.py", "pkg/sub/__init__.py", True),
        ("__init__.py", "pkg/sub/init.py", False),
        ("*.ipynb", "notebooks/deep/nb.ipynb", True),
        ("**/*.ipynb", "nb.ipynb", True),
        ("src/bug.py", "src/bug.py", True),
        ("src/bug.py", "other/src/bug.py", False),
        ("./src/bug.py", "src/bug.py", True),
        ("scripts/**/train_*.py", "scripts/a/b/train_big.py", True),
        ("scripts/**/train_*.py", "scripts/a/b/eval_big.py", False),
        ("!src/**", "tests/test_a.py", True),
        ("!src/**", "src/a.py", False),
    ],
)
def test_per_file_ignore_globs(tmp_path: Path, glob: str, relative: str, matches: bool) -> None:
    off = off_for(tmp_path / relative, tmp_path, {glob: ("DEV003",)})
    assert off == (["DEV003"] if matches else [])


def test_per_file_ignores_take_prefixes_and_all(tmp_path: Path) -> None:
    path = tmp_path / "tests" / "t.py"
    assert off_for(path, tmp_path, {"tests/*": ("DEV00",)}) == [
        c for c in sorted(ENABLED) if c.startswith("DEV00")
    ]
    assert codes_for_file(path, tmp_path, {"tests/*": ("ALL",)}, ENABLED) == frozenset()
    assert codes_for_file(path, tmp_path, {}, ENABLED) == ENABLED
    several = {"tests/*": ("DEV001",), "t.py": ("DEV002",), "other/*": ("DEV005",)}
    assert off_for(path, tmp_path, several) == ["DEV001", "DEV002"]


def test_relative_paths_are_taken_from_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "src").mkdir()
    monkeypatch.chdir(tmp_path / "src")
    assert off_for(Path("bug.py"), tmp_path, {"src/bug.py": ("DEV003",)}) == ["DEV003"]
    assert off_for(Path("bug.py"), tmp_path, {"bug.py": ("DEV003",)}) == ["DEV003"]
    assert off_for(Path("bug.py"), tmp_path, {"/bug.py": ("DEV003",)}) == []  # anchored at root


def test_file_outside_the_root_still_matches_by_name(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "conftest.py"
    root = tmp_path / "project"
    assert off_for(outside, root, {"conftest.py": ("DEV001",)}) == ["DEV001"]
    assert off_for(outside, root, {"tests/*": ("DEV001",)}) == []


# --------------------------------------------------------------------------- line-length


def test_line_length_comes_from_tool_devlint_then_tool_ruff_then_88(tmp_path: Path) -> None:
    ruff = '[tool.ruff]\nline-length = 100\n\n[tool.devlint]\nselect = ["DEV"]\n'
    assert load_config(write(tmp_path / "a" / "pyproject.toml", ruff)).line_length == 100
    both = ruff + "line-length = 120\n"
    assert load_config(write(tmp_path / "b" / "pyproject.toml", both)).line_length == 120
    plain = write(tmp_path / "c" / "devlint.toml", 'select = ["DEV"]\n')
    assert load_config(plain).line_length == 88
    write(tmp_path / "c" / "ruff.toml", "line-length = 79\n")
    assert load_config(plain).line_length == 79


def test_line_length_without_a_devlint_config_is_ruffs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "pyproject.toml", "[tool.ruff]\nline-length = 110\n")
    monkeypatch.chdir(tmp_path)
    assert load_config(None).line_length == 110


@pytest.mark.parametrize("value", ["0", '"100"', "true", "1000"])
def test_a_bad_line_length_is_an_error(tmp_path: Path, value: str) -> None:
    path = write(tmp_path / "pyproject.toml", f"[tool.devlint]\nline-length = {value}\n")
    assert "an integer from 1 to 320" in error_of(path)
