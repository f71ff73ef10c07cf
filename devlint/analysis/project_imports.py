"""Imports of the project's own modules: ``from utils import *``, ``from utils import
reduce_dict``, ``from arguments import get_args``, ``import util.misc as utils``.

A module that sits next to the file (or in its package) is summarised: ``ProjectModules``
finds its file (``module_path``) and runs the interpreter over its top-level code
(``analyzer.summarize``), giving a ``ModuleSummary``: what each top-level name holds,
what each function returns for any arguments, which functions return on the device of
the tensors they are given, the availability flags set on what a function returns
(``args.cuda`` of ``get_args()``), where its datasets' items are. A star import binds
the names; an explicit import is looked up when the file calls the name
(``Calls.project_call``, ``Imports.returned_flags``). Both are
resolved lazily, when a name misses or is called. Summaries are kept per process, per
file and version (mtime, size): each sibling is read once per run.

It stays bounded: only the file's own imports are resolved (the summarised module's
imports of project modules stay unresolved, so there are no cycles), and a module that
is missing, unreadable, too big or does not parse resolves to nothing: the file is
analysed as before, with those names unknown. A summary holds values only, never nodes
of the other module's tree (no diagnostic can point into it).

Facts also flow the other way, from callers into callees (``ProjectModules.callers``):
the entry scripts near the file (a ``__main__`` test) that import it are analysed in
full (``analyzer.caller_summary``), and what they pass to the file's module-level
functions (a model moved to the device, a loader, an ``args`` namespace with its
availability flags: ``CallerCall``) seeds those functions' parameters as a call in the
file itself would. Only entry scripts are read, at most ``MAX_CALLERS`` of them, each
once per process and version; within a run over many files (``one_run``) each folder is
listed once.

Absolute imports are also looked up from the project's root (``.git``, ``pyproject.toml``,
``setup.py`` or ``setup.cfg``) when it is at most ``MAX_ROOT_LEVELS`` folders above the
file's top package (``tools/train.py`` importing ``lib.core``, the root put on the path by
``import _init_paths``); without such a root nothing above is searched. Callers are
still looked for only in the file's folder and its packages' (scanning every folder of
the root for them made a run over a folder of many projects 2.5x slower).

A file's result then depends on those siblings: ``dependencies_of`` names the ones its
analysis read, and the result cache keeps them with the result.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import field, replace
from pathlib import Path
from typing import TypeVar, cast

import libcst as cst

from devlint.analysis import name_guesses
from devlint.analysis.values import Placement, Value
from devlint.records import record

MAX_MODULE_BYTES = 1_000_000  # a bigger module is generated code, not a helper module
MAX_PACKAGE_DEPTH = 8  # package folders walked up for an absolute import
MAX_CALLERS = 6  # entry scripts read for the calls of one file's functions
MAX_ROOT_LEVELS = 2  # folders above the top package searched as the project's root
ROOT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")


@record(frozen=True, slots=True)
class ModuleSummary:
    """What ``from <module> import *`` binds, and what the importer needs to use it."""

    names: dict[str, Value] = field(default_factory=dict)  # exported names (and ``a.b``)
    module_classes: frozenset[str] = frozenset()  # its ``nn.Module`` classes
    stateless_classes: frozenset[str] = frozenset()
    returns: dict[str, Value] = field(default_factory=dict)  # its functions, any arguments
    dataset_items: dict[str, Placement] = field(default_factory=dict)  # its datasets' items
    star_modules: tuple[str, ...] = ()  # its own ``from torch.nn import *``
    # Its functions whose result may be on the device of the tensors they are given
    # (``reduce_dict(losses)``): what a call with device tensors returns there.
    follows_inputs: frozenset[str] = frozenset()
    # The availability flags on what its functions return (``get_args()`` returning
    # ``args`` with ``args.cuda = not args.no_cuda and torch.cuda.is_available()``):
    # function -> attribute -> flag.
    returned_flags: dict[str, dict[str, Value]] = field(default_factory=dict)
    # The availability flags its classes' ``__init__`` sets on the instance
    # (``self.use_gpu = torch.cuda.is_available() and use_gpu``): class -> attribute ->
    # flag, for the methods of a subclass in the importing file.
    class_flags: dict[str, dict[str, Value]] = field(default_factory=dict)
    # Its functions' parameters that place what they are given, outside every guard
    # (``load_state_dict(path, location)`` with ``map_location=torch.device(location)``):
    # function -> (position, name) of each; a CUDA literal passed there is placed.
    placing_parameters: dict[str, tuple[tuple[int, str], ...]] = field(default_factory=dict)


@record(frozen=True, slots=True)
class CallerCall:
    """One call of a project module's function, seen in an entry script that imports it:
    the values passed, and the availability flags set on each argument that is a name
    (``train(model, loader, args)`` with ``args.cuda = ... is_available()``), by position
    or keyword."""

    args: tuple[Value, ...]
    keywords: dict[str, Value]
    flags: dict[int | str, dict[str, Value]] = field(default_factory=dict)


# What one entry script calls: the callee module's resolved path -> function -> calls.
CallerSummary = dict[Path, dict[str, list[CallerCall]]]
Summarize = Callable[[cst.Module, frozenset[str]], ModuleSummary]
SummarizeCallers = Callable[[cst.Module, "ProjectModules"], CallerSummary]
# The project modules each file's analysis resolved, by the file's origin (``dependencies_of``).
_READ_BY: dict[Path, set[Path]] = {}
# (resolved path, guard functions) -> ((mtime, size), summary or None)
_SUMMARIES: dict[tuple[Path, frozenset[str]], tuple[tuple[int, int], ModuleSummary | None]] = {}
# (entry script's resolved path, guard functions) -> ((mtime, size), its calls, what it read)
_CALLERS: dict[
    tuple[Path, frozenset[str]], tuple[tuple[int, int], CallerSummary, frozenset[Path]]
] = {}


class ProjectModules:
    """The project modules one file (at ``origin``) star-imports, summarised."""

    def __init__(
        self,
        origin: Path,
        guard_functions: frozenset[str],
        summarize: Summarize,
        summarize_callers: SummarizeCallers | None = None,
    ):
        """``summarize_callers``: read the entry scripts that import the file (``callers``);
        None for an entry script's own caller analysis (no chains of callers)."""
        self.origin, self.guard_functions, self.summarize = origin, guard_functions, summarize
        self.summarize_callers = summarize_callers
        self.read: set[Path] = set()  # the modules resolved (``dependencies_of``)
        self.resolved: dict[tuple[int, str], ModuleSummary | None] = {}
        self.paths: dict[tuple[int, str], Path | None] = {}
        self.testing: dict[Path, frozenset[str]] = {}  # ``_testing_functions`` of each
        self.calls: dict[str, list[CallerCall]] | None = None  # ``callers``, once
        if summarize_callers is not None:
            _READ_BY[origin] = self.read

    def callers(self) -> dict[str, list[CallerCall]]:
        """The calls of this file's module-level functions in the entry scripts that
        import it, by function name (empty when none is found or read)."""
        if self.calls is None:
            self.calls = {}
            if self.summarize_callers is not None:
                here = Path(os.path.realpath(self.origin))
                for path, _ in _importers(self.origin):
                    self.read.add(path)
                    summary, read = self.callers_in(path)
                    self.read.update(read - {here})
                    for name, calls in summary.get(here, {}).items():
                        self.calls.setdefault(name, []).extend(calls)
        return self.calls

    def importers_set_default_device(self) -> bool:
        """Whether an entry script that imports this file changes where torch makes
        tensors (``torch.set_default_tensor_type("torch.cuda.FloatTensor")``,
        ``torch.set_default_device(device)``): then this file's factories without
        ``device=`` may land anywhere."""
        return self.summarize_callers is not None and any(
            _SETS_DEFAULT_DEVICE.search(data)
            for _, data in _importers(self.origin, beside_namespace_package=True)
        )

    def callers_in(self, path: Path) -> tuple[CallerSummary, frozenset[Path]]:
        """What the entry script at ``path`` passes to project modules' functions, and
        the modules its analysis read; cached per process, file and version."""
        assert self.summarize_callers is not None
        try:
            status = path.stat()
        except OSError:
            return {}, frozenset()
        key, stamp = (path, self.guard_functions), (status.st_mtime_ns, status.st_size)
        cached = _CALLERS.get(key)
        if cached is None or cached[0] != stamp:
            modules = ProjectModules(path, self.guard_functions, self.summarize)
            summary: CallerSummary = {}
            if status.st_size <= MAX_MODULE_BYTES:
                try:
                    module = cst.parse_module(path.read_bytes().decode("utf-8-sig"))
                    summary = self.summarize_callers(module, modules)
                except (OSError, UnicodeDecodeError, cst.ParserSyntaxError, RecursionError):
                    pass
                except Exception:  # a devlint bug on the caller must not fail the callee
                    pass
            cached = _CALLERS[key] = (stamp, summary, frozenset(modules.read))
        return cached[1], cached[2]

    def resolve(self, level: int, module: str) -> ModuleSummary | None:
        """The summary of ``from <"." * level><module> import ...``; None: no project
        module (or one that cannot be used), remembered for this file."""
        if (level, module) not in self.resolved:
            self.resolved[(level, module)] = self.summary_of(self.path_of(level, module))
        return self.resolved[(level, module)]

    def resolve_if_testing(self, level: int, module: str, name: str) -> ModuleSummary | None:
        """``resolve``, when the text of the module's top-level function or assignment
        ``name`` tests availability (``is_available``, ``device_count``); None, without
        parsing it, otherwise. What an explicit import needs when no device tensor is
        passed: a device getter, a ``get_args()`` setting ``args.cuda``, a ``USE_CUDA``
        flag; a library's other imports stay unread."""
        path = self.path_of(level, module)
        if path is None:
            return None
        self.read.add(path)  # its text decides: an edit may change the file's result
        if path not in self.testing:
            self.testing[path] = _testing_functions(path)
        return self.resolve(level, module) if name in self.testing[path] else None

    def path_of(self, level: int, module: str) -> Path | None:
        key = (level, module)
        if key not in self.paths:
            self.paths[key] = module_path(self.origin, level, module)
        return self.paths[key]

    def summary_of(self, path: Path | None) -> ModuleSummary | None:
        if path is None:
            return None
        self.read.add(path)
        try:
            status = path.stat()
        except OSError:
            return None
        key, stamp = (path, self.guard_functions), (status.st_mtime_ns, status.st_size)
        cached = _SUMMARIES.get(key)
        if cached is None or cached[0] != stamp:
            cached = _SUMMARIES[key] = (stamp, self.parse(path, status.st_size))
        return cached[1]

    def parse(self, path: Path, size: int) -> ModuleSummary | None:
        if size > MAX_MODULE_BYTES:
            return None
        try:
            module = cst.parse_module(path.read_bytes().decode("utf-8-sig"))
        except (OSError, UnicodeDecodeError, cst.ParserSyntaxError, RecursionError, ValueError):
            return None
        try:
            return self.summarize(module, self.guard_functions)
        except Exception:  # a devlint bug on the sibling must not fail the importing file
            return None


