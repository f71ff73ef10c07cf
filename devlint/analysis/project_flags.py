"""Availability flags the project's scripts set on their parsed options.

A training script often turns its ``--use_gpu`` option into an availability test before
it hands the options on::

    args = parser.parse_args()
    args.use_gpu = True if torch.cuda.is_available() and args.use_gpu else False
    exp = Exp(args)

and a module it imports, directly or through a subclass, reads the option back
(``if self.args.use_gpu: device = torch.device("cuda:0")``; Informer, Autoformer,
PatchTST and the other Time-Series-Library descendants). The module cannot see that flow,
so ``namespace_flags`` reads the scripts near the file instead: the ``.py`` files of its
folder and of up to ``MAX_FOLDERS_UP`` folders above it, up to the project's root (a
folder with ``.git``, ``pyproject.toml``, ``setup.py`` or ``setup.cfg``). Each is read as
bytes, never parsed whole: a line ``<ns>.<attr> = <expression>`` whose expression is true
only where CUDA is available (``is_available()``, alone, in an ``and``, or as the test of
``True if ... else False``), in a script that assigns ``<ns>`` from ``parse_args()`` or builds it (``data = Data()``),
makes ``<ns>.<attr>`` such a flag. The importing file then reads ``args.use_gpu`` (and
``self.args.use_gpu``: ``name_guesses.aliased_flag``) as that test. A module (or class)
the script imports is such a namespace too: ``cuda.CUDA_ENABLED = use_cuda and
torch.cuda.is_available()`` (pytext's ``workflow.py``) makes ``cuda.CUDA_ENABLED`` a flag
where it is read through the import, and ``CUDA_ENABLED`` in ``cuda.py`` itself. The evidence is the
availability test in the script and the same namespace and attribute names in both files;
``name_guesses.py`` lists it with the other decisions made from names.

Files are cached per process by version (mtime, size), folders by their mtime; within a
run over many files (``project_imports.one_run``) each folder is read once.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

from devlint.analysis import project_imports

MAX_FOLDERS_UP = 2  # ``exp/exp_basic.py`` meets ``main_informer.py`` one folder up
MAX_SCRIPT_BYTES = 1_000_000
_AVAILABILITY = re.compile(rb"is_available\(\)")
_PARSED_OPTIONS = re.compile(
    rb"^[ \t]*(\w+)[ \t]*(?:,[^\n=]*)?=[^\n]*\.parse(?:_known)?_args\(", re.M
)
# ``data = Data()``: a settings object the script builds (a class, by PEP 8's capital letter)
_CONSTRUCTED = re.compile(rb"^[ \t]*(\w+)[ \t]*=[ \t]*(?:\w+\.)*[A-Z]\w*\(", re.M)
_FLAG_LINE = re.compile(rb"^[ \t]*(\w+)\.(\w+)[ \t]*=(?!=)([^\n]*is_available\(\)[^\n]*)$", re.M)
_FROM_IMPORT = re.compile(
    rb"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]*(?:\(([^)]*)\)|([\w, \t]+)$)", re.M
)
_COMMENT = re.compile(rb"#[^\n]*")
_IMPORT = re.compile(rb"^[ \t]*import[ \t]+([\w.]+)(?:[ \t]+as[ \t]+(\w+))?[ \t]*$", re.M)

# file path -> ((mtime, size), the flags it sets); folder -> (mtime, its .py files)
_FILE_FLAGS: dict[str, tuple[tuple[int, int], frozenset[str]]] = {}
_FOLDER_FILES: dict[str, tuple[int, tuple[str, ...]]] = {}


def namespace_flags(origin: Path) -> tuple[frozenset[str], frozenset[Path]]:
    """The flags (``args.use_gpu``) the scripts near ``origin`` set from an availability
    test, and those scripts (the file's result depends on them)."""
    here = os.path.abspath(origin)
    flags: set[str] = set()
    scripts: set[Path] = set()
    for folder in _folders(os.path.dirname(here)):
        for path, found in project_imports.per_folder("flags", folder, _flags_of_folder):
            if path != here:  # the file's own flags are its own analysis's
                flags |= found
                scripts.add(Path(path))
    return frozenset(flags), frozenset(scripts)


def _flags_of_folder(folder: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """The scripts of ``folder`` that set flags, with their flags."""
    return tuple((path, found) for path in _python_files(folder) if (found := _flags_in(path)))


def _folders(start: str) -> list[str]:
    folders = [start]
    folder = start
    while len(folders) <= MAX_FOLDERS_UP and not project_imports.is_project_root(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
        folders.append(folder)
    return folders


def _python_files(folder: str) -> tuple[str, ...]:
    try:
        stamp = os.stat(folder).st_mtime_ns
    except OSError:
        return ()
    cached = _FOLDER_FILES.get(folder)
    if cached is None or cached[0] != stamp:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            names = []
        files = tuple(os.path.join(folder, name) for name in names if name.endswith(".py"))
        cached = _FOLDER_FILES[folder] = (stamp, files)
    return cached[1]


def _flags_in(path: str) -> frozenset[str]:
    try:
        status = os.stat(path)
    except OSError:
        return frozenset()
    stamp = (status.st_mtime_ns, status.st_size)
    cached = _FILE_FLAGS.get(path)
    if cached is None or cached[0] != stamp:
        found: frozenset[str] = frozenset()
        if status.st_size <= MAX_SCRIPT_BYTES and os.path.isfile(path):
            try:
                with open(path, "rb") as handle:
                    found = _flags_of_text(handle.read())
            except OSError:
                pass
        cached = _FILE_FLAGS[path] = (stamp, found)
    return cached[1]


def _flags_of_text(data: bytes) -> frozenset[str]:
    """``<ns>.<attr>`` for each line setting an availability flag on a namespace that the
    script assigns from ``parse_args()`` (or ``parse_known_args()``), on a module (or
    class) it imports (``cuda.CUDA_ENABLED = use_cuda and torch.cuda.is_available()``),
    or on a settings object it builds (``data = Data()``, then ``data.HP_gpu =
    torch.cuda.is_available()``: NCRFpp, eval/blind141)."""
    if not _AVAILABILITY.search(data):
        return frozenset()
    holders = {match[1] for match in _PARSED_OPTIONS.finditer(data)} | _imported_names(data)
    holders |= {match[1] for match in _CONSTRUCTED.finditer(data)}
    return frozenset(
        f"{match[1].decode('ascii')}.{match[2].decode('ascii')}"
        for match in _FLAG_LINE.finditer(data)
        if match[1] in holders and _implies_available(match[3].decode("utf-8", "replace"))
    )


def _imported_names(data: bytes) -> set[bytes]:
    """The names a script's imports bind (``from pytext.utils import cuda``, also in
    parentheses over several lines, ``import config as cfg``)."""
    names: set[bytes] = set()
    for match in _FROM_IMPORT.finditer(data):
        listed = _COMMENT.sub(b"", match[1]) if match[1] is not None else match[2]
        for alias in listed.split(b","):
            words = alias.split()
            if words:
                names.add(words[-1])  # ``x`` or ``x as y``: the name bound
    for match in _IMPORT.finditer(data):
        names.add(match[2] or match[1].split(b".")[0])
    return names


def _implies_available(source: str) -> bool:
    """Whether the expression is true only where the accelerator it tests is available."""
    try:
        tree = ast.parse(source.strip().split("#", 1)[0], mode="eval").body
    except SyntaxError:
        return False
    return _true_only_if_available(tree)


def _true_only_if_available(node: ast.expr) -> bool:
    if isinstance(node, ast.Call):
        func = node.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr == "is_available"
            and isinstance(func.value, ast.Attribute)
            and func.value.attr == "cuda"
        )
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return any(_true_only_if_available(value) for value in node.values)
    if isinstance(node, ast.IfExp):
        return (
            isinstance(node.body, ast.Constant)
            and node.body.value is True
            and isinstance(node.orelse, ast.Constant)
            and not node.orelse.value
            and _true_only_if_available(node.test)
        )
    return False
