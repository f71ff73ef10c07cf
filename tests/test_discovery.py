"""Paths -> files: excludes, .gitignore, explicit files, symlinks, errors."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devlint import discovery
from devlint.discovery import DEFAULT_EXCLUDES, discover


def touch(root: Path, *relatives: str) -> None:
    for relative in relatives:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


def found(
    root: Path, *args: str, **options: object
) -> list[str]:  # posix paths relative to root, in the order discover returns them
    paths = [root / arg for arg in args] or [root]
    files = discover(paths, root=root, **options)  # type: ignore[arg-type]
    return [file.relative_to(root).as_posix() for file in files]


def test_python_files_and_notebooks_in_sorted_order(tmp_path: Path) -> None:
    touch(tmp_path, "b.py", "a.py", "nb.ipynb", "notes.txt", "pkg/z.py", "pkg/sub/m.py", "stub.pyi")
    assert found(tmp_path) == ["a.py", "b.py", "nb.ipynb", "pkg/sub/m.py", "pkg/z.py"]


def test_output_keeps_the_shape_of_the_argument(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    touch(tmp_path, "a.py", "src/b.py")
    monkeypatch.chdir(tmp_path)
    assert discover([Path(".")], root=tmp_path) == [Path("a.py"), Path("src/b.py")]
    assert discover([Path("src")], root=tmp_path) == [Path("src/b.py")]
    assert discover([tmp_path / "src"], root=tmp_path) == [tmp_path / "src" / "b.py"]


def test_default_excludes_at_any_depth(tmp_path: Path) -> None:
    touch(
        tmp_path,
        "keep.py",
        ".venv/lib/site.py",
        "venv/x.py",
        "pkg/build/gen.py",
        "pkg/dist/d.py",
        "pkg/__pycache__/c.py",
        "a/node_modules/n.py",
        "lib/site-packages/torch/t.py",
        "proj.egg-info/e.py",
        "nb/.ipynb_checkpoints/nb-checkpoint.ipynb",
        ".git/hooks/h.py",
        ".tox/py311/t.py",
        "pkg/builder/kept.py",  # only the exact name is excluded
    )
    assert found(tmp_path) == ["keep.py", "pkg/builder/kept.py"]
    assert "build" in DEFAULT_EXCLUDES and "*.egg-info" in DEFAULT_EXCLUDES


def test_exclude_replaces_the_defaults(tmp_path: Path) -> None:
    touch(tmp_path, "keep.py", ".venv/v.py", "generated/g.py")
    assert found(tmp_path, exclude=["generated"]) == [".venv/v.py", "keep.py"]
    assert found(tmp_path, exclude=[]) == [".venv/v.py", "generated/g.py", "keep.py"]


def test_extend_exclude_names_globs_and_root_relative_paths(tmp_path: Path) -> None:
    touch(
        tmp_path,
        "keep.py",
        ".venv/v.py",
        "fixtures/f.py",
        "src/fixtures/f.py",
        "tests/data/d.py",
        "src/tests/data/kept.py",  # "tests/data" is anchored at the root
        "src/model_pb2.py",
        "logs/l.py",
    )
    result = found(tmp_path, extend_exclude=["fixtures", "tests/data", "*_pb2.py", "logs/"])
    assert result == ["keep.py", "src/tests/data/kept.py"]


def test_exclude_patterns_are_relative_to_the_root_not_the_argument(tmp_path: Path) -> None:
    touch(tmp_path, "tests/data/d.py", "tests/t.py", "tests/tests/data/kept.py")
    assert found(tmp_path, "tests", extend_exclude=["tests/data"]) == [
        "tests/t.py",
        "tests/tests/data/kept.py",
    ]


def test_gitignore_at_the_root_and_nested(tmp_path: Path) -> None:
    touch(
        tmp_path,
        "keep.py",
        "secret.py",
        "out/o.py",
        "pkg/local.py",
        "pkg/deeper/local.py",
        "local.py",
        "pkg/x_gen.py",
        "pkg/keep_gen.py",
        "pkg/deeper/keep_gen.py",
    )
    (tmp_path / ".gitignore").write_text("# comment\nsecret.py\nout/\n*_gen.py\n")
    # anchored at pkg/, and re-including one generated file name
    (tmp_path / "pkg" / ".gitignore").write_text("/local.py\n!keep_gen.py\n")
    assert found(tmp_path) == [
        "keep.py",
        "local.py",
        "pkg/deeper/keep_gen.py",
        "pkg/deeper/local.py",
        "pkg/keep_gen.py",
    ]
    assert len(found(tmp_path, respect_gitignore=False)) == 9


def test_gitignore_above_the_walked_directory_applies(tmp_path: Path) -> None:
    touch(tmp_path, "src/a.py", "src/skip.py", "src/gen/g.py")
    (tmp_path / ".gitignore").write_text("src/skip.py\ngen/\n")
    assert found(tmp_path, "src") == ["src/a.py"]


def test_directory_pattern_does_not_reinclude_files_inside(tmp_path: Path) -> None:
    # git: "!src/" re-includes the directory, not the *.py files in it
    touch(tmp_path, "src/a.py", "top.py")
    (tmp_path / ".gitignore").write_text("*.py\n!src/\n")
    assert found(tmp_path) == []


def test_contents_pattern_and_reinclude(tmp_path: Path) -> None:
    touch(tmp_path, "out/a.py", "out/keep.py", "out/sub/b.py", "other.py")
    (tmp_path / ".gitignore").write_text("out/**\n!out/keep.py\n")
    assert found(tmp_path) == ["other.py", "out/keep.py"]


def test_git_info_exclude(tmp_path: Path) -> None:
    touch(tmp_path, "a.py", "scratch.py", "pkg/scratch.py")
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("scratch.py\n")
    assert found(tmp_path) == ["a.py"]
    # a .gitignore takes precedence over info/exclude
    (tmp_path / "pkg" / ".gitignore").write_text("!scratch.py\n")
    assert found(tmp_path) == ["a.py", "pkg/scratch.py"]


def test_repository_gitignore_above_the_project_root(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    touch(repo, "pkg/a.py", "pkg/vendored.py")
    (repo / ".gitignore").write_text("vendored.py\n")
    root = repo / "pkg"
    assert [p.name for p in discover([root], root=root)] == ["a.py", "vendored.py"]  # no repo
    (repo / ".git").mkdir()
    assert [p.name for p in discover([root], root=root)] == ["a.py"]


def test_explicit_files_are_always_returned(tmp_path: Path) -> None:
    touch(tmp_path, ".venv/v.py", "ignored.py", "script", "notes.txt", "build/b.py")
    (tmp_path / ".gitignore").write_text("ignored.py\n")
    assert found(tmp_path) == []
    explicit = [".venv/v.py", "ignored.py", "script", "notes.txt", "build/b.py"]
    assert found(tmp_path, *explicit) == explicit  # in argument order


def test_explicit_excluded_directory_is_walked(tmp_path: Path) -> None:
    touch(tmp_path, "build/b.py", "build/sub/c.py", "build/sub/build/nested.py", "gen/g.py")
    (tmp_path / ".gitignore").write_text("gen/\n")
    assert found(tmp_path, "build") == ["build/b.py", "build/sub/c.py"]
    assert found(tmp_path, "gen") == ["gen/g.py"]


def test_force_exclude_applies_the_excludes_to_named_paths(tmp_path: Path) -> None:
    touch(tmp_path, ".venv/v.py", "build/b.py", "src/gen/g.py", "src/a.py", "keep.py")
    (tmp_path / ".gitignore").write_text("keep.py\n")  # excludes only, as in ruff
    named = [".venv/v.py", "build/b.py", "src/gen/g.py", "src/a.py", "keep.py"]
    forced = found(tmp_path, *named, force_exclude=True, extend_exclude=["src/gen"])
    assert forced == ["src/a.py", "keep.py"]
    assert found(tmp_path, "build", "src", force_exclude=True) == ["src/a.py", "src/gen/g.py"]
    assert found(tmp_path, "build", "src", force_exclude=False) == [
        "build/b.py", "src/a.py", "src/gen/g.py",
    ]  # fmt: skip


def test_force_exclude_outside_the_root_matches_the_name(tmp_path: Path) -> None:
    touch(tmp_path, "outside/build/b.py", "project/p.py")
    files = discover(
        [tmp_path / "outside" / "build"], root=tmp_path / "project", force_exclude=True
    )
    assert files == []


def test_no_duplicates_and_arguments_in_order(tmp_path: Path) -> None:
    touch(tmp_path, "b/z.py", "b/y.py", "a/x.py")
    assert found(tmp_path, "b", "a", "b/z.py", "a") == ["b/y.py", "b/z.py", "a/x.py"]
    assert found(tmp_path, "a/x.py", "a") == ["a/x.py"]


def test_missing_path_is_returned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading it fails later: a DEV900 diagnostic for it, and the other paths checked."""
    monkeypatch.chdir(tmp_path)
    touch(tmp_path, "a.py")
    files = discover([Path("a.py"), Path("nowhere/"), Path("gone.py")], root=tmp_path)
    assert files == [Path("a.py"), Path("nowhere"), Path("gone.py")]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_symlink_loop_terminates_and_symlinked_dirs_are_not_followed(tmp_path: Path) -> None:
    touch(tmp_path, "pkg/a.py", "outside/o.py")
    os.symlink(tmp_path / "pkg", tmp_path / "pkg" / "loop", target_is_directory=True)
    os.symlink(tmp_path / "outside", tmp_path / "pkg" / "link", target_is_directory=True)
    os.symlink(tmp_path / "pkg" / "a.py", tmp_path / "pkg" / "alias.py")
    os.symlink(tmp_path / "missing.py", tmp_path / "pkg" / "dangling.py")
    assert found(tmp_path, "pkg") == ["pkg/a.py", "pkg/alias.py"]
    # a symlinked directory named explicitly is walked
    assert found(tmp_path, "pkg/link") == ["pkg/link/o.py"]


