"""``@record``: a ``@dataclass`` whose methods were compiled once, not at every start.

``@dataclass`` writes the ``__init__``, ``__repr__``, ``__eq__``, ``__hash__`` (and,
frozen, ``__setattr__`` / ``__delattr__``; with ``order``, the comparisons) of each class
as source text and compiles it every time devlint starts: about 1 ms a class on Python
3.11, for some 60 classes on a check's path. ``scripts/write_record_methods.py`` writes
those methods, as ``@dataclass`` generates them (Python 3.11), for every class declared
``@record(...)`` into ``devlint/_record_methods.py``, compiled once into its ``.pyc``;
``record`` applies ``dataclass(init=False, repr=False, eq=False)`` (fields, ``replace``,
``asdict``, ``__match_args__``, ``slots`` as usual) and attaches them.

Each entry of the generated module carries the class's declaration as the script saw it
(``declaration``: fields, their options, the parameters). A class whose declaration
differs (a field added, an option changed, and the script not run again) or that has no
entry gets plain ``@dataclass``: correct, only slower. ``tests/test_records.py`` fails
until the generated module is written again.
"""

from __future__ import annotations

import _thread
import functools
import sys
import types
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError, dataclass, field, fields
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

if TYPE_CHECKING:
    from typing import dataclass_transform
else:

    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        return lambda decorated: decorated


T = TypeVar("T", bound=type)

# Every class declared @record, in order: (class, frozen, order, slots, declaration),
# read by scripts/write_record_methods.py.
DECLARED: list[tuple[type, bool, bool, bool, tuple[Any, ...]]] = []


class _HasDefaultFactory:
    """The default of an ``__init__`` parameter whose field has a ``default_factory``."""

    def __repr__(self) -> str:
        return "<factory>"


FACTORY: Any = _HasDefaultFactory()
_IN_REPR: set[tuple[int, int]] = set()  # (object, thread): its repr under way


def recursive_repr(method: Callable[[Any], str]) -> Callable[[Any], str]:
    """A ``__repr__`` that answers ``...`` for an object whose repr this thread is already
    writing (a cycle), as ``@dataclass`` wraps its own."""

    @functools.wraps(method)
    def __repr__(self: Any) -> str:
        key = (id(self), _thread.get_ident())
        if key in _IN_REPR:
            return "..."
        _IN_REPR.add(key)
        try:
            return method(self)
        finally:
            _IN_REPR.discard(key)

    return __repr__


