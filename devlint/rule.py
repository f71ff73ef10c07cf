"""The ``Rule`` base class and the registry of all rules in ``devlint.rules``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from functools import cache
from typing import ClassVar, Literal

import libcst as cst
from libcst._nodes.internal import CodegenState  # code_for_node without a fresh indentation

from devlint.analysis.facts import FileFacts
from devlint.analysis.values import Step
from devlint.diagnostics import Applicability
from devlint.records import record
from devlint.torch_target import DEFAULT_TARGET_TORCH, TorchVersion

# The slot a replacement node holds where the engine writes the device in scope.
DEVICE = cst.Name("__devlint_device__")


@record(frozen=True, slots=True)
class Replace:
    """Replace the source of ``node`` with ``text`` (``where="before"``/``"after"``: insert).

    ``text`` is a node (written as its code, with the ``DEVICE`` slot for ``{device}``) or a
    template; the engine fills in what a rule cannot know by itself:

    - ``{device}``: the device in scope, as ``devlint.analysis.scopes`` finds it (a
      ``device`` parameter or local, ``self.device``, a device passed in, a module-level
      device, the device of a model passed in by a caller that owns a device); when there
      is none, one device selection is added after the imports;
    - ``{device_or_cpu}``: the device variable in scope, else ``"cpu"``;
    - ``{device_is_cuda}``: whether that device is CUDA (``str(device).startswith("cuda")``),
      else ``torch.cuda.is_available()``;
    - ``{selection_str}``: the same choice as ``{selection}``, as a device string;
    - ``{selection}``: the device-selection expression (``accelerator-api``);
    - ``{torch}``: the name ``torch`` is imported as (``import torch`` is added if needed);
    - ``{nl}``, ``{indent}``, ``{tab}``: the file's newline, the indentation of the line
      where ``node`` starts, and one level of the file's indentation.

    Literal braces are written ``{{`` and ``}}`` (see ``literal_text``).
    """

    node: cst.CSTNode
    text: str | cst.CSTNode
    where: Literal["replace", "before", "after"] = "replace"

    @property
    def template(self) -> str:
        """``text`` as a template (a node's code, its braces escaped, its slot filled)."""
        if isinstance(self.text, str):
            return self.text
        return literal_text(source_of(self.text)).replace(DEVICE.value, "{device}")


@record(frozen=True, slots=True)
class FixPlan:
    """How to repair one finding: a message and the edits that make the fix."""

    message: str
    edits: tuple[Replace, ...]
    applicability: Applicability | None = None  # None: the rule's ``fix``


@record(frozen=True, slots=True)
class Finding:
    """What a rule reports: the node to point at, the message to show, the fix if any."""

    node: cst.CSTNode
    message: str
    fix: FixPlan | None = None
    # The facts behind it, in order (where the value was placed, ...): the analysis's
    # ``Value.placed`` and the like, never a guess. The engine locates them.
    related: tuple[Step, ...] = ()


_EMPTY_MODULE = cst.Module(body=[])
# Stands for the indentation of the block a node is in, where its code repeats it (lines
# inside brackets, comments, nested blocks); the engine writes the real one at the edit.
BLOCK_INDENT = "\x00"


def source_of(node: cst.CSTNode) -> str:
    """The source a ``Replace`` of ``node`` replaces: its code without its own parentheses.

    Its continuation lines start with ``BLOCK_INDENT`` where they repeat the indentation of
    the enclosing block, so that a fix writes them at the block where the text lands.
    """
    if getattr(node, "lpar", ()):
        node = node.with_changes(lpar=(), rpar=())
    state = CodegenState(
        default_indent=_EMPTY_MODULE.default_indent,
        default_newline=_EMPTY_MODULE.default_newline,
        indent_tokens=[BLOCK_INDENT],
    )
    node._codegen(state)
    text = "".join(state.tokens)
    return text[1:] if text.startswith(BLOCK_INDENT) else text  # a statement's own indent


_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString, cst.Integer)


def as_receiver(node: cst.BaseExpression) -> str:
    """The source of ``node`` ready to have ``.method()`` appended (parenthesised if needed)."""
    text = source_of(node)
    return text if isinstance(node, _ATOMS) else f"({text})"


def literal_text(text: str) -> str:
    """``text`` with braces escaped, for use inside a ``Replace`` text."""
    return text.replace("{", "{{").replace("}", "}}")


