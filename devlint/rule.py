"""The ``Rule`` base class and the registry of all rules in ``devlint.rules``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import ClassVar

import libcst as cst

from devlint.analysis.facts import FileFacts
from devlint.diagnostics import Applicability


@dataclass(frozen=True, slots=True)
class Finding:
    """What a rule reports: the node to point at and the message to show."""

    node: cst.CSTNode
    message: str


class Rule:
    """A lint rule: metadata, documentation (the class docstring) and a ``check``.

    The docstring is the rule's documentation in ruff's sections: *What it does*,
    *Why is this bad?*, *Example*, *Use instead*, *Fix safety*. ``devlint rule CODE``
    prints it.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]  # one line: what the rule flags
    default: ClassVar[bool] = True  # on unless selected explicitly
    fix: ClassVar[Applicability | None] = None  # the fix the rule offers, if any
    # Substrings of which the source must contain at least one for the rule to fire; a
    # file containing none is not even parsed when only such rules are selected.
    needs: ClassVar[tuple[str, ...]] = ()
    engine_only: ClassVar[bool] = False  # reported by the engine itself (DEV900-DEV902)

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        return iter(())

    @classmethod
    def documentation(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")


@cache
def all_rules() -> dict[str, type[Rule]]:
    """Every rule class shipped in ``devlint.rules``, by code, sorted."""
    package = importlib.import_module("devlint.rules")
    found: dict[str, type[Rule]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"devlint.rules.{info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Rule)
                and value.__module__ == module.__name__
            ):
                found[value.code] = value
    return dict(sorted(found.items()))
