"""devlint.analysis.syntax: readers of libcst syntax."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from devlint.analysis.syntax import child_nodes

ROOT = Path(__file__).resolve().parents[2]


def _same_children(node: cst.CSTNode) -> int:
    expected = list(node.children)
    found = sorted(map(id, child_nodes(node)))
    assert found == sorted(map(id, expected)), type(node).__name__
    return 1 + sum(_same_children(child) for child in expected)


def test_child_nodes_are_libcsts_children_for_every_node_of_every_fixture() -> None:
    seen = 0
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        seen += _same_children(cst.parse_module(path.read_text(encoding="utf-8")))
    tricky = (
        "match v:\n    case [1, *r] if r: pass\n    case {'k': C(a=b)}: pass\n"
        "async def f(*, a: int = 1, **k) -> None:\n    async with x as (y, z): await w\n"
        "x = [i async for i in y if i]\ns = f'{x!r:>{w}}' 'tail'\nt: tuple[int, ...] = ()\n"
        "@d\nclass C[T](B, metaclass=M): ...\ndel a[1:2, ::3]; global g\n"
    )
    seen += _same_children(cst.parse_module(tricky))
    assert seen > 100_000  # every fixture was walked
