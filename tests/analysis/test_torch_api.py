"""The semantics tables of ``torch_api`` against the torch installed here."""

from __future__ import annotations

import pytest

from devlint.analysis import torch_api


@pytest.mark.parametrize("method", sorted(torch_api.MODULE_ONLY_METHODS))
def test_module_only_methods_are_modules_not_tensors(method: str) -> None:
    torch = pytest.importorskip("torch")
    assert hasattr(torch.nn.Module, method)
    assert not hasattr(torch.Tensor, method)
