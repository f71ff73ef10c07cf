"""Tests of the torch release that every torch a project supports answers alike.

``if torch.__version__ >= "1.10":`` is taken on every torch from ``target-torch`` (2.0 by
default) on: the analysis runs only that side (``branches.py``, ``expressions.py``), so
the other one, code for a release the project no longer runs on, reports nothing.
"""

from __future__ import annotations

import libcst as cst

from devlint.analysis.syntax import dotted_name, string_value
from devlint.torch_target import TorchVersion

# ``LooseVersion(torch.__version__)``, ``version.parse(...)``: release comparisons.
_VERSION_WRAPPERS = frozenset(
    {"LooseVersion", "StrictVersion", "Version", "parse", "parse_version"}
)


def version_test_answer(test: cst.BaseExpression, target: TorchVersion) -> bool | None:
    """What a comparison of torch's release with a literal one gives on every torch from
    ``target`` on (``torch.__version__ >= "1.10"``, ``LooseVersion(torch.__version__) <
    LooseVersion("1.6.0")``); None when it depends on the release, or is no such test. A
    comparison of the raw strings is decided only against a 0.x or 1.x release, where it
    orders as the releases do."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    operator = _OPERATORS.get(type(test.comparisons[0].operator))
    left, right = test.left, test.comparisons[0].comparator
    if _release_of(left) is not None:  # ``"1.10" <= torch.__version__``: the other way round
        left, right = right, left
        operator = _FLIPPED.get(operator or "")
    raw = _torch_version(left)
    release = _release_of(right)
    if raw is None or release is None or operator is None:
        return None
    parts = (*release[1], 0, 0)[:3]
    if raw and (release[0] is False or parts[0] >= 2):
        return None  # strings: "2.13" < "2.9"; ``torch.__version__ >= LooseVersion(...)``
    if not raw and release[0]:
        return None  # ``LooseVersion(torch.__version__) >= "1.6"``: not one kind
    if operator in (">=", "<") and parts <= (*target, 0):
        return operator == ">="
    if operator in (">", "<=") and parts[:2] < target:
        return operator == ">"
    return None


_OPERATORS: dict[type, str] = {
    cst.GreaterThanEqual: ">=",
    cst.GreaterThan: ">",
    cst.LessThan: "<",
    cst.LessThanEqual: "<=",
}
_FLIPPED = {">=": "<=", "<=": ">=", ">": "<", "<": ">"}


def _torch_version(node: cst.BaseExpression) -> bool | None:
    """True for ``torch.__version__`` (a raw string), False for it in a version wrapper,
    None for anything else."""
    if dotted_name(node) == "torch.__version__":
        return True
    if isinstance(node, cst.Call) and len(node.args) == 1 and _wrapper(node):
        return False if dotted_name(node.args[0].value) == "torch.__version__" else None
    return None


def _release_of(node: cst.BaseExpression) -> tuple[bool, tuple[int, ...]] | None:
    """(raw string?, its numbers) for ``"1.6.0"`` or ``LooseVersion("1.6.0")``."""
    raw = isinstance(node, cst.SimpleString)
    if not raw and isinstance(node, cst.Call) and len(node.args) == 1 and _wrapper(node):
        node = node.args[0].value
    text = string_value(node) if isinstance(node, cst.SimpleString) else None
    parts = text.split(".") if text is not None else []
    if not 2 <= len(parts) <= 3 or not all(part.isdigit() and part.isascii() for part in parts):
        return None
    return raw, tuple(int(part) for part in parts)


def _wrapper(call: cst.Call) -> bool:
    name = dotted_name(call.func)
    return name is not None and name.rsplit(".", 1)[-1] in _VERSION_WRAPPERS
