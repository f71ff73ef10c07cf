"""Paths on the command line -> the files to check (excludes, ``.gitignore``, notebooks).

Directories are walked with :func:`os.scandir`, depth first, without following symlinked
directories (so a symlink loop cannot hang the walk), yielding ``.py`` and ``.ipynb``
files. A directory or file is skipped when an exclude pattern or a ``.gitignore`` rule
matches it; a skipped directory is not entered, so, as in git, nothing below it can be
re-included. Explicitly named files are always returned, and an explicitly named
directory is walked even when a pattern would exclude it (like ruff without
``force-exclude``); the patterns still apply to what is inside it.

Patterns are gitignore patterns (compiled once with :mod:`pathspec`) that must match the
path itself, not merely one of its directories: ``build`` matches a file or directory
named ``build`` at any depth, ``tests/data`` the path ``tests/data`` below the project
root, ``*.egg-info`` any such name, ``logs/`` directories only and ``out/**`` everything
inside ``out``. Each ``.gitignore`` is anchored at its own directory; deeper files take
precedence over shallower ones, ``.git/info/exclude`` comes below them all, and within a
file the last matching line wins (``!pattern`` re-includes).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from devlint.records import record

__all__ = ["DEFAULT_EXCLUDES", "SUFFIXES", "discover", "is_excluded"]

DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "build", "dist", "__pycache__",
    "site-packages", "node_modules", ".mypy_cache", ".ruff_cache", ".pytest_cache",
    ".devlint_cache", ".eggs", "*.egg-info", ".ipynb_checkpoints",
)  # fmt: skip
SUFFIXES: tuple[str, ...] = (".py", ".ipynb")

_GLOB_CHARS = frozenset("*?[]\\!/# ")


@record(frozen=True, slots=True)
class _Pattern:
    regex: re.Pattern[str]
    include: bool  # True: the pattern excludes (ignores); False: a ``!`` re-include
    contents: bool  # ``dir/**``: matches what is inside the directory, not the directory


@record(frozen=True, slots=True)
class _Patterns:
    """Compiled patterns in file order, plus a prefilter: most paths match no pattern
    at all, and at most two regex calls rule them out. ``by_name`` joins the patterns
    without a slash (they can only match the last component), ``others`` the rest;
    ``filtered`` is False when the prefilter could not be built."""

    items: tuple[_Pattern, ...]
    by_name: re.Pattern[str] | None = None
    others: re.Pattern[str] | None = None
    filtered: bool = False

    def __bool__(self) -> bool:
        return bool(self.items)


_NO_PATTERNS = _Patterns(())
_NAMED_GROUP = re.compile(r"\(\?P<\w+>")
_ANY_DIRECTORY = "^(?:.+/)?"  # how pathspec starts the regex of a pattern without a slash
# A .gitignore level: the directory it is anchored at (absolute, with a trailing
# separator) and its patterns.
_Level = tuple[str, _Patterns]


def _compile(lines: Sequence[str]) -> _Patterns:
    """gitignore lines -> patterns; a line pathspec rejects is skipped, as git skips it."""
    import pathspec  # only where there are patterns (a one-file run may have none)

    try:
        specs = [pathspec.GitIgnoreSpec.from_lines(lines)]
    except (ValueError, TypeError):
        specs = []
        for line in lines:
            try:
                specs.append(pathspec.GitIgnoreSpec.from_lines([line]))
            except (ValueError, TypeError):
                continue
    compiled = []
    for spec in specs:
        for pattern in spec.patterns:
            regex = getattr(pattern, "regex", None)
            if pattern.include is None or regex is None:  # comment or blank line
                continue
            text = str(getattr(pattern, "pattern", "") or "").rstrip()
            compiled.append(_Pattern(regex, pattern.include, text.endswith("/**")))
    if not compiled:
        return _NO_PATTERNS
    by_name: list[str] = []
    others: list[str] = []
    for item in compiled:
        source = _NAMED_GROUP.sub("(?:", item.regex.pattern)  # names would clash when joined
        if not item.contents and source.startswith(_ANY_DIRECTORY):
            by_name.append(source[len(_ANY_DIRECTORY) :])
        else:
            others.append(source)
    try:
        return _Patterns(
            tuple(compiled),
            re.compile("|".join(f"(?:{p})" for p in by_name)) if by_name else None,
            re.compile("|".join(f"(?:{p})" for p in others)) if others else None,
            filtered=True,
        )
    except re.error:  # pragma: no cover - a pathspec version with unusual regexes
        return _Patterns(tuple(compiled))


def _verdict(patterns: _Patterns, subject: str) -> bool | None:
    """True: ignored, False: re-included, None: no pattern matches ``subject`` itself.

    ``subject`` is a posix path relative to where the patterns are anchored, with a
    trailing ``/`` for a directory. pathspec's regexes also match everything below a
    matching directory; a walk prunes such directories instead, so only a match of the
    path itself counts here.
    """
    if patterns.filtered:
        name = subject[subject.rfind("/", 0, len(subject) - 1) + 1 :]
        if not (
            (patterns.by_name is not None and patterns.by_name.fullmatch(name))
            or (patterns.others is not None and patterns.others.match(subject))
        ):
            return None
    for pattern in reversed(patterns.items):
        if pattern.contents:
            if not pattern.regex.match(subject):
                continue
            if subject.endswith("/") and pattern.regex.fullmatch(subject):
                continue  # ``out/**`` against ``out/`` itself
        elif not pattern.regex.fullmatch(subject):
            continue
        return pattern.include
    return None


@record(frozen=True)
class _Excludes:
    """The exclude patterns: plain names in sets (the common case), globs compiled when
    first needed (checking one named file needs none of them)."""

    names: frozenset[str]
    dir_names: frozenset[str]
    globs: tuple[str, ...]

    @classmethod
    def build(cls, patterns: Iterable[str]) -> _Excludes:
        raw = [pattern for pattern in patterns if pattern.strip()]
        if any(pattern.lstrip().startswith("!") for pattern in raw):
            return cls(frozenset(), frozenset(), tuple(raw))  # order matters: no shortcut
        names: set[str] = set()
        dir_names: set[str] = set()
        globs: list[str] = []
        for pattern in raw:
            body = pattern[:-1] if pattern.endswith("/") else pattern
            if body and not (_GLOB_CHARS & set(body)) and body not in (".", ".."):
                (dir_names if pattern.endswith("/") else names).add(body)
            else:
                globs.append(pattern)
        return cls(frozenset(names), frozenset(dir_names), tuple(globs))

    @functools.cached_property
    def patterns(self) -> _Patterns:
        return _compile(self.globs)

    def excludes(self, name: str, relative: str | None, is_dir: bool) -> bool:
        if name in self.names or (is_dir and name in self.dir_names):
            return True
        if not self.globs:
            return False
        subject = (relative if relative is not None else name) + ("/" if is_dir else "")
        return _verdict(self.patterns, subject) is True


class _GitIgnores:
    """Reads and compiles each ``.gitignore`` (and ``.git/info/exclude``) once."""

    def __init__(self) -> None:
        self._cache: dict[str, _Patterns] = {}

    def read(self, file: str) -> _Patterns:
        cached = self._cache.get(file)
        if cached is None:
            try:
                with open(file, encoding="utf-8", errors="replace") as handle:
                    lines = handle.read().splitlines()
            except OSError:
                lines = []
            cached = self._cache[file] = _compile(lines) if lines else _NO_PATTERNS
        return cached

    def enclosing(self, top: str, root: str) -> tuple[_Level, ...]:
        """The levels that apply to ``top`` from above it: ``.git/info/exclude`` of its
        repository, then the ``.gitignore`` files from the repository's top (or, outside
        a repository, from ``root`` when ``top`` is below it) down to ``top``'s parent.
        ``top``'s own ``.gitignore`` is read when it is walked."""
        chain = [top]
        git_top: str | None = None
        while True:
            if os.path.exists(os.path.join(chain[-1], ".git")):
                git_top = chain[-1]
                break
            parent = os.path.dirname(chain[-1])
            if parent == chain[-1]:
                break
            chain.append(parent)
        if git_top is None:
            chain = [top]
            if _is_below(top, root):
                while chain[-1] != root:
                    chain.append(os.path.dirname(chain[-1]))
        levels: list[_Level] = []
        if git_top is not None:
            info = self.read(os.path.join(git_top, ".git", "info", "exclude"))
            if info:
                levels.append((_prefix(git_top), info))
        for directory in reversed(chain[1:]):
            patterns = self.read(os.path.join(directory, ".gitignore"))
            if patterns:
                levels.append((_prefix(directory), patterns))
        return tuple(levels)


