"""``devlint check --watch``: check again whenever a checked file changes.

Polls modification times (and sizes) twice a second: no dependency, and the same on
every platform. A run that fails (a broken configuration while it is being edited) is
reported and the watch goes on.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import NoReturn

POLL_SECONDS = 0.5

Snapshot = dict[str, tuple[int, int]]


def snapshot(paths: Sequence[Path]) -> Snapshot:
    """Each path's modification time and size (missing files are left out)."""
    state: Snapshot = {}
    for path in paths:
        try:
            stat = os.stat(path)
        except OSError:
            continue
        state[os.fspath(path)] = (stat.st_mtime_ns, stat.st_size)
    return state


def watch(
    files: Callable[[], list[Path]], run: Callable[[], None], say: Callable[[str], None]
) -> NoReturn:
    """Call ``run``, then again whenever one of ``files()`` (or its directory) changes.

    The files are listed and their state taken before each run, so a change made while
    a run is under way starts the next one.
    """
    say(f"[{_now()}] Starting devlint in watch mode...")
    watched: list[Path] = []
    try:
        while True:
            watched = _listed(files, watched)
            state = snapshot(watched)
            _run(run)
            while snapshot(watched) == state:
                time.sleep(POLL_SECONDS)
            say(f"[{_now()}] File change detected...")
    except KeyboardInterrupt:
        raise SystemExit(0) from None


def _listed(files: Callable[[], list[Path]], previous: list[Path]) -> list[Path]:
    """The files to watch and their directories (a new file changes its directory)."""
    try:
        found = files()
    except SystemExit:  # the listing reported its error; keep watching what was watched
        return previous
    return [*found, *dict.fromkeys(path.parent for path in found)]


def _run(run: Callable[[], None]) -> None:
    with contextlib.suppress(SystemExit):  # the run reported its error (a broken config)
        run()


def _now() -> str:
    return datetime.now().strftime("%H:%M:%S")
