"""devlint.positions gives libcst's PositionProvider ranges, for every node."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from devlint.positions import positions_of

ROOT = Path(__file__).resolve().parents[1]

TRICKY = {
    "empty": "",
    "only newline": "\n",
    "no trailing newline": "x = 1",
    "crlf": "if x:\r\n    y = (1,\r\n         2)\r\n",
    "carriage returns": "a = 1\rb = 2\r",
    "decorated": "@a.b(c)\n@d\nclass C(B):\n    @property\n    def f(self): return 1\n",
    "comments and blanks": "# head\n\n\nimport x  # tail\n\n# between\ndef f():\n    pass\n",
    "continuations": "x = 1 + \\\n    2\ns = '''a\nb''' + f'{x!r:>{w}}'\n",
    "compound": (
        "try:\n    pass\nexcept (A, B) as e:\n    raise\nelse:\n    pass\nfinally:\n"
        "    pass\nwith a as b, c:\n    for i in x: y\n    else: z\nwhile 1: break\n"
        "match v:\n    case [1, *r] if r: pass\n    case _: pass\n"
    ),
    "semicolons": "a = 1; b = 2;\nif a: b; c\n",
    "async and lambdas": "async def f():\n    async for x in y: await z\n    g = lambda *a, **k: a\n",
}


def _compare(module: cst.Module) -> None:
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    positions = positions_of(module)
    assert len(positions) == len(expected)
    for node, span in expected.items():
        assert node in positions
        assert positions[node] == span, (type(node).__name__, span, positions[node])


@pytest.mark.parametrize("source", TRICKY.values(), ids=TRICKY.keys())
def test_tricky_sources(source: str) -> None:
    _compare(cst.parse_module(source))


def test_every_fixture() -> None:
    files = sorted((ROOT / "fixtures").rglob("*.py"))
    assert len(files) > 100
    for path in files:
        _compare(cst.parse_module(path.read_text(encoding="utf-8")))


def test_a_node_of_another_module_is_not_found() -> None:
    positions = positions_of(cst.parse_module("x = 1\n"))
    other = cst.parse_module("y = 2\n").body[0]
    assert other not in positions
    with pytest.raises(KeyError):
        positions[other]
