"""Guards: device availability as a boolean value domain (docs/design.md §4, *Guards*).

**This is the one place that decides "this ``if`` is a CUDA guard".** An availability test
is a ``Value`` of kind ``GUARD``: ``qualname`` names the backend it tests (``cuda``,
``mps``, ``accelerator``, ``cpu``) and ``polarity`` says which way it points (+1: truthy
implies the backend is available; -1: falsy implies it; 0: it depends on it, in no
known direction). The interpreter computes these values like any other, so a flag is a
guard however it was computed and wherever it was stored:

- sources: the calls of ``torch_api.CUDA_AVAILABILITY`` (``torch.cuda.is_available()``,
  ``device_count()``...), ``x.is_cuda``, ``device.type == "cuda"``,
  ``str(device).startswith("cuda")``, ``guard-functions`` from the configuration;
- operators (``boolean``, ``negate``, ``comparison``, ``conditional``): ``not``,
  ``and``/``or`` with user flags (``not args.no_cuda and torch.cuda.is_available()`` is
  still a guard: truthy implies CUDA), ``bool(...)``, ``True if avail else False``,
  ``device_count() > 0``;
- storage: names, attributes (``self.use_cuda``, ``args.cuda``), constant dict keys
  (``cfg["cuda"]``) and the return values of helpers carry the value like any other;
  ``True`` stored only where CUDA certainly is (a class's own ``cuda()``, past an early
  exit on availability) is a test of where the code runs, as ``x.is_cuda`` is
  (``Branches.flag_set_with_cuda``), also in a module global a function sets;
- the host: ``sys.platform == "darwin"`` tests where MPS can exist (``macos_test``).

A flag computed only from user options (``args.cuda``, never combined with an availability
test) is not a GUARD value: it is a user choice, and code under it is unguarded. A flag
that is a parameter no call in the file shows (``def __init__(self, cuda=False)``) is
neither: the caller may compute it from availability, so code under it is not reported
as unguarded (``may_guard_cuda``), and no rule treats it as an availability test. So is
an attribute of ``self`` that a class deriving from another module's class reads and never
sets (``Expressions.inherited_flag``): its base may compute it from availability.

*Exits* (``always_exits``): an early ``return``/``raise``/``continue``/``break``/exit call
on the negated test guards the rest of the block; ``assert`` on the test guards it too.
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from devlint.analysis import library_api, name_guesses, torch_api
from devlint.analysis.syntax import dotted_name, own_nodes, string_value, strings_in
from devlint.analysis.values import Kind, Value

# Backends whose availability implies CUDA may be used (``accelerator`` may be CUDA: code
# guarded by it runs only where an accelerator exists).
_CUDA_BACKENDS = ("cuda", "accelerator")


def availability(backend: str, polarity: int = +1) -> Value:
    """The value of an availability test of ``backend``."""
    return Value(Kind.GUARD, polarity=polarity, qualname=backend)


def device_test(backend: str, polarity: int = +1) -> Value:
    """A test of where an already chosen device or tensor is (``device.type == "cuda"``,
    ``x.is_cuda``): it guards like an availability test, but choosing by it is no device
    choice (``device_type = "cuda" if "cuda" in device else "cpu"`` classifies)."""
    return Value(Kind.GUARD, polarity=polarity, qualname=backend, classifies=True)


CUDA_AVAILABLE = availability("cuda")
ON_CUDA = device_test("cuda")


def is_cuda_guard(value: Value, polarity: int) -> bool:
    """True when ``value`` being truthy (+1) / falsy (-1) implies CUDA is available."""
    return (
        value.kind is Kind.GUARD and value.polarity == polarity and value.qualname in _CUDA_BACKENDS
    )


def requires_cuda(value: Value) -> bool:
    """An object that exists only where CUDA is available: built for CUDA by a library that
    raises without it (``L.Fabric(accelerator="cuda")``)."""
    return value.kind is Kind.IMPORTED and value.qualname == library_api.LIGHTNING_CUDA_OBJECT


def may_guard_cuda(value: Value, polarity: int) -> bool:
    """``is_cuda_guard``, or a flag whose value a caller passes (``value.from_caller``):
    ``if self.cuda:`` after ``def __init__(self, cuda=False): self.cuda = cuda`` may test
    availability where the caller does (``Trainer(cuda=torch.cuda.is_available())``), so
    code under it is not reported as unguarded. It is no known guard either (not DEV016)."""
    return is_cuda_guard(value, polarity) or (polarity > 0 and value.from_caller)


def negate(value: Value) -> Value:
    """``not value``."""
    if value.kind is Kind.GUARD:
        return replace(value, polarity=-value.polarity)
    if value.kind is Kind.CONSTANT and isinstance(value.constant, bool):
        return Value(Kind.CONSTANT, constant=not value.constant)
    return Value()


def boolean(left: Value, right: Value, is_and: bool) -> Value | None:
    """``left and right`` / ``left or right`` when one side tests availability.

    ``a and b`` truthy implies both: +1 if either side is +1. ``a or b`` falsy implies
    both falsy: -1 if either side is -1. The backend is the deciding side's.
    """
    if left.kind is not Kind.GUARD and right.kind is not Kind.GUARD:
        return None
    polarities = [v.polarity if v.kind is Kind.GUARD else 0 for v in (left, right)]
    if is_and:
        polarity = +1 if +1 in polarities else (-1 if polarities == [-1, -1] else 0)
    else:
        polarity = -1 if -1 in polarities else (+1 if polarities == [+1, +1] else 0)
    guards = [v for v in (left, right) if v.kind is Kind.GUARD]
    deciding = [v for v in guards if v.polarity == polarity] or guards
    backend = next((v.qualname for v in deciding if v.qualname in _CUDA_BACKENDS), None)
    classifies = all(v.classifies for v in guards)
    value = availability(backend or deciding[0].qualname or "cuda", polarity)
    return replace(value, classifies=classifies, gate=_gate(guards))


def _gate(guards: list[Value]) -> tuple[str, cst.FunctionDef | None] | None:
    gates = {v.gate for v in guards if v.gate is not None}
    return gates.pop() if len(gates) == 1 else None


def gated(value: Value, setting: str, function: cst.FunctionDef | None) -> Value:
    """``setting and avail`` (a user setting and an availability test): the guard, gated
    by ``setting`` (the source of the user's part, in ``function``)."""
    if value.gate is not None:
        setting = f"{value.gate[0]} and {setting}"
    return replace(value, gate=(setting, function))


def conditional(test: Value, body: Value, orelse: Value) -> Value | None:
    """``True if avail else False`` (and ``1 if ... else 0``): the test itself, or negated."""
    if test.kind is not Kind.GUARD:
        return None
    truths = [_truth(body), _truth(orelse)]
    if truths == [True, False]:
        return test
    if truths == [False, True]:
        return negate(test)
    return None


def _truth(value: Value) -> bool | None:
    if value.kind is Kind.CONSTANT and isinstance(value.constant, bool | int | type(None)):
        return bool(value.constant)
    return None


def comparison(
    left_node: cst.BaseExpression,
    operator: cst.BaseCompOp,
    right_node: cst.BaseExpression,
    left: Value,
) -> Value | None:
    """Guards written as comparisons: ``device.type == "cuda"``, ``device_count() > 0``."""
    return (
        _membership(operator, right_node)
        or _named_backend(left_node, operator, right_node)
        or _device_string(left_node, operator, right_node)
        or _count(operator, right_node, left)
    )


def overridden_setting(
    operator: cst.BaseCompOp, right_node: cst.BaseExpression, left: Value
) -> Value | None:
    """``args.mode == "puregpu"`` after ``if not torch.cuda.is_available(): args.mode =
    "cpu"``: any other value than the one set where CUDA is absent implies CUDA. A test of
    a setting already chosen, like ``device.type == "cuda"``: no device choice itself."""
    compared = string_value(right_node)
    if left.absent is None or compared is None:
        return None
    equal = isinstance(operator, cst.Equal)
    if not (equal or isinstance(operator, cst.NotEqual)):
        return None
    if compared == left.absent:
        return device_test("cuda", -1 if equal else +1)
    return device_test("cuda", +1) if equal else None


# The queries that name the host's operating system: macOS is where MPS can exist.
MACOS_QUERIES = frozenset({"sys.platform", "platform.system"})


def macos_test(
    subject: str | None, operator: cst.BaseCompOp, right: cst.BaseExpression
) -> Value | None:
    """``sys.platform == "darwin"``, ``platform.system() == "Darwin"`` (``subject``: the
    query compared, by qualified name): a choice made under it has considered MPS, as
    under ``device.type == "mps"``; it says nothing about CUDA (speech-to-speech's
    handlers route macOS to MPS and choose CUDA or the CPU elsewhere: eval/blind105)."""
    text = string_value(right)
    if subject not in MACOS_QUERIES or text is None or text.lower() != "darwin":
        return None
    if isinstance(operator, cst.Equal):
        return device_test("mps", 0)  # the ``else`` has considered MPS, as after any test
    if isinstance(operator, cst.NotEqual):
        return device_test("mps", -1)  # so has the body, off macOS
    return None


def _membership(operator: cst.BaseCompOp, right_node: cst.BaseExpression) -> Value | None:
    """``device.type in ("cpu", "mps")``: the other devices exclude CUDA."""
    if not (isinstance(operator, cst.In | cst.NotIn) and type(right_node) in (cst.Tuple, cst.List)):
        return None
    assert isinstance(right_node, cst.Tuple | cst.List)
    kinds = {(string_value(e.value) or "").split(":", 1)[0] for e in right_node.elements}
    inside = isinstance(operator, cst.In)
    if kinds == {"cuda"}:
        return device_test("cuda", +1 if inside else -1)
    if kinds and "cuda" not in kinds and kinds <= {"cpu", "mps", "xpu", "meta"} and "cpu" in kinds:
        return device_test("cuda", -1 if inside else +1)
    return None


def _named_backend(
    left_node: cst.BaseExpression, operator: cst.BaseCompOp, right_node: cst.BaseExpression
) -> Value | None:
    """``backend == Backend.CUDA``, ``distributed_type == DistributedType.MULTI_GPU``: a
    constant (an upper-case leaf) named for CUDA; ``args.gpu is not None`` is a user option
    (moco), not a test of CUDA."""
    equal = isinstance(operator, cst.Equal | cst.Is)
    if not (equal or isinstance(operator, cst.NotEqual | cst.IsNot)):
        return None
    for side in (left_node, right_node):
        name = dotted_name(side)
        leaf = name.rsplit(".", 1)[-1] if name else ""
        if name_guesses.names_cuda_constant(leaf):
            return device_test("cuda", +1 if equal else -1)
    return None


def _device_string(
    left_node: cst.BaseExpression, operator: cst.BaseCompOp, right_node: cst.BaseExpression
) -> Value | None:
    """``device.type == "cuda"``, ``"cuda" in str(device)``, ``device != "cpu"``. The
    compared value need not be known to hold a device: ``name == "cuda"`` in a helper that
    maps a user's option to a device is the user's explicit choice, not a default."""
    equal = isinstance(operator, cst.Equal | cst.Is)
    unequal = isinstance(operator, cst.NotEqual | cst.IsNot)
    typed = _tensor_type_test(left_node, right_node)
    if typed is not None and typed[1] == "cuda" and (equal or unequal):
        return device_test("cuda", +1 if equal else -1)
    for device_side in (right_node, left_node):
        text = _device_literal(device_side)
        if text is None:
            continue
        kind = text.split(":", 1)[0]
        if isinstance(operator, cst.In) and device_side is left_node and kind == "cuda":
            return ON_CUDA
        if kind == "cuda" and (equal or unequal):
            return device_test("cuda", +1 if equal else -1)
        if kind in ("cpu", "mps") and (equal or unequal):
            # ``device.type != "cpu"`` may still mean MPS: not a CUDA guard.
            return device_test(kind, 0)
    return None


def _tensor_type_test(
    left: cst.BaseExpression, right: cst.BaseExpression
) -> tuple[cst.BaseExpression, str] | None:
    """``(x, "cuda")`` for ``x.type() == "torch.cuda.HalfTensor"`` (``"cpu"`` for
    ``"torch.FloatTensor"``): the tensor whose legacy type string is compared, and the
    device that type string names (waveglow's ``infer``, eval/blind49)."""
    for call, text in ((left, string_value(right)), (right, string_value(left))):
        if (
            text is not None
            and text.startswith("torch.")
            and text.endswith("Tensor")
            and type(call) is cst.Call
            and not call.args
            and type(call.func) is cst.Attribute
            and call.func.attr.value == "type"
        ):
            return call.func.value, "cuda" if text.startswith("torch.cuda.") else "cpu"
    return None


def _device_literal(node: cst.BaseExpression) -> str | None:
    """``"cuda"``, or the string of ``torch.device("cuda")`` (``device == torch.device("cuda")``)."""
    text = string_value(node)
    if text is None and type(node) is cst.Call and node.args and node.args[0].keyword is None:
        name = dotted_name(node.func) or ""
        if name in ("torch.device", "device") and len(node.args) == 1:
            text = string_value(node.args[0].value)
    return text


def _count(operator: cst.BaseCompOp, right_node: cst.BaseExpression, left: Value) -> Value | None:
    """``device_count() > 0``, ``len(visible) == 0``: a count of devices against a number."""
    if left.kind is not Kind.GUARD:
        return None
    number = int(right_node.evaluated_value) if type(right_node) is cst.Integer else None
    if isinstance(operator, cst.GreaterThan) or (
        isinstance(operator, cst.GreaterThanEqual) and number != 0
    ):
        return left
    if isinstance(operator, cst.NotEqual | cst.IsNot) and number == 0:
        return left
    if (isinstance(operator, cst.Equal) and number == 0) or isinstance(operator, cst.LessThan):
        return negate(left)
    return None


def catches_device_errors(handler: cst.ExceptHandler | cst.ExceptStarHandler) -> bool:
    """A handler for the errors that CUDA placement raises where CUDA is absent: the
    ``AssertionError`` of a build without CUDA (macOS, CPU wheels) included, which a bare
    ``except RuntimeError`` (a CUDA build on a machine without a GPU) lets through."""
    if handler.type is None:
        return True
    types = (
        [element.value for element in handler.type.elements]
        if isinstance(handler.type, cst.Tuple)
        else [handler.type]
    )
    names = {dotted_name(t) for t in types}
    return bool(names & {"AssertionError", "Exception", "BaseException"})


MAX_PROBE_STATEMENTS = 3


def probes_for_cuda(node: cst.Try | cst.TryStar) -> bool:
    """``try: torch.tensor(0, device="cuda") except (RuntimeError, AssertionError): ...``:
    a short body whose failure the handler absorbs probes for CUDA and handles its absence.
    A long body under ``except Exception`` (a per-item processing loop that skips bad
    items, taming-transformers) is no probe: the work itself fails without CUDA."""
    body = node.body
    short = type(body) is cst.SimpleStatementSuite or (
        len(body.body) <= MAX_PROBE_STATEMENTS and not _has_loop(body)
    )
    return short and any(
        catches_device_errors(handler) and not _raises_again(handler) for handler in node.handlers
    )


def _has_loop(body: cst.BaseSuite) -> bool:
    """A loop in the block (a whole training loop under ``try:``, melgan's ``train``)."""
    return any(type(node) in (cst.For, cst.While) for node in own_nodes(body))


def _raises_again(handler: cst.ExceptHandler | cst.ExceptStarHandler) -> bool:
    """``except Exception as err: log(err); raise``: the handler ends by raising, so the
    failure still stops the program (axolotl's model loader)."""
    last: cst.CSTNode = handler.body.body[-1]
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1]
    return isinstance(last, cst.Raise)


