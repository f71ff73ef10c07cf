"""Paths on the command line -> the files to check (gitignore, excludes, notebooks)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pathspec

DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "build", "dist", "__pycache__",
    "site-packages", "node_modules", ".mypy_cache", ".ruff_cache", ".pytest_cache",
    ".devlint_cache", ".eggs", "*.egg-info", ".ipynb_checkpoints",
)  # fmt: skip
SUFFIXES = (".py", ".ipynb")


class DiscoveryError(Exception):
    """A one-line, user-facing message, e.g. ``path does not exist: foo/``."""


def discover(
    paths: Sequence[Path],
    *,
    root: Path,
    exclude: Sequence[str] | None = None,
    extend_exclude: Sequence[str] = (),
    respect_gitignore: bool = True,
) -> list[Path]:
    """Files to check, in a stable order, without duplicates.

    Directories are walked (symlinked directories are not followed, so loops cannot
    hang the walk); explicitly named files are always returned.
    """
    patterns = [*(DEFAULT_EXCLUDES if exclude is None else exclude), *extend_exclude]
    excluded = pathspec.PathSpec.from_lines("gitwildmatch", patterns)
    root = root.resolve()
    seen: set[Path] = set()
    result: list[Path] = []
    for path in paths:
        if not path.exists() and not path.is_symlink():
            raise DiscoveryError(f"path does not exist: {path}")
        if path.is_dir():
            found: Iterator[Path] = _walk(path, root, excluded, respect_gitignore)
        else:
            found = iter([path])
        for file in found:
            key = file.resolve()
            if key not in seen:
                seen.add(key)
                result.append(file)
    return result


def _walk(
    top: Path, root: Path, excluded: pathspec.PathSpec, respect_gitignore: bool
) -> Iterator[Path]:
    ignores: list[tuple[Path, pathspec.PathSpec]] = []
    if respect_gitignore:
        ignores = _enclosing_gitignores(top.resolve(), root)
    yield from _walk_directory(top, root, excluded, ignores, respect_gitignore)


def _walk_directory(
    directory: Path,
    root: Path,
    excluded: pathspec.PathSpec,
    ignores: list[tuple[Path, pathspec.PathSpec]],
    respect_gitignore: bool,
) -> Iterator[Path]:
    if respect_gitignore:
        local = _read_ignore(directory / ".gitignore")
        if local is not None:
            ignores = [*ignores, (directory.resolve(), local)]
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except OSError:  # unreadable directory: nothing to check in it
        return
    for entry in entries:
        path = Path(entry.path)
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = entry.is_file()
        except OSError:
            continue
        if not is_dir and not (is_file and path.suffix in SUFFIXES):
            continue
        if _is_excluded(path, is_dir, root, excluded) or _is_ignored(path, is_dir, ignores):
            continue
        if is_dir:
            yield from _walk_directory(path, root, excluded, ignores, respect_gitignore)
        else:
            yield path


def _is_excluded(path: Path, is_dir: bool, root: Path, excluded: pathspec.PathSpec) -> bool:
    suffix = "/" if is_dir else ""
    if excluded.match_file(path.name + suffix):
        return True
    try:
        relative = path.resolve().relative_to(root).as_posix()
    except ValueError:
        return False
    return excluded.match_file(relative + suffix)


def _is_ignored(path: Path, is_dir: bool, ignores: list[tuple[Path, pathspec.PathSpec]]) -> bool:
    absolute = path.absolute()
    for base, spec in ignores:
        try:
            relative = absolute.relative_to(base).as_posix()
        except ValueError:
            try:
                relative = path.resolve().relative_to(base).as_posix()
            except ValueError:
                continue
        if spec.match_file(relative + ("/" if is_dir else "")):
            return True
    return False


def _enclosing_gitignores(top: Path, root: Path) -> list[tuple[Path, pathspec.PathSpec]]:
    """The .gitignore files of the directories above ``top`` up to the repository root."""
    found: list[tuple[Path, pathspec.PathSpec]] = []
    for directory in top.parents:
        spec = _read_ignore(directory / ".gitignore")
        if spec is not None:
            found.append((directory, spec))
        exclude = _read_ignore(directory / ".git" / "info" / "exclude")
        if exclude is not None:
            found.append((directory, exclude))
        if (directory / ".git").exists():
            break
    return list(reversed(found))


def _read_ignore(path: Path) -> pathspec.PathSpec | None:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.PathSpec.from_lines("gitwildmatch", lines)
