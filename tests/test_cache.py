"""The result cache: hits, invalidation by content and settings, self-healing."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from devlint.api import lint_task
from devlint.diagnostics import FileResult
from devlint.engine import CheckOptions
from devlint.rule import all_rules
from devlint.runner import FileTask, run_files

BUG = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"
ALL = CheckOptions(frozenset(all_rules()))


@pytest.fixture
def engine_calls() -> list[Path]:
    return []


def run(
    path: Path, cache: Path | None, calls: list[Path], options: CheckOptions = ALL
) -> list[str]:
    def counting(task: FileTask) -> FileResult:
        calls.append(task.path)
        return lint_task(task)

    [result] = run_files([FileTask(path, str(path), options, cache)], counting, 1, False)
    return [f"{d.start.row}:{d.code}" for d in result.diagnostics]


def test_second_run_is_served_from_the_cache(tmp_path: Path, engine_calls: list[Path]) -> None:
    source = tmp_path / "bug.py"
    source.write_text(BUG)
    cache = tmp_path / "cache"
    assert run(source, cache, engine_calls) == ["2:DEV003"]
    assert run(source, cache, engine_calls) == ["2:DEV003"]
    assert len(engine_calls) == 1
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"


def test_changed_content_or_settings_miss(tmp_path: Path, engine_calls: list[Path]) -> None:
    source = tmp_path / "bug.py"
    source.write_text(BUG)
    cache = tmp_path / "cache"
    run(source, cache, engine_calls)
    source.write_text(BUG.replace(".cuda()", ""))
    assert run(source, cache, engine_calls) == []
    assert run(source, cache, engine_calls, CheckOptions(frozenset({"DEV001"}))) == []
    assert len(engine_calls) == 3


def test_corrupt_entries_heal(tmp_path: Path, engine_calls: list[Path]) -> None:
    source = tmp_path / "bug.py"
    source.write_text(BUG)
    cache = tmp_path / "cache"
    run(source, cache, engine_calls)
    for entry in cache.rglob("*.json"):
        entry.write_text("{not json")
    assert run(source, cache, engine_calls) == ["2:DEV003"]
    assert run(source, cache, engine_calls) == ["2:DEV003"]
    assert len(engine_calls) == 2


def test_no_cache_writes_nothing(tmp_path: Path, engine_calls: list[Path]) -> None:
    source = tmp_path / "bug.py"
    source.write_text(BUG)
    assert run(source, None, engine_calls) == ["2:DEV003"]
    assert run(source, None, engine_calls) == ["2:DEV003"]
    assert len(engine_calls) == 2
    assert not (tmp_path / "cache").exists()


def test_an_edit_of_a_star_imported_sibling_misses(
    tmp_path: Path, engine_calls: list[Path]
) -> None:
    """``from utils import *``: the file's result depends on utils.py, so its key does."""
    (tmp_path / "utils.py").write_text("import torch\ndevice = torch.device('cpu')\n")
    source = tmp_path / "train.py"
    source.write_text("from utils import *\nx = torch.ones(2).to(device)\nprint(x.numpy())\n")
    cache, options = tmp_path / "cache", replace(ALL, origin=source)
    assert run(source, cache, engine_calls, options) == []
    assert run(source, cache, engine_calls, options) == []
    assert len(engine_calls) == 1
    (tmp_path / "utils.py").write_text("import torch\ndevice = torch.device('cuda:0')\n")
    assert run(source, cache, engine_calls, options) == ["3:DEV001"]
    assert len(engine_calls) == 2
    (tmp_path / "utils.py").unlink()  # unresolvable again: the file as without it
    assert run(source, cache, engine_calls, options) == ["3:DEV001"]
    assert len(engine_calls) == 3


def test_an_edit_of_an_explicitly_imported_sibling_misses(
    tmp_path: Path, engine_calls: list[Path]
) -> None:
    """``from config import USE_CUDA``: the entry names config.py; an edit of a module the
    file never read (``other.py``) keeps the entry."""
    config = tmp_path / "config.py"
    config.write_text("import torch\nUSE_CUDA = torch.cuda.is_available()\n")
    (tmp_path / "other.py").write_text("x = 1\n")
    source = tmp_path / "train.py"
    source.write_text(
        "import torch\nimport other\nfrom config import USE_CUDA\n"
        "if USE_CUDA:\n    model = torch.nn.Linear(2, 2).cuda()\n"
    )
    cache, options = tmp_path / "cache", replace(ALL, origin=source)
    assert run(source, cache, engine_calls, options) == ["4:DEV016"]
    (tmp_path / "other.py").write_text("x = 2  # edited\n")
    assert run(source, cache, engine_calls, options) == ["4:DEV016"]
    assert len(engine_calls) == 1
    config.write_text("USE_CUDA = True\n")  # a user's choice now: no guard
    assert run(source, cache, engine_calls, options) == ["5:DEV003"]
    assert len(engine_calls) == 2
    config.write_text("import torch\nUSE_CUDA = torch.cuda.device_count() > 0\n")
    assert run(source, cache, engine_calls, options) == ["4:DEV016"]  # read, not parsed
    assert len(engine_calls) == 3


def test_related_locations_round_trip(tmp_path: Path) -> None:
    source = tmp_path / "bug.py"
    source.write_text("import torch\nx = torch.zeros(2).cuda()\ny = x.numpy()\n")
    cache = tmp_path / "cache"
    tasks = [FileTask(source, str(source), ALL, cache)]
    [first] = run_files(tasks, lint_task, 1, False)
    [second] = run_files(tasks, lint_task, 1, False)
    assert second.cached
    related = [d.related for d in first.diagnostics]
    assert [d.related for d in second.diagnostics] == related
    assert any(chain for chain in related)


def test_an_edit_of_devlint_itself_misses(
    tmp_path: Path, engine_calls: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A source checkout edited between two runs (an editable install: same version) must
    not read back what the other code computed: the key covers devlint's own modules,
    the rules included."""
    import devlint.cache as cache_module

    stamp = cache_module._code_stamp()
    assert b"cache.py:" in stamp and b"dev003_unguarded_cuda.py:" in stamp
    source = tmp_path / "bug.py"
    source.write_text(BUG)
    cache = tmp_path / "cache"
    run(source, cache, engine_calls)
    monkeypatch.setattr(cache_module, "_STAMP", [stamp + b"\nengine.py:1:2"])  # an edit
    run(source, cache, engine_calls)
    assert len(engine_calls) == 2