def _prefix(directory: str) -> str:
    return directory if directory.endswith(os.sep) else directory + os.sep


def _is_below(path: str, directory: str) -> bool:
    return path == directory or path.startswith(_prefix(directory))


def _posix(path: str) -> str:
    return path if os.sep == "/" else path.replace(os.sep, "/")


def _is_ignored(levels: tuple[_Level, ...], absolute: str, is_dir: bool) -> bool:
    suffix = "/" if is_dir else ""
    for prefix, patterns in reversed(levels):  # the deepest .gitignore decides first
        verdict = _verdict(patterns, _posix(absolute[len(prefix) :]) + suffix)
        if verdict is not None:
            return verdict
    return False


def discover(
    paths: Sequence[Path],
    *,
    root: Path,
    exclude: Sequence[str] | None = None,
    extend_exclude: Sequence[str] = (),
    respect_gitignore: bool = True,
    force_exclude: bool = False,
    on_error: Callable[[Path, OSError], None] | None = None,
) -> list[Path]:
    """The files to check under ``paths``: no duplicates, sorted per argument, arguments
    in order.

    ``exclude`` replaces :data:`DEFAULT_EXCLUDES` when given, ``extend_exclude`` adds to
    them; both are matched against a path relative to ``root``. Explicitly named files
    are always returned, whatever their extension, and so is a named path that does not
    exist (or a symlink that leads nowhere): reading it fails, and it is reported as
    unreadable (DEV900) while the other paths are checked, as ruff reports E902. With
    ``force_exclude`` (ruff's ``--force-exclude``, for pre-commit, which names every
    file), a named file or directory that an exclude pattern matches, or that lies in an
    excluded directory, is skipped too. Unreadable directories are
    skipped; ``on_error`` (if given) is told about each.
    """
    excludes = _Excludes.build(
        [*(DEFAULT_EXCLUDES if exclude is None else exclude), *extend_exclude]
    )
    gitignores = _GitIgnores()
    root_abs = os.path.abspath(root)
    root_real = os.path.realpath(root)
    seen: set[str] = set()
    result: list[Path] = []
    for path in paths:
        if force_exclude and _named_path_excluded(path, root_abs, excludes):
            continue
        if os.path.isdir(path):
            found = _walk(
                os.fspath(path),
                root_abs,
                root_real,
                excludes,
                gitignores,
                respect_gitignore,
                on_error,
            )
        else:
            found = [(Path(path), os.path.abspath(path))]
        for file, absolute in found:
            key = os.path.normcase(absolute)
            if key not in seen:
                seen.add(key)
                result.append(file)
    return result


