"""What every part of the benchmark shares: where things are, errors, the environment."""

from __future__ import annotations

import os
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
REPO = BENCH.parent
CACHE = BENCH / ".cache"
WHEELS = CACHE / "wheels"
CORPORA_DIR = CACHE / "corpora"
VENVS = CACHE / "venvs"
DEVLINT_CACHE = CACHE / "devlint-cache"
PYCACHE = CACHE / "pycache"
FLOOR_SCRIPT = BENCH / "floor.py"

SETUP_TIMEOUT = 900.0
COMPLETE = ".bench-complete"


class BenchError(Exception):
    """An expected failure: printed as one line, without a traceback."""


def shown(path: Path | str) -> str:
    """A path as printed and saved: relative to the repository when inside it."""
    text = str(path)
    root = str(REPO) + os.sep
    return text[len(root) :] if text.startswith(root) else text


def measured_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every measured command: as a user's, with bytecode caching on.

    A development shell may set PYTHONDONTWRITEBYTECODE, and an editable install has no
    ``.pyc`` files: every run would then compile devlint from source (about 40 ms, a
    quarter of the one-file case). The ``.pyc`` files go to ``bench/.cache/pycache``
    rather than into the source tree.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return {**env, **(extra or {})}


# --------------------------------------------------------------------------- measuring
