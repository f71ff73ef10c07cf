"""The one pipeline: settings, then check, fix or diff, for a text, a file or many files.

The command line, the language server, ``devlint verify`` and the parallel runner's
workers all call this module: settings are resolved once (``Settings``), a file becomes a
``Source`` (decoding, notebook cells), the engine checks it, fixing applies fixes to a
fixpoint, and the result is a ``FileResult`` (diagnostics, fixes applied, diff, the bytes
to write). Only ``lint_path`` and ``lint`` touch the file system, besides the analysis
reading the project modules a file star-imports (next to ``CheckOptions.origin``).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import field, replace
from pathlib import Path
from types import MappingProxyType

from devlint import log
from devlint.cache import DEFAULT_DIRECTORY
from devlint.config import (
    FileConfig,
    check_codes,
    codes_for_file,
    find_config,
    load_config,
    resolve_codes,
    target_torch,
)
from devlint.diagnostics import Diagnostic, FileResult, FixMode
from devlint.discovery import discover, is_excluded
from devlint.engine import UNREADABLE, CheckOptions, check_text, unreadable
from devlint.noqa import warn_invalid
from devlint.records import record
from devlint.rule import all_rules
from devlint.runner import FileTask, default_jobs, run_files
from devlint.source import (
    ChangedOnDisk,
    Source,
    UnreadableSource,
    decode_source,
    unified_diff,
    write_atomically,
)
from devlint.torch_target import DEFAULT_TARGET_TORCH, TorchVersion, parse_target

__all__ = [
    "FileResult",
    "FixMode",
    "LintOutcome",
    "LintRequest",
    "Overrides",
    "Settings",
    "files_to_check",
    "lint",
    "lint_path",
    "lint_source",
    "lint_text",
    "load_settings",
    "project_settings",
    "read",
]


class UsageError(Exception):
    """The request cannot be carried out as given (one line for the user)."""


# --------------------------------------------------------------------------- settings


@record(frozen=True)
class Overrides:
    """What the command line says on top of the configuration file."""

    select: tuple[str, ...] = ()  # replaces the configured selection when given
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    target_torch: str | None = None  # --target-torch, as given
    fixable: tuple[str, ...] = ()  # replaces the configured `fixable` when given
    unfixable: tuple[str, ...] = ()
    extend_fixable: tuple[str, ...] = ()
    exclude: tuple[str, ...] | None = None  # replaces the configured (and default) excludes
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[str, ...] | None = None  # "GLOB:CODES" entries; replace the file's
    extend_per_file_ignores: tuple[str, ...] = ()
    respect_gitignore: bool | None = None
    force_exclude: bool | None = None
    ignore_noqa: bool = False
    docs_url: str | None = None


@record(frozen=True)
class Settings:
    """The configuration and the rules it enables, resolved once for a whole run."""

    config: FileConfig
    enabled: frozenset[str]
    target_torch: TorchVersion = DEFAULT_TARGET_TORCH
    unfixable: frozenset[str] = frozenset()  # codes whose fixes are withheld
    ignore_noqa: bool = False

    @classmethod
    def resolve(
        cls, config: FileConfig, overrides: Overrides = Overrides(), start: Path | None = None
    ) -> Settings:
        """``config`` merged with ``overrides``; a ConfigError for an unknown code.

        ``start`` (where linting starts) locates the project's own torch dependency when
        no configuration file does (``target-torch``)."""
        config = _overridden(config, overrides)
        rules = all_rules()
        select = _split(overrides.select) if overrides.select else config.select
        enabled = resolve_codes(
            select,
            tuple(config.extend_select) + _split(overrides.extend_select),
            tuple(config.ignore) + _split(overrides.ignore),
            known=list(rules),
            default_on=[code for code, rule in rules.items() if rule.default],
        )
        for ignored in config.per_file_ignores.values():
            check_codes(ignored, list(rules), "per-file-ignores")
        fixable = resolve_codes(  # as in ruff: every rule is fixable unless said otherwise
            _fixable_selection(overrides, config),
            _split(overrides.extend_fixable),
            tuple(config.unfixable) + _split(overrides.unfixable),
            known=list(rules),
            default_on=list(rules),
            labels=("fixable", "extend-fixable", "unfixable"),
        )
        return cls(
            config,
            enabled,
            _target_torch(overrides.target_torch, config, start),
            frozenset(rules) - fixable,
            overrides.ignore_noqa,
        )

    def options_for(self, path: Path) -> CheckOptions:
        """What to check in ``path`` (per-file ignores applied)."""
        config = self.config
        codes = codes_for_file(path, config.root, config.per_file_ignores, self.enabled)
        return CheckOptions(
            codes,
            config.guard_functions,
            config.accelerator_api,
            ignore_noqa=self.ignore_noqa,
            unfixable=self.unfixable & codes,
            line_length=config.line_length,
            target_torch=self.target_torch,
            origin=path,
        )

    def excludes(self, path: Path) -> bool:
        """Whether ``force-exclude`` keeps ``path`` (named on the command line) unchecked."""
        config = self.config
        return config.force_exclude and is_excluded(
            path, config.root, config.exclude, config.extend_exclude
        )


def _overridden(config: FileConfig, overrides: Overrides) -> FileConfig:
    """``config`` with the command line's discovery settings and per-file-ignores."""
    ignores = dict(config.per_file_ignores) if overrides.per_file_ignores is None else {}
    for entry in (*(overrides.per_file_ignores or ()), *overrides.extend_per_file_ignores):
        glob, _, codes = entry.rpartition(":")
        if not glob.strip() or not codes.strip():
            raise UsageError(f"expected GLOB:CODES in --per-file-ignores, got {entry!r}")
        ignores[glob.strip()] = _split([codes])
    return replace(
        config,
        per_file_ignores=MappingProxyType(ignores),
        exclude=config.exclude if overrides.exclude is None else _split(overrides.exclude),
        extend_exclude=(*config.extend_exclude, *_split(overrides.extend_exclude)),
        respect_gitignore=_given(overrides.respect_gitignore, config.respect_gitignore),
        force_exclude=_given(overrides.force_exclude, config.force_exclude),
        docs_url=overrides.docs_url or config.docs_url,
    )


