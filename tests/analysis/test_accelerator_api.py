"""The table of ``torch.cuda`` equivalents against the torch that is installed."""

from __future__ import annotations

import importlib

import pytest

from devlint.analysis import accelerator_api
from devlint.analysis.accelerator_api import TABLE
from devlint.torch_target import parse_target


def _resolve(module: object, dotted: str) -> object:
    """``torch.accelerator.memory.empty_cache`` by attribute access from ``torch``, no call."""
    value = module
    for part in dotted.split(".")[1:]:
        value = getattr(value, part)
    return value


def test_every_equivalent_exists_where_the_installed_torch_has_it() -> None:
    torch = pytest.importorskip("torch")
    installed = parse_target(torch.__version__.split("+")[0])
    assert installed is not None
    checked = 0
    for api in TABLE:
        assert callable(_resolve(torch, f"torch.cuda.{api.name}")), api.name
        if api.equivalent is None or api.since is None or api.since > installed:
            continue
        assert callable(_resolve(torch, api.equivalent)), api.equivalent
        checked += 1
    assert checked >= 15  # torch >= 2.10 has them all


def test_memory_functions_are_also_found_where_torch_defines_them() -> None:
    torch = pytest.importorskip("torch")
    memory = importlib.import_module("torch.cuda.memory")
    for qualname, api in accelerator_api.BY_QUALNAME.items():
        if qualname.startswith("torch.cuda.memory."):
            assert getattr(memory, api.name) is getattr(torch.cuda, api.name)


def test_equivalents_follow_the_target_release() -> None:
    synchronize = accelerator_api.lookup("torch.cuda.synchronize")
    empty_cache = accelerator_api.lookup("torch.cuda.memory.empty_cache")
    name = accelerator_api.lookup("torch.cuda.get_device_name")
    assert synchronize is not None and empty_cache is not None and name is not None
    assert accelerator_api.equivalent_in(synchronize, (2, 5)) is None
    assert accelerator_api.equivalent_in(synchronize, (2, 6)) == "torch.accelerator.synchronize"
    assert accelerator_api.equivalent_in(empty_cache, (2, 8)) is None
    assert accelerator_api.equivalent_in(empty_cache, (2, 9)) == (
        "torch.accelerator.memory.empty_cache"
    )
    assert accelerator_api.equivalent_in(name, (3, 0)) is None
    assert accelerator_api.lookup("torch.cuda.is_bf16_supported") is None


def test_no_entry_maps_to_an_api_torch_does_not_have() -> None:
    # llm-compressor's table once wrote torch.accelerator.get_device_name
    names = {api.name for api in TABLE if api.equivalent is None}
    assert {"get_device_name", "get_device_properties", "Event", "Stream"} <= names
    capability = accelerator_api.lookup("torch.cuda.get_device_capability")
    assert capability is not None and capability.equivalent is None


def test_the_documentation_lists_every_entry_with_its_release() -> None:
    table = accelerator_api.table_markdown()
    assert "| `synchronize` | `torch.accelerator.synchronize` | 2.6 |" in table
    assert "| `device` | `torch.accelerator.device_index` | 2.8 |" in table
    assert "| `mem_get_info` | `torch.accelerator.memory.get_memory_info` | 2.10 |" in table
    assert len(table.splitlines()) == len(TABLE) + 2
