"""``devlint check --watch``: check again whenever a checked file changes.

Polls modification times (and sizes) twice a second: no dependency, and the same on
every platform. A run that fails (a broken configuration while it is being edited) is
reported and the watch goes on.
"""

from __future__ import annotations

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


def watch(run: Callable[[], list[Path]], say: Callable[[str], None]) -> NoReturn:
    """Call ``run`` (which returns the paths to watch), then again on every change."""
    say(f"[{_now()}] Starting devlint in watch mode...")
    watched = _run(run, [])
    state = snapshot(watched)
    try:
        while True:
            time.sleep(POLL_SECONDS)
            current = snapshot(watched)
            if current != state:
                say(f"[{_now()}] File change detected...")
                watched = _run(run, watched)
                state = snapshot(watched)
    except KeyboardInterrupt:
        raise SystemExit(0) from None


def _run(run: Callable[[], list[Path]], previous: list[Path]) -> list[Path]:
    """The files the run checked and their directories (a new file changes its directory)."""
    try:
        files = run()
    except SystemExit:  # the run reported its error; keep watching what was watched
        return previous
    directories = dict.fromkeys(path.parent for path in files)
    return [*files, *directories]


def _now() -> str:
    return datetime.now().strftime("%H:%M:%S")