# (folder, its mtime, level, module) -> the module's real path, per process
_MODULE_PATHS: dict[tuple[str, int, int, str], str | None] = {}
_AVAILABILITY_TEXT = re.compile(rb"is_available|device_count")
_TOP_LEVEL_DEF = re.compile(rb"^(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.MULTILINE)
# ``USE_CUDA = torch.cuda.is_available()``, ``DEVICE = torch.device("cuda" if ...)``
_TESTING_ASSIGNMENT = re.compile(
    rb"^(\w+)[ \t]*(?::[^\n=]*)?=(?!=)[^\n]*(?:is_available|device_count)", re.MULTILINE
)
# path -> ((mtime, size), its top-level names whose text tests availability), per process
_TESTING_FUNCTIONS: dict[Path, tuple[tuple[int, int], frozenset[str]]] = {}


def _testing_functions(path: Path) -> frozenset[str]:
    """The top-level functions and classes whose text (up to the next top-level ``def``
    or ``class``) mentions an availability test, and the top-level names assigned on a line that does: read as
    bytes, never parsed."""
    try:
        status = path.stat()
        stamp = (status.st_mtime_ns, status.st_size)
        cached = _TESTING_FUNCTIONS.get(path)
        if cached is None or cached[0] != stamp:
            data = path.read_bytes() if status.st_size <= MAX_MODULE_BYTES else b""
            found: frozenset[str] = frozenset()
            if _AVAILABILITY_TEXT.search(data):
                starts = list(_TOP_LEVEL_DEF.finditer(data))
                ends = [match.start() for match in starts[1:]] + [len(data)] if starts else []
                found = frozenset(
                    match[1].decode("ascii", "replace")
                    for match, end in zip(starts, ends, strict=True)
                    if _AVAILABILITY_TEXT.search(data, match.end(), end)
                ) | {m[1].decode("ascii", "replace") for m in _TESTING_ASSIGNMENT.finditer(data)}
            cached = _TESTING_FUNCTIONS[path] = (stamp, found)
    except OSError:
        return frozenset()
    return cached[1]


_SETS_DEFAULT_DEVICE = re.compile(rb"\bset_default_(?:device|tensor_type)[ \t]*\(")


def _importers(origin: Path, beside_namespace_package: bool = False) -> list[tuple[Path, bytes]]:
    """The entry scripts (files that test ``__main__``) in the file's folder and the
    package folders above it (and the folder holding the top package) whose text imports
    the file's module by name, with their text; at most ``MAX_CALLERS``, read as bytes,
    never parsed. ``beside_namespace_package``: for a file in a folder without
    ``__init__.py`` at a project's root, the scripts at the root too (NeuS's
    ``exp_runner.py`` imports ``models.dataset``)."""
    stem = origin.stem if origin.stem != "__init__" else origin.parent.name
    if not stem.isidentifier():
        return []
    imports_it = re.compile(
        rb"^[ \t]*(?:from|import)[ \t][^\n]*\b" + re.escape(stem.encode()) + rb"\b", re.M
    )
    here = os.path.realpath(origin)
    folder = os.path.dirname(here)
    folders = [folder]
    while os.path.isfile(os.path.join(folder, "__init__.py")) and len(folders) <= MAX_PACKAGE_DEPTH:
        folder = os.path.dirname(folder)
        folders.append(folder)
    parent = os.path.dirname(folder)
    if beside_namespace_package and len(folders) == 1 and is_project_root(parent):
        folders.append(parent)
    found: list[tuple[Path, bytes]] = []
    for folder in folders:
        for path, data in _entry_scripts(folder):
            if path != here and imports_it.search(data):
                found.append((Path(path), data))
                if len(found) == MAX_CALLERS:
                    return found
    return found


_Found = TypeVar("_Found")

# Within a run (``one_run``): (what, folder) -> (the folder's mtime, what was found in
# it). None: no run.
_RUN_FOLDERS: dict[tuple[str, str], tuple[int, object]] | None = None


@contextmanager
def one_run() -> Iterator[None]:
    """A run over many files (``runner.run_files``): within it, each folder's entry
    scripts are listed once per version of the folder (its mtime: a file added, removed
    or renamed), not once per file analysed there (a flat folder of N files: N stats per
    file, N squared in all); so are its scripts' flags (``project_flags.py``). A file
    edited in place during the run is read as it was when its folder was listed; the
    next run lists the folder again. Outside a run (the language server, one
    ``check_text``) every analysis lists the folders it needs."""
    global _RUN_FOLDERS
    outer = _RUN_FOLDERS
    if outer is None:
        _RUN_FOLDERS = {}
    try:
        yield
    finally:
        _RUN_FOLDERS = outer


def begin_run() -> None:
    """``one_run`` for the rest of this process: a worker process of one run."""
    global _RUN_FOLDERS
    _RUN_FOLDERS = {}


def per_folder(what: str, folder: str, find: Callable[[str], _Found]) -> _Found:
    """``find(folder)``; within a run, once per version of the folder (``one_run``)."""
    runs = _RUN_FOLDERS
    if runs is None:
        return find(folder)
    try:
        stamp = os.stat(folder).st_mtime_ns
    except OSError:
        return find(folder)
    cached = runs.get((what, folder))
    if cached is None or cached[0] != stamp:
        cached = runs[(what, folder)] = (stamp, find(folder))
    return cast(_Found, cached[1])


def _entry_scripts(folder: str) -> tuple[tuple[str, bytes], ...]:
    """The entry scripts in ``folder`` (path and text), by name."""
    return per_folder("entry scripts", folder, _list_entry_scripts)


def _list_entry_scripts(folder: str) -> tuple[tuple[str, bytes], ...]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return ()
    found: list[tuple[str, bytes]] = []
    for name in names:
        if name.endswith(".py"):
            path = os.path.join(folder, name)
            data = _entry_script_text(path)
            if data is not None:
                found.append((path, data))
    return tuple(found)


# path -> ((mtime, size), its text if it is an entry script), per process
_ENTRY_SCRIPTS: dict[str, tuple[tuple[int, int], bytes | None]] = {}


def _entry_script_text(path: str) -> bytes | None:
    """The text of a file that tests ``__main__`` (an entry script), else None."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    stamp = (status.st_mtime_ns, status.st_size)
    cached = _ENTRY_SCRIPTS.get(path)
    if cached is None or cached[0] != stamp:
        data: bytes | None = None
        if status.st_size <= MAX_MODULE_BYTES and os.path.isfile(path):
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                data = None
        cached = _ENTRY_SCRIPTS[path] = (stamp, data if data and b"__main__" in data else None)
    return cached[1]


def module_path(origin: Path, level: int, module: str) -> Path | None:
    """The file of the project module a star import names, resolved; None if none is.

    Relative imports start from ``origin``'s folder (``level`` dots); absolute ones from
    that folder, then from each package folder above it (``pkg/sub/train.py`` importing
    ``pkg.utils``). Torch's and NumPy's own star imports are not project modules.
    """
    parts = module.split(".") if module else []
    if level == 0 and (not parts or parts[0] in name_guesses.STAR_RESOLVED_PACKAGES):
        return None
    # Files of one folder import the same modules: one search per folder and version of
    # it (a sibling added or removed changes the folder's mtime).
    folder = os.path.dirname(os.path.abspath(origin))
    try:
        stamp = os.stat(folder).st_mtime_ns
    except OSError:
        return None
    key = (folder, stamp, level, module)
    if key not in _MODULE_PATHS:
        _MODULE_PATHS[key] = _find_module(folder, level, parts)
    found = _MODULE_PATHS[key]
    if found is None:
        return None
    if os.path.basename(found) == origin.name and found == os.path.realpath(origin):
        return None  # the file itself
    return Path(found)


def _find_module(folder: str, level: int, parts: list[str]) -> str | None:
    """The real path of the module file (or package ``__init__.py``) ``parts`` names
    from ``folder``; os.path on strings, as this runs for imports of every file."""
    roots = [folder]
    if level:
        roots = [os.path.join(folder, *[os.pardir] * (level - 1))]
    else:
        while (
            os.path.isfile(os.path.join(folder, "__init__.py")) and len(roots) <= MAX_PACKAGE_DEPTH
        ):
            folder = os.path.dirname(folder)
            roots.append(folder)
        if parts and parts[0] == os.path.basename(folder):
            # ``from omnivore import utils`` in ``omnivore/train.py``: the script's own
            # folder named as a package (run as ``python -m omnivore.train``)
            roots.append(os.path.dirname(folder))
        # ``from lib.core import train`` in ``tools/retrain.py``, ``lib/`` beside ``tools/``:
        # a script that puts the project's root on its path (``import _init_paths``).
        roots += _ancestors(folder)
    for root in roots:
        candidates = [os.path.join(root, *parts, "__init__.py")]
        if parts:
            candidates.insert(0, os.path.join(root, *parts[:-1], parts[-1] + ".py"))
        for candidate in candidates:
            if os.path.isfile(candidate):
                return os.path.realpath(candidate)
    return None


def _ancestors(folder: str) -> list[str]:
    """The folders above ``folder`` up to the project's root (a folder with ``.git``,
    ``pyproject.toml``, ``setup.py`` or ``setup.cfg``), when it is at most
    ``MAX_ROOT_LEVELS`` above; none otherwise (a folder of unrelated projects is no root)."""
    found: list[str] = []
    while not is_project_root(folder):
        parent = os.path.dirname(folder)
        if parent == folder or len(found) == MAX_ROOT_LEVELS:
            return []
        folder = parent
        found.append(folder)
    return found


def is_project_root(folder: str) -> bool:
    """Whether ``folder`` is a project's root: a checkout's, or a package's source."""
    return any(os.path.exists(os.path.join(folder, marker)) for marker in ROOT_MARKERS)


