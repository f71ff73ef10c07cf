"""The shape of the package: no import cycle, no private name used outside its module,
one line splitter; the analysis composed (no class chains, no stubs), its query API the
only part rules import, its name guesses in one table."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"devlint": ROOT / "devlint", "devlint.rules": ROOT / "rules"}


def modules() -> dict[str, Path]:
    found = {}
    for prefix, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = [p for p in path.relative_to(folder).with_suffix("").parts if p != "__init__"]
            found[".".join([prefix, *parts])] = path
    return found


def type_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes under ``if TYPE_CHECKING:``: imports for annotations, never run
    (the interpreter's core names the handler classes that import it)."""
    return {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        for statement in node.body
        for inner in ast.walk(statement)
    }


def imports(path: Path, known: dict[str, Path], runtime: bool = False) -> list[tuple[str, str]]:
    """(module, name) for each ``from devlint... import name``, lazy imports included;
    ``runtime``: the type-only ones (``if TYPE_CHECKING:``) left out."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = type_only(tree) if runtime else set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in known:
            found += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names if alias.name in known]
    return found


def test_no_import_cycle_between_modules() -> None:
    """Imported when run: a type-only import (the interpreter's core naming the classes of
    the handlers that import it) makes no cycle."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        # `from devlint import engine` depends on devlint.engine, not on devlint/__init__.
        targets = (
            f"{module}.{item}" if f"{module}.{item}" in known else module
            for module, item in imports(path, known, runtime=True)
        )
        graph[name] = {target for target in targets if target != name}
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as error:
        raise AssertionError(f"import cycle: {' -> '.join(error.args[1])}") from None


def test_no_private_name_is_imported_from_another_module() -> None:
    known = modules()
    private = [
        f"{name} imports {module}.{item}"
        for name, path in known.items()
        for module, item in imports(path, known)
        if item.startswith("_") and not item.startswith("__") and f"{module}.{item}" not in known
    ]
    assert private == []


def test_python_line_breaks_are_spelled_once() -> None:
    """Splitting text at Python's line breaks is ``source.split_lines`` / ``LINE_BREAK``."""
    spelled = [
        name
        for name, path in modules().items()
        if r"\r\n|\r|\n" in path.read_text(encoding="utf-8") and name != "devlint.source"
    ]
    assert spelled == []


def test_no_rule_imports_another_rule() -> None:
    """Rules are independent: what two rules share lives in the engine (``devlint.codemod``,
    ``devlint.edits``) or the analysis, so that adding or removing one touches no other."""
    known = modules()
    rules = {name for name in known if name.startswith("devlint.rules.")}
    crossing = []
    for name in sorted(rules):
        tree = ast.parse(known[name].read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:  # from . import x, from .dev011 import y
                    crossing.append(f"{name}: relative import")
                    continue
                targets = [node.module or ""]
                if node.module == "devlint.rules":
                    targets = [f"devlint.rules.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            crossing += [f"{name} imports {t}" for t in targets if t in rules and t != name]
    assert crossing == []


ANALYSIS = ROOT / "devlint" / "analysis"
# What rules may import from the analysis: its query API (``FileFacts`` and the records,
# the value lattice). Everything else they need is re-exported or answered there.
RULE_ANALYSIS_IMPORTS = {"devlint.analysis.facts", "devlint.analysis.values"}
# ``re.compile`` in the analysis outside ``name_guesses.py``, each with its reason.
NON_NAME_PATTERNS = {
    # Scans of the project's source text before it is parsed (does a sibling test
    # availability, define a name, does a script import the file?), not guesses from a name.
    "project_imports.py": 5,
    # The same for scripts near the file: does one set an availability flag on its parsed
    # options (``args.use_gpu = ... is_available()``) or on a module it imports (its import
    # lines, and their comments)? The flag lines are then parsed with ``ast``.
    "project_flags.py": 7,
}


def analysis_sources() -> dict[str, ast.Module]:
    return {
        path.name: ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted(ANALYSIS.glob("*.py"))
    }


def test_analysis_classes_derive_from_at_most_one_project_class() -> None:
    """The interpreter is composed (a core and one handler per module), not one chain of
    classes: a class of the analysis derives from at most one class of the project, which
    itself derives from none (``object``, ``Enum``, ``Protocol``, libcst's visitors)."""
    import importlib
    import inspect

    deep = []
    for name in analysis_sources():
        module = importlib.import_module(f"devlint.analysis.{name.removesuffix('.py')}")
        for cls in vars(module).values():
            if not inspect.isclass(cls) or cls.__module__ != module.__name__:
                continue
            project = [c for c in cls.__mro__[1:] if c.__module__.startswith("devlint")]
            if len(project) > 1:
                deep.append(f"{cls.__module__}.{cls.__qualname__}: {project}")
    assert deep == []


def test_analysis_has_no_not_implemented_stubs() -> None:
    """No method stands in for one another part provides (``raise NotImplementedError``):
    each handler calls the one that owns the method, so a search finds its callers."""
    stubs = [
        f"{name}:{node.lineno}"
        for name, tree in analysis_sources().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and node.id == "NotImplementedError"
    ]
    assert stubs == []


def test_effect_handlers_are_registered_by_reference() -> None:
    """Every ``torch_api.Effect`` has its handler in ``effects.HANDLERS`` (no lookup by
    name: ``getattr`` appears nowhere in the interpreter's handlers)."""
    from devlint.analysis import effects, torch_api

    assert set(effects.HANDLERS) == set(torch_api.Effect)
    handlers = ("statements", "imports", "definitions", "expressions", "effects", "calls")
    named = [
        name
        for name, tree in analysis_sources().items()
        if name.removesuffix(".py") in (*handlers, "datasets", "module_classes", "interpreter")
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and node.id == "getattr"
    ]
    assert named == []


def test_rules_import_only_the_query_api_of_the_analysis() -> None:
    known = modules()
    outside = []
    for name in sorted(n for n in known if n.startswith("devlint.rules.")):
        for module, item in imports(known[name], known):
            target = f"{module}.{item}" if f"{module}.{item}" in known else module
            if target.startswith("devlint.analysis") and target not in RULE_ANALYSIS_IMPORTS:
                outside.append(f"{name} imports {target}")
    assert outside == []


def test_name_patterns_live_in_name_guesses() -> None:
    """Every regular expression of the analysis is a name guess, in ``name_guesses.py``
    (the one table of weak evidence), but the allow-listed ones (``NON_NAME_PATTERNS``)."""
    found: dict[str, int] = {}
    for name, tree in analysis_sources().items():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "compile"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "re"
                and name != "name_guesses.py"
            ):
                found[name] = found.get(name, 0) + 1
    assert found == NON_NAME_PATTERNS
