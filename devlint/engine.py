"""Checking one file: parse once, analyse once, run the selected rules, apply noqa."""

from __future__ import annotations

import ast
import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from itertools import accumulate
from pathlib import Path

import libcst as cst

from devlint.analysis import analyze
from devlint.diagnostics import Diagnostic, Location, Related
from devlint.edits import FixContext
from devlint.noqa import suppress
from devlint.positions import Positions, positions_of
from devlint.records import record
from devlint.rule import Finding, Rule, RuleSettings, all_rules
from devlint.torch_target import DEFAULT_TARGET_TORCH, TorchVersion

UNREADABLE, SYNTAX_ERROR, INTERNAL_ERROR = "DEV900", "DEV901", "DEV902"
MAX_BRACKET_DEPTH = 100
DEEP_RECURSION_LIMIT = 30_000
BIG_STACK_BYTES = 512 * 1024 * 1024

_LIBCST_POSITION = re.compile(r"error at (\d+):(\d+)")
_VALIDATING = vars(cst.CSTNode).get("__post_init__")
_UNVALIDATED = threading.Lock()


@record(frozen=True, slots=True)
class CheckOptions:
    """What to check in one file."""

    codes: frozenset[str]
    guard_functions: tuple[str, ...] = ()
    accelerator_api: str = "auto"  # the device selection fixes write (docs/design.md §5)
    ignore_noqa: bool = False  # --ignore-noqa: report what noqa comments would silence
    unfixable: frozenset[str] = frozenset()  # codes whose fixes are withheld (--unfixable)
    line_length: int = 88  # the longest line a fix writes where the line was shorter
    target_torch: TorchVersion = DEFAULT_TARGET_TORCH  # no fix writes an API it lacks
    # Where the file is: its star imports of the project's modules resolve next to it
    # (None: nowhere, as stdin without --stdin-filename).
    origin: Path | None = None


def unreadable(message: str, display: str, options: CheckOptions) -> list[Diagnostic]:
    """The DEV900 diagnostic for input that cannot be read or decoded."""
    return _engine_diagnostic(UNREADABLE, message, display, 1, 1, options)


def check_text(text: str, display: str, options: CheckOptions) -> list[Diagnostic]:
    """Check Python source text; never raises for anything the file contains."""
    with unvalidated_nodes():
        found = _check_text(text, display, options)
    if options.unfixable:
        found = [replace(d, fix=None) if d.code in options.unfixable else d for d in found]
    return found


def _check_text(text: str, display: str, options: CheckOptions) -> list[Diagnostic]:
    if _bracket_depth(text) > MAX_BRACKET_DEPTH:
        # libcst takes minutes on deeply nested brackets and crashes the process on
        # thousands; CPython refuses more than 200 levels, so ask it first.
        try:
            ast.parse(text)
        except SyntaxError as error:
            message = f"syntax error: {error.msg}"
            row, column = error.lineno or 1, max(error.offset or 1, 1)
            return _engine_diagnostic(SYNTAX_ERROR, message, display, row, column, options)
        except (RecursionError, MemoryError, ValueError) as error:
            return _internal_error(error, text, display, options)
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        message, row, column = _syntax_error(text, error)
        return _engine_diagnostic(SYNTAX_ERROR, message, display, row, column, options)
    except (RecursionError, MemoryError, ValueError, cst.CSTValidationError) as error:
        return _internal_error(error, text, display, options)
    outcome: list[list[Diagnostic] | BaseException] = []

    def run() -> None:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, DEEP_RECURSION_LIMIT))
        try:
            outcome.append(_run_rules(module, text, display, options))
        except Exception as error:  # a devlint bug or limit must not stop the run
            outcome.append(error)
        finally:
            sys.setrecursionlimit(limit)

    # Long operator chains nest deeply in the tree: walk it on a thread with a big stack.
    _on_big_stack(run)
    result = outcome[0] if outcome else RuntimeError("analysis thread failed")
    if isinstance(result, BaseException):
        try:  # libcst accepts what CPython refuses (`"\\N"`), then a rule trips over it
            ast.parse(text)
        except SyntaxError as error:
            message = f"syntax error: {error.msg}"
            row, column = error.lineno or 1, max(error.offset or 1, 1)
            return _engine_diagnostic(SYNTAX_ERROR, message, display, row, column, options)
        except (RecursionError, MemoryError, ValueError):
            pass
        return _internal_error(result, text, display, options)
    if options.ignore_noqa:
        return result
    return suppress(result, text, display, options.codes)


@contextmanager
def unvalidated_nodes() -> Iterator[None]:
    """While libcst parses code and rebuilds parsed trees: no per-node validation.

    libcst checks every node as it is constructed (``CSTNode.__post_init__`` calls
    ``_validate``), a guard meant for trees built by hand. On parser output, and on the
    copies its visitors build of it, it re-checks what the grammar has just accepted, and
    refuses some valid code (``x is not.0``). Whatever devlint writes is parsed again
    before it counts (fixes are text), so the check is off inside this block only: around
    ``check_text`` (parse, analysis, rules) and the import clean-up's parse and visit.

    What it buys, measured with ``bench/validation_cost.py`` over the fixtures and eval
    scripts (606 files, 1.8 MB, CPU time, best of 3): parsing 4.84 s -> 4.18 s (14 %),
    the whole check 18.10 s -> 16.38 s (9 %). The hook belongs to the class, so for the
    block's duration it holds for every thread of the process: one block runs at a time
    (a lock), and blocks do not nest.
    """
    if _VALIDATING is None:  # a libcst without the hook: nothing to switch off
        yield
        return
    with _UNVALIDATED:
        cst.CSTNode.__post_init__ = _trust_the_parser  # type: ignore[method-assign,assignment]
        try:
            yield
        finally:
            cst.CSTNode.__post_init__ = _VALIDATING  # type: ignore[method-assign]