def _getstate(self: Any) -> list[Any]:  # a frozen class with slots, as @dataclass's
    return [getattr(self, f.name) for f in fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(fields(self), state):  # noqa: B905
        object.__setattr__(self, f.name, value)


def declaration(cls: type, frozen: bool, order: bool, slots: bool) -> tuple[Any, ...]:
    """What the generated methods of ``cls`` depend on, read from the class as declared
    (before ``@dataclass`` processes it): its own annotations and their defaults or
    ``field(...)`` options, the fields of its dataclass bases, ``__post_init__``, the
    parameters."""
    own = []
    namespace = cls.__dict__
    for name, annotation in namespace.get("__annotations__", {}).items():
        value = namespace.get(name, MISSING)
        value = _field_options(value) if isinstance(value, Field) else value is not MISSING
        own.append((name, annotation if isinstance(annotation, str) else repr(annotation), value))
    inherited = []
    for base in cls.__mro__[-1:0:-1]:
        base_fields = base.__dict__.get("__dataclass_fields__")
        if base_fields is not None:
            inherited.append(tuple((f.name, _field_options(f)) for f in base_fields.values()))
    post_init = hasattr(cls, "__post_init__")
    return (frozen, order, slots, post_init, tuple(inherited), tuple(own))


def _field_options(f: Field[Any]) -> tuple[Any, ...]:
    return (
        str(f._field_type),  # type: ignore[attr-defined]  # None until processed
        f.default is not MISSING,
        f.default_factory is not MISSING,
        f.init,
        f.repr,
        f.hash,
        f.compare,
        getattr(f, "kw_only", MISSING) is True,
    )


Methods = dict[str, tuple[tuple[Any, ...], Callable[..., dict[str, Any]]]]
_METHODS: Methods | None = None  # the generated module's table, once read


def _methods() -> Methods:
    global _METHODS
    if _METHODS is None:
        try:
            from devlint import _record_methods
        except ImportError:  # not written yet: every class as plain @dataclass
            _METHODS = {}
        else:
            _METHODS = cast(Methods, _record_methods.METHODS)
    return _METHODS


def precompiled(cls: type, frozen: bool) -> bool:
    """Whether ``record`` can attach compiled methods to ``cls``: not where a dataclass
    base is frozen, or the class is (``dataclass(frozen=False)`` would refuse the first,
    and should refuse the second's mix)."""
    for base in cls.__mro__[1:]:
        params = base.__dict__.get("__dataclass_params__")
        if params is not None and (frozen or params.frozen):
            return False
    return True


@overload
@dataclass_transform(field_specifiers=(field, Field))
def record(cls: T, /) -> T: ...


@overload
@dataclass_transform(field_specifiers=(field, Field))
def record(
    *, frozen: bool = False, order: bool = False, slots: bool = False
) -> Callable[[T], T]: ...


@dataclass_transform(field_specifiers=(field, Field))
def record(
    cls: Any = None, /, *, frozen: bool = False, order: bool = False, slots: bool = False
) -> Any:
    """``@dataclass(frozen=..., order=..., slots=...)``, its methods compiled beforehand
    (``devlint/_record_methods.py``) where the class is as the script saw it."""

    def wrap(cls: type) -> type:
        return _record(cls, frozen, order, slots)

    return wrap if cls is None else wrap(cls)


def _record(cls: type, frozen: bool, order: bool, slots: bool) -> type:
    declared = declaration(cls, frozen, order, slots)
    entry = _methods().get(f"{cls.__module__}.{cls.__qualname__}")
    if entry is None or entry[0] != declared or not precompiled(cls, frozen):  # as @dataclass
        plain: Any = dataclass(cls, frozen=frozen, order=order, slots=slots)
        DECLARED.append((plain, frozen, order, slots, declared))
        return plain

    namespace = cls.__dict__
    documented = bool(namespace.get("__doc__"))
    class_hash = namespace.get("__hash__", MISSING)
    explicit_hash = not (class_hash is MISSING or (class_hash is None and "__eq__" in namespace))
    if not documented:  # written below, from the __init__ (without one, inspect is slow)
        cls.__doc__ = "-"
    made: Any = dataclass(cls, init=False, repr=False, eq=False, slots=slots)
    create = entry[1]
    module = sys.modules.get(made.__module__)
    if module is not None:  # the methods' globals are the class's module's, as @dataclass's
        create = types.FunctionType(
            create.__code__,
            module.__dict__,
            create.__name__,
            create.__defaults__,
            create.__closure__,
        )
    methods = create(made, made.__dataclass_fields__, MISSING, FACTORY, object, FrozenInstanceError)
    own = made.__dict__
    for name, method in methods.items():
        if name == "__hash__":
            continue
        if name in own:  # written in the class: @dataclass keeps those three
            if name in ("__init__", "__repr__", "__eq__"):
                continue
            raise TypeError(f"Cannot overwrite attribute {name} in class {made.__name__}")
        method.__qualname__ = f"{made.__qualname__}.{name}"
        setattr(made, name, recursive_repr(method) if name == "__repr__" else method)
    if not explicit_hash:
        hash_method = methods.get("__hash__")
        if hash_method is not None:
            hash_method.__qualname__ = f"{made.__qualname__}.__hash__"
        made.__hash__ = hash_method  # None: mutable, so unhashable
    if frozen and slots:
        if "__getstate__" not in own:
            made.__getstate__ = _getstate
        if "__setstate__" not in own:
            made.__setstate__ = _setstate
    params = made.__dataclass_params__
    params.init = params.repr = params.eq = True
    params.order, params.frozen = order, frozen
    if not documented:
        try:
            import inspect

            signature = str(inspect.signature(made)).replace(" -> None", "")
        except (TypeError, ValueError):
            signature = ""
        made.__doc__ = made.__name__ + signature
    DECLARED.append((made, frozen, order, slots, declared))
    return made