def _fixable_selection(overrides: Overrides, config: FileConfig) -> tuple[str, ...]:
    if overrides.fixable:
        return _split(overrides.fixable)
    return ("ALL",) if config.fixable is None else config.fixable


def _given(value: bool | None, default: bool) -> bool:
    return default if value is None else value


def load_settings(
    config_file: Path | None, overrides: Overrides = Overrides(), start: Path | None = None
) -> Settings:
    """The settings of ``config_file`` (None: defaults) with ``overrides`` applied."""
    return Settings.resolve(load_config(config_file), overrides, start)


def _target_torch(given: str | None, config: FileConfig, start: Path | None) -> TorchVersion:
    """``--target-torch`` when given, else the configuration's (or the project's)."""
    if given is None:
        return target_torch(config, start)
    version = parse_target(given)
    if version is None:
        raise UsageError(
            f"invalid value for '--target-torch': expected a release such as 2.6, got {given!r}"
        )
    return version


def _split(values: Sequence[str]) -> tuple[str, ...]:
    """``--select A,B --select C`` -> (A, B, C)."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


# --------------------------------------------------------------------------- one file


def read(data: bytes, display: str) -> Source | None:
    """``data`` as a ``Source`` (a notebook when ``display`` ends with ``.ipynb``).

    None for a notebook in another kernel's language; ``UnreadableSource`` when the
    bytes cannot be decoded.
    """
    if display.endswith(".ipynb"):
        from devlint.notebooks import read_notebook  # only for notebooks

        return read_notebook(data)
    return decode_source(data)


def lint_source(
    source: Source, display: str, options: CheckOptions, fix: FixMode | None = None
) -> FileResult:
    """Check ``source``, or fix it to a fixpoint (``fix``); writes nothing.

    Invalid ``# noqa`` directives are logged as warnings (once per file, as ruff does).
    """
    if not options.ignore_noqa:
        warn_invalid(source.text, display, source.cells.locate if source.cells else None)
    if fix is None:
        return FileResult(_check(source, display, options))
    from devlint.fixing import fix_text  # a plain check never fixes

    result = fix_text(source.text, display, options, fix.unsafe)
    if result.text == source.text:
        return FileResult(source.place(result.diagnostics))
    if source.cells is None:
        try:
            data = result.text.encode(source.encoding)
        except UnicodeEncodeError as error:
            found = check_text(source.text, display, options)
            return FileResult(found, error=f"{display}: not fixed: {error}")
        # The path as shown, as ruff writes it (and as notebooks' cell headers): patch -p0.
        diff = unified_diff(source.text, result.text, display, display)
        return FileResult(result.diagnostics, result.applied, diff, fixed=data)
    assert source.data is not None  # a notebook is always read from bytes
    from devlint.notebooks import NotWritable, cell_diff, read_notebook, rewrite

    try:
        data = rewrite(source.data, result.text)
        notebook = read_notebook(data)
    except (NotWritable, UnreadableSource) as error:
        return FileResult(_check(source, display, options), error=f"{display}: {error}")
    assert notebook is not None  # it was a Python notebook before the fix
    diff = cell_diff(source.data, data, display)
    return FileResult(_check(notebook, display, options), result.applied, diff, fixed=data)


def _check(source: Source, display: str, options: CheckOptions) -> list[Diagnostic]:
    """The engine's diagnostics on ``source``, placed in its notebook cells if it has any."""
    return source.place(check_text(source.text, display, options))


