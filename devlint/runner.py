"""Checking many files: in parallel worker processes, with progress on a terminal."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from devlint.cache import ResultCache
from devlint.diagnostics import Diagnostic
from devlint.engine import CheckOptions, check_path

if TYPE_CHECKING:  # rich and fixing are imported only when used
    from rich.console import Console
    from rich.progress import Progress

    from devlint.fixing import FileFix, FixMode

# Below this many files per worker, starting processes costs more than it saves.
MIN_FILES_PER_JOB = 8
CHUNK_SIZE = 16
PROGRESS_THRESHOLD = 100


@dataclass(frozen=True, slots=True)
class FileTask:
    path: Path
    display: str
    options: CheckOptions
    cache_dir: Path | None = None  # None: --no-cache
    fix: FixMode | None = None  # --fix / --diff: fix the file (never cached)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _check_chunk(tasks: Sequence[FileTask]) -> list[FileFix | list[Diagnostic]]:
    return [_fix(task, task.fix) if task.fix else _check_cached(task) for task in tasks]


def _fix(task: FileTask, mode: FixMode) -> FileFix:
    from devlint.fixing import fix_path  # only when fixing

    return fix_path(task.path, task.display, task.options, mode)


def _check_cached(task: FileTask) -> list[Diagnostic]:
    if task.cache_dir is None:
        return check_path(task.path, task.display, task.options)
    try:
        data = task.path.read_bytes()
    except OSError:  # reported as DEV900 by the engine, never cached
        return check_path(task.path, task.display, task.options)
    cache = ResultCache(task.cache_dir)
    options = task.options
    settings = repr((sorted(options.codes), options.guard_functions, options.accelerator_api))
    key = cache.key(data, task.display, settings)
    found = cache.load(key)
    if found is None:
        found = check_path(task.path, task.display, task.options)
        cache.store(key, found)
    return found


def check_files(tasks: Sequence[FileTask], jobs: int, show_progress: bool) -> list[Diagnostic]:
    """Check every file; the result is sorted by path, line and column."""
    results: list[Diagnostic] = []
    for outcome in run_files(tasks, jobs, show_progress):
        results.extend(outcome if isinstance(outcome, list) else outcome.diagnostics)
    return sorted(results, key=Diagnostic.sort_key)


def run_files(
    tasks: Sequence[FileTask], jobs: int, show_progress: bool
) -> list[FileFix | list[Diagnostic]]:
    """Check (or fix) every file, in parallel; one outcome per task, in order."""
    chunks = [tasks[i : i + CHUNK_SIZE] for i in range(0, len(tasks), CHUNK_SIZE)]
    results: list[FileFix | list[Diagnostic]] = []
    with _progress(len(tasks), show_progress and len(tasks) >= PROGRESS_THRESHOLD) as advance:
        if jobs <= 1 or len(tasks) < MIN_FILES_PER_JOB * 2:
            for chunk in chunks:
                results.extend(_check_chunk(chunk))
                advance(len(chunk))
        else:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                for chunk, found_per_file in zip(
                    chunks, pool.map(_check_chunk, chunks), strict=True
                ):
                    results.extend(found_per_file)
                    advance(len(chunk))
    return results


class _progress:
    """A rich progress bar on stderr, or nothing."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.enabled = total, enabled
        self.bar: Progress | None = None

    def __enter__(self) -> Callable[[int], None]:
        if not self.enabled:
            return lambda _count: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        self.bar = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            transient=True,
            console=_stderr_console(),
        )
        self.bar.start()
        task = self.bar.add_task("checking", total=self.total)
        bar = self.bar
        return lambda count: bar.advance(task, count)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _stderr_console() -> Console:
    from rich.console import Console

    return Console(file=sys.stderr)