def _trust_the_parser(node: cst.CSTNode) -> None:
    """Stands in for ``CSTNode.__post_init__`` inside ``unvalidated_nodes``."""


def _on_big_stack(function: Callable[[], None]) -> None:
    previous = threading.stack_size(BIG_STACK_BYTES)
    try:
        thread = threading.Thread(target=function, name="devlint-analysis")
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()


_NOT_BRACKETS = re.compile(r"[^][(){}]+")


def _bracket_depth(text: str) -> int:
    """The deepest bracket nesting, counting brackets in strings too (an upper bound)."""
    if len(text) < MAX_BRACKET_DEPTH * 2:
        return 0
    steps = (1 if mark in "([{" else -1 for mark in _NOT_BRACKETS.sub("", text))
    return max(accumulate(steps), default=0)


def _run_rules(
    module: cst.Module, text: str, display: str, options: CheckOptions
) -> list[Diagnostic]:
    """The selected rules' diagnostics on a parsed module (``text``: its source)."""
    settings = RuleSettings(options.target_torch)
    rules = [cls(settings) for code, cls in all_rules().items() if code in options.codes]
    rules = [rule for rule in rules if not rule.engine_only]
    if not rules:
        return []
    facts = analyze(module, options.guard_functions, options.origin, options.target_torch)
    found: list[tuple[Rule, Finding]] = [
        (rule, finding) for rule in rules for finding in rule.check(facts)
    ]
    if not found:
        return []
    positions = positions_of(module)
    unique: dict[tuple[str, int], tuple[Rule, Finding]] = {}
    for rule, finding in found:
        unique.setdefault((rule.code, id(finding.node)), (rule, finding))
    fixable = [
        (key, finding.fix, finding.fix.applicability or rule.fix)
        for key, (rule, finding) in unique.items()
        if finding.fix is not None and rule.fix is not None
    ]
    context = FixContext(
        module, text, positions, facts, options.accelerator_api, line_length=options.line_length
    )
    built = context.build_all([(plan, applicability) for _, plan, applicability in fixable])
    fix_of = {key: fix for (key, _, _), fix in zip(fixable, built, strict=True)}
    diagnostics = []
    for key, (rule, finding) in unique.items():
        start, end = _span(positions, finding.node)
        diagnostics.append(
            Diagnostic(
                code=rule.code,
                name=rule.name,
                message=finding.message,
                path=display,
                start=start,
                end=end,
                fix=fix_of.get(key),
                noqa_row=start.row,
                related=_related(finding, positions, display),
            )
        )
    return sorted(diagnostics, key=Diagnostic.sort_key)


def _related(finding: Finding, positions: Positions, display: str) -> tuple[Related, ...]:
    """The finding's chain of facts, located, in order, without the steps that add
    nothing: one at the finding's own span, or inside a later step's span (``"cuda"`` in
    ``.to("cuda")``). Nodes of other modules (a star-imported sibling's) are left out."""
    spans = [
        (_span(positions, step.node), step.note)
        for step in finding.related
        if step.node in positions
    ]
    own = _span(positions, finding.node)
    related = []
    for index, ((start, end), note) in enumerate(spans):
        inside_later = any(later[0] <= start and end <= later[1] for later, _ in spans[index + 1 :])
        if (start, end) != own and not inside_later:
            related.append(Related(note, display, start, end))
    return tuple(related)


def _span(positions: Positions, node: cst.CSTNode) -> tuple[Location, Location]:
    """Where ``node`` starts and ends, as 1-based rows and columns."""
    span = positions[node]
    return (
        Location(span.start.line, span.start.column + 1),
        Location(span.end.line, span.end.column + 1),
    )


def _syntax_error(text: str, error: cst.ParserSyntaxError) -> tuple[str, int, int]:
    """A readable message and 1-based position; CPython's wording when it has one."""
    try:
        ast.parse(text)
    except SyntaxError as py_error:
        row = py_error.lineno or 1
        column = py_error.offset or 1
        return f"syntax error: {py_error.msg}", row, max(column, 1)
    except (ValueError, RecursionError, MemoryError):
        pass
    found = _LIBCST_POSITION.search(error.message)
    if found:
        return f"syntax error: {error.message.split(': ', 2)[-1]}", int(found[1]), int(found[2]) + 1
    return f"syntax error: {error.message}", error.raw_line, error.raw_column + 1


def _internal_error(
    error: BaseException, text: str, display: str, options: CheckOptions
) -> list[Diagnostic]:
    if isinstance(error, RecursionError):
        what = "the code is nested too deeply for devlint (recursion limit)"
    else:
        what = f"{type(error).__name__}: {error}"
    message = f"devlint failed on this file: {what}; please report this as a bug"
    found = _engine_diagnostic(INTERNAL_ERROR, message, display, 1, 1, options)
    # `# devlint: noqa` is the documented way to skip such a file until the bug is fixed.
    if options.ignore_noqa:
        return found
    return suppress(found, text, display, options.codes, judge_unused=False)


def _engine_diagnostic(
    code: str, message: str, display: str, row: int, column: int, options: CheckOptions
) -> list[Diagnostic]:
    if code not in options.codes:
        return []
    rule = all_rules()[code]
    location = Location(row, column)
    return [Diagnostic(code, rule.name, message, display, location, location)]