def is_excluded(
    path: Path,
    root: Path,
    exclude: Sequence[str] | None = None,
    extend_exclude: Sequence[str] = (),
) -> bool:
    """Whether the exclude patterns (as for ``discover``) cover ``path`` or a directory
    it lies in: what ``force_exclude`` skips."""
    excludes = _Excludes.build(
        [*(DEFAULT_EXCLUDES if exclude is None else exclude), *extend_exclude]
    )
    return _named_path_excluded(path, os.path.abspath(root), excludes)


def _named_path_excluded(path: Path, root_abs: str, excludes: _Excludes) -> bool:
    """Whether ``path`` or one of its directories below ``root_abs`` is excluded."""
    absolute = os.path.abspath(path)
    if not _is_below(absolute, root_abs) or absolute == root_abs:
        parts = [os.path.basename(absolute)]
        relative = None
    else:
        relative = _posix(absolute[len(_prefix(root_abs)) :])
        parts = relative.split("/")
    for depth in range(1, len(parts) + 1):
        is_dir = depth < len(parts) or os.path.isdir(path)
        subject = "/".join(parts[:depth]) if relative is not None else None
        if excludes.excludes(parts[depth - 1], subject, is_dir):
            return True
    return False


def _walk(
    top: str,
    root_abs: str,
    root_real: str,
    excludes: _Excludes,
    gitignores: _GitIgnores,
    respect_gitignore: bool,
    on_error: Callable[[Path, OSError], None] | None,
) -> list[tuple[Path, str]]:
    """The files below the directory ``top``, sorted, each with its absolute path."""
    # Match against the absolute path when it lies below the root, else against the
    # symlink-free one (the root may have been resolved), else outside the root.
    top_abs = os.path.abspath(top)
    match_top, root = top_abs, root_abs
    if not _is_below(top_abs, root_abs):
        real = os.path.realpath(top)
        if _is_below(real, root_real):
            match_top, root = real, root_real
    inside_root = _is_below(match_top, root)
    levels = gitignores.enclosing(match_top, root) if respect_gitignore else ()
    # Every path below top is one of these prefixes + the same relative part.
    shown_prefix, abs_prefix, match_prefix = (_prefix(p) for p in (top, top_abs, match_top))
    root_cut = len(_prefix(root))

    found: list[str] = []  # paths relative to top
    stack: list[tuple[str, tuple[_Level, ...]]] = [("", levels)]
    while stack:
        rel_dir, levels = stack.pop()
        match_dir = match_prefix + rel_dir
        try:
            with os.scandir(match_dir[:-1] or os.sep) as iterator:
                entries = list(iterator)
        except OSError as error:
            if on_error is not None:
                on_error(Path(shown_prefix + rel_dir), error)
            continue
        if respect_gitignore and any(entry.name == ".gitignore" for entry in entries):
            patterns = gitignores.read(match_dir + ".gitignore")
            if patterns:
                levels = (*levels, (match_dir, patterns))
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                if not is_dir and not (name.endswith(SUFFIXES) and entry.is_file()):
                    continue
            except OSError:
                continue
            match_path = match_dir + name
            relative = _posix(match_path[root_cut:]) if inside_root else None
            if excludes.excludes(name, relative, is_dir):
                continue
            if levels and _is_ignored(levels, match_path, is_dir):
                continue
            if is_dir:
                stack.append((rel_dir + name + os.sep, levels))
            else:
                found.append(rel_dir + name)
    found.sort(key=lambda rel: rel.split(os.sep))  # the order of Path objects
    return [(Path(shown_prefix + rel), abs_prefix + rel) for rel in found]
