"""``@record`` classes (devlint/records.py) are the ``@dataclass`` they declare: each
against a twin made by ``@dataclass`` from the same fields (signature, repr, equality,
hashing, order, frozen, pickling, ``replace``, the class's parameters and doc); their
methods come from devlint/_record_methods.py, which is what
scripts/write_record_methods.py writes now, byte for byte; a class the file does not
know as it is now gets plain ``@dataclass``."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import pickle
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import devlint
from devlint import records

ROOT = Path(__file__).resolve().parent.parent


def _declared() -> list[tuple[type, bool, bool, bool]]:
    for info in pkgutil.walk_packages(devlint.__path__, "devlint."):
        if info.name != "devlint.__main__":
            importlib.import_module(info.name)
    return sorted(
        {(cls, frozen, order, slots) for cls, frozen, order, slots, _ in records.DECLARED},
        key=lambda entry: f"{entry[0].__module__}.{entry[0].__qualname__}",
    )


DECLARED = _declared()


def _twin(cls: type, frozen: bool, order: bool, slots: bool) -> type:
    """A class of the same fields, bases and methods, made by ``@dataclass``."""
    namespace: dict[str, Any] = {"__annotations__": {}, "__module__": cls.__module__}
    if "__post_init__" in cls.__dict__:
        namespace["__post_init__"] = cls.__dict__["__post_init__"]
    if cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "("):
        namespace["__doc__"] = cls.__doc__
    inherited = {
        name for base in cls.__mro__[1:] for name in getattr(base, "__dataclass_fields__", {})
    }
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in inherited:
            continue
        namespace["__annotations__"][f.name] = f.type
        namespace[f.name] = dataclasses.field(
            default=f.default,
            default_factory=f.default_factory,
            init=f.init,
            repr=f.repr,
            hash=f.hash,
            compare=f.compare,
            metadata=f.metadata,
            kw_only=f.kw_only,
        )
    twin = type(cls.__name__, cls.__bases__, namespace)
    twin.__qualname__ = cls.__qualname__
    return dataclasses.dataclass(frozen=frozen, order=order, slots=slots)(twin)


def test_the_classes_a_check_creates_are_records_with_compiled_methods() -> None:
    names = {cls.__qualname__ for cls, *_ in DECLARED}
    assert {"Diagnostic", "Value", "FileFacts", "CheckFlags", "FixContext"} <= names
    assert len(DECLARED) >= 60
    for cls, frozen, _, _ in DECLARED:
        if records.precompiled(cls, frozen):
            code = cls.__init__.__code__  # type: ignore[misc]
            assert Path(code.co_filename).name == "_record_methods.py", cls
            assert cls.__eq__.__code__.co_filename == code.co_filename, cls


def test_the_generated_methods_are_what_the_script_writes_now() -> None:
    done = subprocess.run(
        [sys.executable, "scripts/write_record_methods.py", "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, "run python scripts/write_record_methods.py\n" + done.stdout


@pytest.mark.parametrize("entry", DECLARED, ids=lambda entry: entry[0].__qualname__)
def test_a_record_is_its_dataclass(entry: tuple[type, bool, bool, bool]) -> None:
    cls, frozen, order, slots = entry
    twin = _twin(cls, frozen, order, slots)
    assert str(inspect.signature(cls)) == str(inspect.signature(twin))
    assert cls.__init__.__annotations__ == twin.__init__.__annotations__  # type: ignore[misc]
    assert cls.__doc__ == twin.__doc__
    assert cls.__match_args__ == twin.__match_args__  # type: ignore[attr-defined]
    assert repr(cls.__dataclass_params__) == repr(twin.__dataclass_params__)  # type: ignore[attr-defined]
    assert getattr(cls, "__slots__", None) == getattr(twin, "__slots__", None)
    assert (cls.__hash__ is None) is (twin.__hash__ is None)
    for name in ("__init__", "__repr__", "__eq__", "__hash__", "__lt__", "__setattr__"):
        assert (name in cls.__dict__) is (name in twin.__dict__), name
    if "__post_init__" in cls.__dict__:
        return  # FixContext's needs a parsed module (tests/test_edits.py)

    fields = [f for f in dataclasses.fields(cls) if f.init]  # type: ignore[arg-type]
    values = {f.name: 1000 + i for i, f in enumerate(fields)}
    mine, theirs = cls(**values), twin(**values)
    assert repr(mine) == repr(theirs)
    assert mine == cls(**values) and mine.__ne__(cls(**values)) is False
    assert mine.__eq__(theirs) is NotImplemented
    if twin.__hash__ is not None:
        assert hash(mine) == hash(theirs)
    for f in fields:
        changed = {**values, f.name: -1}
        assert (mine == cls(**changed)) is (theirs == twin(**changed)), f.name
        if twin.__hash__ is not None:
            assert (hash(mine) == hash(cls(**changed))) is (
                hash(theirs) == hash(twin(**changed))
            ), f.name
        if order:
            for op in ("__lt__", "__le__", "__gt__", "__ge__"):
                assert getattr(mine, op)(cls(**changed)) == getattr(theirs, op)(twin(**changed))
    if frozen:
        name = fields[0].name if fields else "x"
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(mine, name, 1)
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(mine, name)
        assert pickle.loads(pickle.dumps(mine)) == mine
        assert copy.deepcopy(mine) == mine
    assert dataclasses.replace(mine) == mine
    assert dataclasses.asdict(mine) == dataclasses.asdict(theirs)


def test_a_class_the_file_does_not_know_as_it_is_gets_plain_dataclass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def declare() -> type:
        class Pair:
            """Two numbers."""

            a: int
            b: list[int] = dataclasses.field(default_factory=list)

        return Pair

    key = f"{__name__}.{declare.__qualname__}.<locals>.Pair"
    declared = records.declaration(declare(), True, False, True)
    made: list[type] = []

    def create(cls: type, fields: dict[str, Any], *constants: Any) -> dict[str, Any]:
        made.append(cls)

        def __init__(self: Any, a: int, b: Any = records.FACTORY) -> None:
            object.__setattr__(self, "a", a)
            object.__setattr__(self, "b", [] if b is records.FACTORY else b)

        return {"__init__": __init__}

    methods = records._methods()
    monkeypatch.setattr(records, "_METHODS", {**methods, key: (declared, create)})
    fresh = records.record(frozen=True, slots=True)(declare())
    assert made == [fresh]
    assert fresh(1).b == [] and fresh(1, [2]).b == [2]
    assert fresh.__init__.__qualname__.endswith("Pair.__init__")  # type: ignore[misc]

    stale = {**methods, key: ((*declared[:-1], declared[-1][:1]), create)}  # a field since
    monkeypatch.setattr(records, "_METHODS", stale)
    plain = records.record(frozen=True, slots=True)(declare())
    assert made == [fresh]
    assert plain.__init__.__code__.co_filename == "<string>"  # @dataclass's own
    assert plain(1, [2]) == plain(1, [2]) and hash(plain(1, (2,))) == hash(plain(1, (2,)))  # type: ignore[arg-type]
    assert repr(plain(1)) == f"{plain.__qualname__}(a=1, b=[])"
