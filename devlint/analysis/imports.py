"""The interpreter's imports: what ``import`` and ``from ... import`` bind.

Library names are bound as ``IMPORTED`` values that ``torch_api`` resolves. Imports of the
project's own modules (``project_imports.py``) are remembered without reading anything:
a star import is resolved when a name misses (``resolve_stars``), an explicit one when its
name is called (``project_summary``, used by ``calls.py``) or assigned from a call
(``args = get_args()``: the flags the sibling set on what it returns).
"""

from __future__ import annotations

import libcst as cst

from devlint.analysis import name_guesses
from devlint.analysis.interpreter import Interpreter
from devlint.analysis.project_imports import CallerCall, ModuleSummary, ProjectModules
from devlint.analysis.syntax import dotted_name, module_name
from devlint.analysis.values import Kind, Value


class Imports:
    """Import handlers and the lookups of project modules (see the module docstring)."""

    def __init__(self, core: Interpreter) -> None:
        self.core = core
        self.star_modules: list[str] = []  # ``from torch.nn import *``, in order
        self.user_star = False  # ``from models import *`` of a module that is not a library's
        # ``from utils import *`` of this project's modules (project_imports.py); None: the
        # file is nowhere (stdin), or is itself being summarised for another file.
        self.project_modules: ProjectModules | None = None
        self.star_bindings: dict[int, frozenset[str]] = {}  # ``FileFacts.star_bindings``
        # Those star imports, resolved only once a name misses (``resolve_stars``): a file
        # that only re-exports (``__init__.py``) never reads its siblings.
        self.unresolved_stars: list[tuple[cst.ImportFrom, int, str]] = []
        # ``from utils import reduce_dict``: what each name may come from in the project
        # (qualname -> level, module, name), resolved when it is called.
        self.project_names: dict[str, tuple[int, str, str]] = {}
        # ``import utils``, ``from . import utils``: qualname -> level, module.
        self.project_packages: dict[str, tuple[int, str]] = {}
        self.project_values: dict[str, Value | None] = {}  # ``project_value``, by qualname
        # In an entry script's caller analysis only: its calls of project functions.
        self.project_calls: list[tuple[str, CallerCall]] | None = None
        # The calls of this file's functions in the entry scripts that import it.
        self.caller_calls: dict[str, list[CallerCall]] = {}
        # The functions and classes a star import of a project module bound (name ->
        # level, module, the value bound): a call of one is a project call too.
        self.star_origins: dict[str, tuple[int, str, Value]] = {}

    def bind_returned_flags(self, small: cst.Assign) -> None:
        """``args = get_args()`` of a project module: the flags it set on ``args``."""
        if not (self.project_names or self.project_packages):
            return
        flags = self.returned_flags(small.value)
        for target in small.targets if flags else ():
            holder = dotted_name(target.target)
            for attribute, flag in (flags or {}).items() if holder else ():
                self.core.store(f"{holder}.{attribute}", flag)

    def star_origin(self, name: str, value: Value | None) -> bool:
        """Whether ``value``, what ``name`` holds where it is called, is the function or
        class a star import of a project module bound (not a later binding of the file)."""
        found = self.star_origins.get(name)
        return found is not None and value is found[2]

    @staticmethod
    def is_library(module: str) -> bool:
        """torch and NumPy: never a project module."""
        return module.split(".", 1)[0] in name_guesses.STAR_RESOLVED_PACKAGES

    def returned_flags(self, value: cst.BaseExpression) -> dict[str, Value] | None:
        """The availability flags on what a call of a project module's function returns."""
        record = self.core.rec.calls.get(id(value)) if type(value) is cst.Call else None
        if record is None or record.callee is None or not self.is_project_name(record.callee):
            return None
        summary = self.project_summary(record.callee)
        return summary[0].returned_flags.get(summary[1]) if summary is not None else None

    def is_project_name(self, qualname: str) -> bool:
        """Imported from a module that may be the project's (``project_summary`` reads it)."""
        return qualname in self.project_names or (
            bool(self.project_packages) and qualname.rpartition(".")[0] in self.project_packages
        )

    def project_summary(
        self, qualname: str, device_args: bool = False
    ) -> tuple[ModuleSummary, str] | None:
        """The summary of the project module ``qualname`` was imported from, and its name
        there (``project_imports.py``); None when it is no project module. Without
        ``device_args`` (tensors that may be on an accelerator passed to it), only a module
        that tests availability is read."""
        found = self.project_origin(qualname)
        if found is None or self.project_modules is None:
            return None
        level, module, name = found
        modules = self.project_modules
        summary = (
            modules.resolve(level, module)
            if device_args
            else modules.resolve_if_testing(level, module, name)
        )
        return (summary, name) if summary is not None else None

    def project_origin(self, qualname: str) -> tuple[int, str, str] | None:
        """(level, module, name) of the project module ``qualname`` was imported from."""
        found = self.project_names.get(qualname)
        if found is None and qualname in self.star_origins:  # ``from model.crf import *``
            level, module, _ = self.star_origins[qualname]
            found = (level, module, qualname)
        if found is None and "." in qualname:  # ``utils.reduce_dict`` after ``import utils``
            module, _, name = qualname.rpartition(".")
            if module in self.project_packages:
                found = (*self.project_packages[module], name)
        return found

    def import_names(self, node: cst.Import) -> None:
        for alias in node.names:
            full = module_name(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.core.env[alias.asname.name.value] = Value(Kind.IMPORTED, qualname=full)
            else:
                top = full.split(".", 1)[0]
                self.core.env[top] = Value(Kind.IMPORTED, qualname=top)
            if self.project_modules is not None and not self.is_library(full):
                self.project_packages[full] = (0, full)  # ``import util.misc as utils``

    def import_from(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            # ``from torch.nn import *``: unbound names resolve there (``name``); a project
            # module's names are bound as it defines them; names from other modules' star
            # imports stay unknown and the rest of the file is analysed.
            module = module_name(node.module)
            if not node.relative and module.split(".", 1)[0] in name_guesses.STAR_RESOLVED_PACKAGES:
                self.star_modules.append(module)
            else:
                self.user_star = True
                if self.project_modules is not None:
                    self.unresolved_stars.append((node, len(node.relative), module))
            return
        module = module_name(node.module)
        base = "." * len(node.relative) + module
        project = self.project_modules is not None and (
            bool(node.relative) or not self.is_library(module)
        )
        for alias in node.names:
            name = module_name(alias.name)
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            qualname = f"{base}.{name}" if base and not base.endswith(".") else base + name
            self.core.env[local] = Value(Kind.IMPORTED, qualname=qualname)
            if project:
                self.project_names[qualname] = (len(node.relative), module, name)
                # The name may be a module of the package: ``from omnivore import utils``,
                # then ``utils.accuracy(...)`` (no such file: nothing is read).
                submodule = f"{module}.{name}" if module else name
                self.project_packages[qualname] = (len(node.relative), submodule)

    def resolve_stars(self) -> dict[int, frozenset[str]]:
        """Bind what the file's unresolved star imports of project modules bring, in
        order; the names each import bound (``FileFacts.star_bindings``)."""
        pending, self.unresolved_stars = self.unresolved_stars, []
        for node, level, module in pending:
            assert self.project_modules is not None  # only then are stars left unresolved
            summary = self.project_modules.resolve(level, module)
            if summary is not None:
                self.star_import(summary, level, module)
                names = frozenset(key for key in summary.names if "." not in key)
                self.star_bindings[id(node)] = names
        return self.star_bindings

    def star_import(self, summary: ModuleSummary, level: int, module: str) -> None:
        """Bind what a project module's star import brings (``project_imports.py``) at module
        level; it runs lazily (``resolve_stars``), so names the file binds itself win."""
        core, definitions = self.core, self.core.definitions
        saved, core.env = core.env, core.module_env
        try:
            for key in sorted(summary.names):  # ``args`` before ``args.cuda``
                if key not in core.module_env:
                    value = summary.names[key]
                    core.store(key, value)
                    if value.kind in (Kind.FUNCTION, Kind.CLASS) and value.qualname == key:
                        self.star_origins[key] = (level, module, value)
        finally:
            core.env = saved
        definitions.module_classes |= summary.module_classes
        definitions.stateless_classes |= summary.stateless_classes
        definitions.imported_returns.update(summary.returns)
        definitions.imported_items.update(summary.dataset_items)
        self.star_modules.extend(summary.star_modules)