def flag_test(test: cst.BaseExpression) -> tuple[str, int] | None:
    """``(key, +1)`` for ``if flag:`` / ``if args.cuda:``, ``(key, -1)`` for ``if not flag:``:
    a test of one name's truth, whatever it holds (a user's option, an availability test);
    so for a name's comparison with a string (``device != "cpu"``: ``device == 'cpu'``, -1),
    which a later ``if device == "cpu":`` repeats (flower's MOON helpers)."""
    polarity = +1
    while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test, polarity = test.expression, -polarity
    if type(test) is cst.Comparison:
        compared = _string_comparison(test)
        if compared is None:
            return None
        return compared[0], polarity if compared[1] else -polarity
    if type(test) is not cst.Name and type(test) is not cst.Attribute:
        return None
    name = dotted_name(test)
    return (name, polarity) if name is not None else None


def _string_comparison(test: cst.Comparison) -> tuple[str, bool] | None:
    """``name == "cpu"`` (either way round) as ``("name == 'cpu'", True)``; ``!=`` as False."""
    if len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    if type(target.operator) not in (cst.Equal, cst.NotEqual):
        return None
    for side, other in ((test.left, target.comparator), (target.comparator, test.left)):
        name = dotted_name(side) if type(side) in (cst.Name, cst.Attribute) else None
        literal = string_value(other) if type(other) is cst.SimpleString else None
        if name is not None and literal is not None:
            return f"{name} == {literal!r}", type(target.operator) is cst.Equal
    return None


