"""The result cache: diagnostics per file, keyed by content, settings and devlint itself.

An entry also names the project modules the result was computed from (imported siblings,
``analysis/project_imports.py``) with their size and modification time: when one of them
changed or went away, the entry is a miss.

Entries are small JSON files written atomically (temporary file + rename), so concurrent
runs never see half an entry; an unreadable or corrupt entry is a miss and is rewritten.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from devlint import __version__
from devlint.diagnostics import Diagnostic, Edit, Fix, Location, Related

DEFAULT_DIRECTORY = ".devlint_cache"
_STAMP: list[bytes] = []  # ``_code_stamp``, once per process
# The layout of an entry: entries of another layout are never read (2: ``related``).
ENTRY_FORMAT = "2"


class ResultCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory / f"{__version__}-{ENTRY_FORMAT}"

    @staticmethod
    def key(data: bytes, display: str, settings: str) -> str:
        """The entry of a file's result: its content and the settings."""
        import hashlib  # here, like json below: --no-cache runs import neither

        digest = hashlib.sha256()
        for part in (_code_stamp(), settings.encode(), display.encode(), data):
            digest.update(len(part).to_bytes(8, "little"))
            digest.update(part)
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def load(self, key: str) -> list[Diagnostic] | None:
        import json

        try:
            entry = json.loads(self._path(key).read_text(encoding="utf-8"))
            if any(_stamp(Path(path)) != [path, *stamp] for path, *stamp in entry["read"]):
                return None  # a project module it was computed from changed
            return [_diagnostic(item) for item in entry["diagnostics"]]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def store(self, key: str, diagnostics: list[Diagnostic], read: Sequence[Path] = ()) -> None:
        """Keep a file's diagnostics, with the project modules they were computed from."""
        import json

        path = self._path(key)
        # Written beside the entry, then renamed over it: a reader never sees half of one.
        # The process id keeps concurrent writers apart (without tempfile, which imports
        # more than a one-file run needs).
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _ignore_everything(self.directory.parent)
            with open(temporary, "w", encoding="utf-8") as out:
                entry = {
                    "read": [_stamp(module) for module in read],
                    "diagnostics": [asdict(d) for d in diagnostics],
                }
                json.dump(entry, out)
            os.replace(temporary, path)
        except OSError:
            pass  # a read-only or full disk only costs speed


def _stamp(path: Path) -> list[object]:
    """``[path, mtime_ns, size]`` (``None, None`` when it is gone)."""
    try:
        status = path.stat()
    except OSError:
        return [str(path), None, None]
    return [str(path), status.st_mtime_ns, status.st_size]


def _ignore_everything(directory: Path) -> None:
    marker = directory / ".gitignore"
    if not marker.exists():
        marker.write_text("# created by devlint\n*\n", encoding="utf-8")


def _location(data: dict[str, Any]) -> Location:
    return Location(int(data["row"]), int(data["column"]))


def _diagnostic(data: dict[str, Any]) -> Diagnostic:
    fix = data.get("fix")
    return Diagnostic(
        code=data["code"],
        name=data["name"],
        message=data["message"],
        path=data["path"],
        start=_location(data["start"]),
        end=_location(data["end"]),
        fix=None
        if fix is None
        else Fix(
            fix["applicability"],
            fix["message"],
            tuple(
                Edit(e["content"], _location(e["start"]), _location(e["end"])) for e in fix["edits"]
            ),
        ),
        noqa_row=data.get("noqa_row"),
        cell=data.get("cell"),
        url=data.get("url"),
        related=tuple(
            Related(r["message"], r["path"], _location(r["start"]), _location(r["end"]), r["cell"])
            for r in data["related"]
        ),
    )


def _code_stamp() -> bytes:
    """devlint's version and its own modules (each one's path, size and modification
    time): an edit of a source checkout (an editable install) makes a new key, as a new
    release does, so no result computed by other code is read back."""
    if not _STAMP:
        import devlint.rules

        parts = [__version__]
        for root in (Path(__file__).parent, *map(Path, devlint.rules.__path__)):
            for folder, subfolders, files in os.walk(root):
                subfolders.sort()
                for name in sorted(files):
                    if name.endswith(".py"):
                        status = os.stat(os.path.join(folder, name))
                        parts.append(f"{name}:{status.st_size}:{status.st_mtime_ns}")
        _STAMP.append("\n".join(parts).encode())
    return _STAMP[0]