@record(frozen=True, slots=True)
class RuleSettings:
    """The configuration a rule reads (``target-torch``)."""

    target_torch: TorchVersion = DEFAULT_TARGET_TORCH


@record(frozen=True, slots=True)
class Example:
    """A piece of code a rule must report (``flagged``) or must leave alone."""

    code: str
    flagged: bool
    origin: str  # where it comes from, for test names: "Example", "VALID[0]", ...


_SECTION = re.compile(r"^## +(.+?) *$", re.MULTILINE)
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


class Rule:
    """A lint rule: metadata, documentation (the class docstring) and a ``check``.

    The docstring is the rule's documentation in ruff's sections: *What it does*,
    *Why is this bad?*, *Example*, *Use instead*, *Fix safety*. ``devlint rule CODE``
    prints it. Its Example code blocks must be reported by the rule and its Use instead
    blocks must not; ``INVALID`` and ``VALID`` add examples that are tests only. The
    harness (``devlint.testing``) runs them all.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]  # one line: what the rule flags
    default: ClassVar[bool] = True  # on unless selected explicitly
    fix: ClassVar[Applicability | None] = None  # the fix the rule offers, if any
    # Reported by the engine itself, not by ``check``: the file-level problems (DEV900-DEV902)
    # and DEV015 (unused noqa directives, known only once every other rule has run). The
    # fixture tests ask no minimum of bad and good programs of such a rule.
    engine_only: ClassVar[bool] = False
    # The ``target-torch`` the documentation's examples are written for, e.g. ``"2.9"``
    # (None: the default target). The rule's page states it, and the examples are checked
    # with it (``devlint.testing``).
    example_target_torch: ClassVar[str | None] = None
    INVALID: ClassVar[tuple[str, ...]] = ()  # more code the rule must report
    VALID: ClassVar[tuple[str, ...]] = ()  # more code the rule must leave alone

    # What ``devlint verify`` and ``devlint run`` need to know about the rule's bug at run time
    # (docs/design.md §6); a new rule that says nothing gets the defaults.
    # The mechanism the virtual columns (``cuda (virtual)``, ``mps (virtual)``) reproduce for
    # the rule's programs, printed on a mismatch.
    virtual_note: ClassVar[str] = "the rule's programs run under the virtual device"
    # True where the rule reports the failing operation itself: a virtual failure must then
    # pass through a line marked ``# expect:``; False where it reports the cause and the
    # failure comes later.
    virtual_at_flagged_line: ClassVar[bool] = False
    # Regular expressions (``devlint.device_errors``) of the runtime errors this rule's bug
    # raises: ``devlint run`` names the rule when a script fails with one of them.
    runtime_errors: ClassVar[tuple[str, ...]] = ()
    # Among the rules that describe one runtime error, the lowest rank is named first.
    runtime_rank: ClassVar[int] = 1

    def __init__(self, settings: RuleSettings | None = None) -> None:
        self.settings = settings or RuleSettings()

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        return iter(())

    @classmethod
    def documentation(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def no_fix_help(cls) -> str:
        """Why a diagnostic of this rule carries no fix, in one line (the ``help:`` line of
        the ``full`` output): the first paragraph of *Fix safety* ("No fix: ...") for a rule
        that never fixes, else a pointer to that section (it lists the cases it leaves)."""
        if cls.fix is not None:
            return f"No automatic fix in this case (see Fix safety in `devlint rule {cls.code}`)"
        parts = _SECTION.split(cls.documentation())
        sections = dict(zip(parts[1::2], parts[2::2], strict=True))
        first = sections.get("Fix safety", "").strip().split("\n\n")[0]
        return " ".join(first.split()) or "No automatic fix"

    @classmethod
    def examples(cls) -> list[Example]:
        """The code blocks of the Example and Use instead sections, then INVALID and VALID."""
        found = []
        parts = _SECTION.split(cls.documentation())
        for title, body in zip(parts[1::2], parts[2::2], strict=True):
            if title in ("Example", "Use instead"):
                blocks = _PYTHON_BLOCK.findall(body)
                found += [
                    Example(code, title == "Example", f"{title} {number}")
                    for number, code in enumerate(blocks, start=1)
                ]
        found += [Example(code, True, f"INVALID[{i}]") for i, code in enumerate(cls.INVALID)]
        found += [Example(code, False, f"VALID[{i}]") for i, code in enumerate(cls.VALID)]
        return found


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