def dependencies_of(origin: Path) -> list[Path]:
    """The project modules the last analysis of the file at ``origin`` in this process
    read (resolved paths, sorted): its result depends on them (the result cache keeps
    them with it). Asking forgets them."""
    return sorted(_READ_BY.pop(origin, ()))


def exported_names(module: cst.Module) -> frozenset[str] | None:
    """The names a literal ``__all__`` lists; None: no such ``__all__`` (public names)."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not (
                isinstance(small, cst.Assign)
                and any(
                    isinstance(t.target, cst.Name) and t.target.value == "__all__"
                    for t in small.targets
                )
                and isinstance(small.value, cst.List | cst.Tuple)
            ):
                continue
            names = [
                e.value.evaluated_value
                for e in small.value.elements
                if isinstance(e.value, cst.SimpleString)
            ]
            return frozenset(name for name in names if isinstance(name, str))
    return None


def is_exported(key: str, exported: frozenset[str] | None) -> bool:
    """Whether a module-level name (or ``name.attr`` key) is bound by a star import."""
    head = key.split(".", 1)[0]
    return head in exported if exported is not None else not head.startswith("_")


def portable(value: Value) -> Value:
    """``value`` without references into its module's tree (factory calls, literals)."""
    elements = value.elements
    if elements is not None:
        elements = tuple(portable(element) for element in elements)
    if not value.origins and not value.cuda_defaults and value.gate is None:
        return value if elements == value.elements else replace(value, elements=elements)
    return replace(value, origins=(), cuda_defaults=(), gate=None, elements=elements)