def lint_text(
    data: bytes, display: str, options: CheckOptions, fix: FixMode | None = None
) -> FileResult:
    """``lint_source`` for bytes (stdin, an editor's buffer): unreadable input is DEV900."""
    try:
        source = read(data, display)
    except UnreadableSource as error:
        return FileResult(unreadable(str(error), display, options))
    if source is None:  # another kernel's language: nothing for devlint to check
        return FileResult([])
    return lint_source(source, display, options, fix)


def lint_path(
    path: Path, display: str, options: CheckOptions, fix: FixMode | None = None
) -> FileResult:
    """Check or fix one file; with ``fix.write`` the fixed file replaces it atomically."""
    try:
        data = path.read_bytes()
    except OSError as error:  # a missing path too: DEV900, as ruff reports E902
        reason = error.strerror or str(error)
        if UNREADABLE not in options.codes:  # not silently, as ruff warns with E902 off
            log.logger().warning(f"Failed to read {display}: {reason}")
        return FileResult(unreadable(f"cannot read file: {reason}", display, options))
    result = lint_text(data, display, options, fix)
    if fix is None or not fix.write or result.fixed is None:
        return result
    try:
        write_atomically(path, result.fixed, data)
    except (OSError, ChangedOnDisk) as error:
        return FileResult(lint_text(data, display, options).diagnostics, error=str(error))
    return result


def lint_task(task: FileTask) -> FileResult:
    """One task of the parallel runner (a module-level function: workers import it)."""
    return lint_path(task.path, task.display, task.options, task.fix)


# --------------------------------------------------------------------------- many files


@record(frozen=True)
class LintRequest:
    """What to lint and how: paths (``-`` for stdin), settings, fixing, the runner."""

    paths: tuple[Path, ...]
    config_file: Path | None = None  # None: the nearest one to the first path
    overrides: Overrides = Overrides()
    fix: FixMode | None = None
    stdin_filename: str | None = None
    jobs: int | None = None
    use_cache: bool = True
    cache_dir: Path | None = None
    show_progress: bool = False
    isolated: bool = False  # no configuration file at all (ruff's --isolated)


@record
class LintOutcome:
    """What was found (and, with fixing, fixed) across all files."""

    diagnostics: list[Diagnostic]
    files_checked: int
    applied_per_file: dict[str, Counter[str]] = field(default_factory=dict)
    diffs: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # files that could not be written
    fixed_stdin: bytes | None = None  # fixing stdin: the fixed source, for stdout
    cache_hits: int = 0  # files whose result came from the cache
    stdin: bytes | None = None  # what was read from stdin (the report quotes its lines)

    @property
    def applied(self) -> Counter[str]:
        return sum(self.applied_per_file.values(), Counter())

    def add(self, display: str, result: FileResult) -> None:
        self.diagnostics.extend(result.diagnostics)
        if result.applied:
            self.applied_per_file[display] = result.applied
        if result.diff:
            self.diffs.append(result.diff)
        if result.error:
            self.problems.append(result.error)
        self.cache_hits += result.cached


