"""The result cache: diagnostics per file, keyed by content, settings and devlint version
(and the content of the project modules the file star-imports).

Entries are small JSON files written atomically (temporary file + rename), so concurrent
runs never see half an entry; an unreadable or corrupt entry is a miss and is rewritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from devlint import __version__
from devlint.diagnostics import Diagnostic, Edit, Fix, Location

DEFAULT_DIRECTORY = ".devlint_cache"


class ResultCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory / __version__

    @staticmethod
    def key(data: bytes, display: str, settings: str, dependencies: Sequence[bytes] = ()) -> str:
        """The entry of a file's result: its content, the settings, and the other files its
        result depends on (``dependencies``: the star-imported project modules)."""
        digest = hashlib.sha256()
        for part in (
            __version__.encode(),
            settings.encode(),
            display.encode(),
            data,
            *dependencies,
        ):
            digest.update(len(part).to_bytes(8, "little"))
            digest.update(part)
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def load(self, key: str) -> list[Diagnostic] | None:
        try:
            items = json.loads(self._path(key).read_text(encoding="utf-8"))
            return [_diagnostic(item) for item in items]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def store(self, key: str, diagnostics: list[Diagnostic]) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _ignore_everything(self.directory.parent)
            handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump([asdict(d) for d in diagnostics], out)
            os.replace(temporary, path)
        except OSError:
            pass  # a read-only or full disk only costs speed


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
    )