def test_unreadable_directories_are_skipped_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    touch(tmp_path, "a.py", "locked/l.py", "locked2/m.py")
    real_scandir = os.scandir
    locked = {str(tmp_path / "locked"), str(tmp_path / "locked2")}

    def scandir(path: str) -> Iterator[os.DirEntry[str]]:
        if os.fspath(path) in locked:
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(discovery.os, "scandir", scandir)
    errors: list[Path] = []
    assert found(tmp_path) == ["a.py"]
    assert found(tmp_path, on_error=lambda path, error: errors.append(path)) == ["a.py"]
    assert sorted(errors) == [tmp_path / "locked", tmp_path / "locked2"]


def test_large_tree_is_fast(tmp_path: Path) -> None:
    for d in range(50):
        directory = tmp_path / f"pkg{d}" / "sub"
        directory.mkdir(parents=True)
        (tmp_path / f"pkg{d}" / ".gitignore").write_text("*_gen.py\n/sub/skip*.py\n!keep_gen.py\n")
        for f in range(100):
            (directory / f"m{f}.py").write_text("")
    (tmp_path / ".gitignore").write_text("\n".join(f"*.ext{i}" for i in range(50)) + "\n")
    start = time.perf_counter()
    files = discover([tmp_path], root=tmp_path, extend_exclude=["data", "tests/fixtures", "*.gen"])
    elapsed = time.perf_counter() - start
    assert len(files) == 5000
    assert elapsed < 5.0, f"discovery of 5000 files took {elapsed:.2f}s"
