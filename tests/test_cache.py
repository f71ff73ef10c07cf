"""The result cache: hits, invalidation by content and settings, self-healing."""

from __future__ import annotations

from pathlib import Path

import pytest

from devlint import runner
from devlint.engine import CheckOptions
from devlint.rule import all_rules
from devlint.runner import FileTask, check_files

BUG = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"
ALL = CheckOptions(frozenset(all_rules()))


@pytest.fixture
def engine_calls(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []
    real = runner.check_path

    def counting(path: Path, display: str, options: CheckOptions):  # type: ignore[no-untyped-def]
        calls.append(path)
        return real(path, display, options)

    monkeypatch.setattr(runner, "check_path", counting)
    return calls


def run(path: Path, cache: Path | None, options: CheckOptions = ALL) -> list[str]:
    found = check_files([FileTask(path, str(path), options, cache)], jobs=1, show_progress=False)
    return [f"{d.start.row}:{d.code}" for d in found]


def test_second_run_is_served_from_the_cache(tmp_path: Path, engine_calls: list[Path]) -> None:
    source = tmp_path / "bug.py"
    source.write_text(BUG)
    cache = tmp_path / "cache"
    assert run(source, cache) == ["2:DEV003"]
    assert run(source, cache) == ["2:DEV003"]
    assert len(engine_calls) == 1
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"


def test_changed_content_or_settings_miss(tmp_path: Path, engine_calls: list[Path]) -> None:
    source = tmp_path / "bug.py"
    source.write_text(BUG)
    cache = tmp_path / "cache"
    run(source, cache)
    source.write_text(BUG.replace(".cuda()", ""))
    assert run(source, cache) == []
    assert run(source, cache, CheckOptions(frozenset({"DEV001"}))) == []
    assert len(engine_calls) == 3


def test_corrupt_entries_heal(tmp_path: Path, engine_calls: list[Path]) -> None:
    source = tmp_path / "bug.py"
    source.write_text(BUG)
    cache = tmp_path / "cache"
    run(source, cache)
    for entry in cache.rglob("*.json"):
        entry.write_text("{not json")
    assert run(source, cache) == ["2:DEV003"]
    assert run(source, cache) == ["2:DEV003"]
    assert len(engine_calls) == 2


def test_no_cache_writes_nothing(tmp_path: Path, engine_calls: list[Path]) -> None:
    source = tmp_path / "bug.py"
    source.write_text(BUG)
    assert run(source, None) == ["2:DEV003"]
    assert run(source, None) == ["2:DEV003"]
    assert len(engine_calls) == 2
    assert not (tmp_path / "cache").exists()