def project_settings(
    start: Path,
    config_file: Path | None = None,
    overrides: Overrides = Overrides(),
    isolated: bool = False,
) -> Settings:
    """The settings of the project ``start`` (a file or a directory) belongs to: the one way
    devlint resolves settings (``devlint check``, the language server, ``devlint verify``'s
    fixtures, ``devlint run``; docs/design.md, "Configuration").

    ``config_file`` (``--config``), else the configuration file nearest to ``start``, with
    ``overrides`` applied; without a ``target-torch`` setting, the project's own ``torch>=``
    dependency (from the configuration's folder, or without a configuration file from the
    nearest folder at or above ``start`` that declares one). ``isolated``: no configuration
    file and no project dependency, the defaults and ``overrides`` only.
    """
    if isolated:
        if config_file is not None:
            raise UsageError("--isolated cannot be combined with --config")
        settings = load_settings(None, overrides)
        if overrides.target_torch is None:  # not the dependency of the folder it runs in
            settings = replace(settings, target_torch=DEFAULT_TARGET_TORCH)
        return settings
    start = start.resolve()
    directory = start.parent if start.is_file() else start
    return load_settings(config_file or find_config(directory), overrides, directory)


def request_settings(request: LintRequest) -> Settings:
    """The settings of the configuration nearest to what ``request`` lints."""
    paths, reads_stdin = request.paths, Path("-") in request.paths
    start = Path.cwd()
    if reads_stdin and request.stdin_filename:
        start = Path(request.stdin_filename).parent
    elif not reads_stdin and paths:
        start = paths[0] if paths[0].is_dir() else paths[0].parent
    return project_settings(start, request.config_file, request.overrides, request.isolated)


def lint(request: LintRequest, settings: Settings | None = None) -> LintOutcome:
    """Check, fix or diff every file ``request`` names (stdin for ``-``)."""
    settings = settings or request_settings(request)
    if Path("-") in request.paths:
        if len(request.paths) > 1:
            raise UsageError("`-` (stdin) cannot be combined with other paths")
        return _lint_stdin(request, settings)
    config = settings.config
    files = files_to_check(request, settings)
    cache_dir = None
    if request.use_cache:
        cache_dir = request.cache_dir or config.cache_dir or config.root / DEFAULT_DIRECTORY
    tasks = [
        FileTask(path, str(path), settings.options_for(path), cache_dir, request.fix)
        for path in files
    ]
    outcome = LintOutcome([], len(tasks))
    jobs = request.jobs or default_jobs()
    for task, result in zip(
        tasks, run_files(tasks, lint_task, jobs, request.show_progress), strict=True
    ):
        outcome.add(task.display, result)
    outcome.diagnostics.sort(key=Diagnostic.sort_key)
    return outcome


def files_to_check(request: LintRequest, settings: Settings) -> list[Path]:
    """The files ``request`` names, after excludes and ``.gitignore`` (not stdin)."""
    config = settings.config
    return discover(
        list(request.paths) or [Path(".")],
        root=config.root,
        exclude=config.exclude,
        extend_exclude=config.extend_exclude,
        respect_gitignore=config.respect_gitignore,
        force_exclude=config.force_exclude,
    )


def _lint_stdin(request: LintRequest, settings: Settings) -> LintOutcome:
    display = request.stdin_filename or "-"
    options = settings.options_for(Path(display))
    if not request.stdin_filename:
        options = replace(options, origin=None)  # no file: star imports stay unresolved
    data = sys.stdin.buffer.read()
    if request.stdin_filename and settings.excludes(Path(display)):
        excluded = LintOutcome([], 0)  # as ruff does: nothing to report, the input unchanged
        excluded.fixed_stdin = data if request.fix is not None and request.fix.write else None
        return excluded
    result = lint_text(data, display, options, request.fix)
    outcome = LintOutcome([], 1, stdin=data)
    outcome.add(display, result)
    if request.fix is not None and request.fix.write:
        outcome.fixed_stdin = data if result.fixed is None else result.fixed
    return outcome