def available_or_cpu(test: cst.BaseExpression, values: dict[int, Value]) -> str | None:
    """``name`` for ``torch.cuda.is_available() or name == "cpu"``: where the test holds,
    ``name`` is either usable (CUDA is there) or not CUDA at all, so a CUDA default it
    holds is used only where CUDA is available."""
    if type(test) is not cst.BooleanOperation or type(test.operator) is not cst.Or:
        return None
    for check, other in ((test.left, test.right), (test.right, test.left)):
        tested = placement_test(other)
        if (
            tested is not None
            and tested[1:] == ("cpu", +1)
            and is_cuda_guard(values.get(id(check), Value()), +1)
        ):
            return tested[0]
    return None


def cuda_ids_test(test: cst.BaseExpression) -> int:
    """``device_ids is not None`` (+1) / ``is None`` (-1): DDP's device ids are CUDA devices."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return 0
    comparison = test.comparisons[0]
    sides = (dotted_name(test.left), dotted_name(comparison.comparator))
    if "None" not in sides or not any(
        side and side.rsplit(".", 1)[-1] == "device_ids" for side in sides
    ):
        return 0
    if isinstance(comparison.operator, cst.IsNot):
        return +1
    return -1 if isinstance(comparison.operator, cst.Is) else 0


def is_exit_call(expr: cst.BaseExpression) -> bool:
    """``sys.exit()``, ``pytest.skip()``...: the program or test ends here."""
    if type(expr) is not cst.Call:
        return False
    name = dotted_name(expr.func)
    return name is not None and name in torch_api.EXIT_CALLS


def exits_without_cuda(statement: cst.If, test: Value) -> bool:
    """An ``if`` past which CUDA is available (``test``: its test's value): ``if not
    cuda: return``, or ``if cuda: ... else: warn; return`` (FastVideo's offload hook,
    eval/blind122)."""
    if is_cuda_guard(test, -1) and always_exits(statement.body):
        return True
    orelse = statement.orelse
    return type(orelse) is cst.Else and is_cuda_guard(test, +1) and always_exits(orelse.body)


def always_exits(body: cst.BaseSuite) -> bool:
    """A block that never falls through (its last statement leaves, on every path)."""
    statements = body.body
    if not statements:
        return False
    last: cst.CSTNode = statements[-1]
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1]
    if isinstance(last, cst.Return | cst.Raise | cst.Continue | cst.Break):
        return True
    if isinstance(last, cst.Expr):
        return is_exit_call(last.value)
    if isinstance(last, cst.If) and last.orelse is not None:
        orelse = last.orelse
        other = orelse.body if isinstance(orelse, cst.Else) else cst.IndentedBlock(body=[orelse])
        return always_exits(last.body) and always_exits(other)
    return False


def refusal_names_cuda(statement: cst.BaseStatement) -> bool:
    """``if not cuda: raise/return ...`` whose body says, in a string, that CUDA is needed
    (an ``if`` with no other branch: one that goes on with ``elif``/``else`` chooses)."""
    return (
        type(statement) is cst.If
        and statement.orelse is None
        and any(
            name_guesses.message_names_cuda(string.value) for string in strings_in(statement.body)
        )
    )


def placement_test(test: cst.BaseExpression) -> tuple[str, str, int] | None:
    """``(name, device, +1)`` when ``test`` being truthy means ``name`` is on ``device``
    (-1: falsy means it). ``name`` is a tensor or module (``x.is_cuda``, ``x.is_cpu``,
    ``x.device.type == "cpu"``, ``str(x.device) != "cuda"``) or a device variable
    (``device.type == "cuda"``, ``device == torch.device("cpu")``). Both branches refine:
    the interpreter narrows ``name`` to ``device`` in one and removes ``device`` in the other.
    """
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        inner = placement_test(test.expression)
        return (inner[0], inner[1], -inner[2]) if inner is not None else None
    if type(test) is cst.Attribute and test.attr.value in _IS_DEVICE:
        name = dotted_name(test.value)
        return (name, _IS_DEVICE[test.attr.value], +1) if name is not None else None
    tested = cuda_type_test(test)
    if tested is not None:
        name = dotted_name(tested)
        return (name, "cuda", +1) if name is not None else None
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    comparison = test.comparisons[0]
    if type(comparison.operator) in (cst.Equal, cst.Is):
        polarity = +1
    elif type(comparison.operator) in (cst.NotEqual, cst.IsNot):
        polarity = -1
    else:
        return None
    typed = _tensor_type_test(test.left, comparison.comparator)
    name = dotted_name(typed[0]) if typed is not None else None
    if typed is not None and name is not None:
        return name, typed[1], polarity
    for side, other in ((test.left, comparison.comparator), (comparison.comparator, test.left)):
        device = _named_device(other)
        name = _device_holder(side) if device is not None else None
        if device is not None and name is not None:
            return name, device, polarity
    return None


_IS_DEVICE = {"is_cpu": "cpu", "is_cuda": "cuda", "is_mps": "mps"}


def names_cuda(test: cst.BaseExpression) -> str | None:
    """``name`` when ``test`` holds where the device ``name`` holds names CUDA:
    ``name == "cuda"``, ``"cuda" in name``, ``name.startswith("cuda")`` (also of
    ``str(name)``; ``.__contains__("cuda")`` too: DBNet's ``predict.py``)."""
    tested = placement_test(test)
    if tested is not None:
        return tested[0] if tested[1:] == ("cuda", +1) else None
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        comparison = test.comparisons[0]
        if type(comparison.operator) is cst.In and string_value(test.left) == "cuda":
            return _device_holder(comparison.comparator)
        return None
    if (
        type(test) is cst.Call
        and type(test.func) is cst.Attribute
        and test.func.attr.value in ("startswith", "__contains__")
        and len(test.args) == 1
        and string_value(test.args[0].value) == "cuda"
    ):
        return _device_holder(test.func.value)
    return None


def cuda_type_test(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """``x`` when ``test`` is ``isinstance(x, torch.cuda.FloatTensor)`` (``x.data`` read as
    ``x``): true only of a CUDA tensor, like ``x.is_cuda``."""
    if type(test) is not cst.Call or dotted_name(test.func) != "isinstance" or len(test.args) != 2:
        return None
    kind = (dotted_name(test.args[1].value) or "").split(".")[-2:]
    if len(kind) != 2 or kind[0] != "cuda" or kind[1] not in torch_api.LEGACY_TENSOR_TYPES:
        return None
    tested = test.args[0].value
    while type(tested) is cst.Attribute and tested.attr.value in torch_api.TENSOR_VIEW_ATTRIBUTES:
        tested = tested.value
    return tested


def _named_device(expr: cst.BaseExpression) -> str | None:
    """``"cpu"``, ``"cuda"``, ``torch.device("mps")`` (``.type`` too): the device kind named."""
    if type(expr) is cst.Attribute and expr.attr.value == "type":
        expr = expr.value
    if (
        type(expr) is cst.Call
        and expr.args
        and name_guesses.names_device_constructor(dotted_name(expr.func) or "")
    ):
        expr = expr.args[0].value
    text = string_value(expr)
    return text if text in ("cpu", "cuda", "mps") else None


def _device_holder(side: cst.BaseExpression) -> str | None:
    """The name whose device ``side`` reads: ``x`` in ``str(x.device)``, ``x.device.type``;
    ``device`` in ``device.type`` or ``device`` itself."""
    if type(side) is cst.Call and dotted_name(side.func) == "str" and side.args:
        side = side.args[0].value
    if type(side) is cst.Attribute and side.attr.value == "type":
        side = side.value
    if type(side) is cst.Attribute and side.attr.value == "device":
        side = side.value
    return dotted_name(side)


def tested_where_absent(backends: frozenset[str], test: Value, side: int) -> frozenset[str]:
    """The backends tested, on the side of an ``if`` (+1: its body) where the test of a
    backend says it is absent: the ``else`` of any test, the body of one that points the
    other way (``if not torch.backends.mps.is_available():``, ``if sys.platform !=
    "darwin":``). A choice made there has considered that backend (DEV004)."""
    if test.kind is not Kind.GUARD or not test.qualname:
        return backends
    if side < 0 or test.polarity < 0:
        return backends | {test.qualname}
    return backends
