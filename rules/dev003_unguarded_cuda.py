from collections.abc import Iterable, Iterator
from dataclasses import replace

import libcst as cst

from devlint import device_errors
from devlint.analysis.facts import (
    DISTRIBUTED_WRAPPERS,
    CallRecord,
    FileFacts,
    encloses,
    forwards_placement,
    placements,
)
from devlint.analysis.values import Kind, Step, Value, is_index, may_be_placed
from devlint.codemod import method_one_blocks
from devlint.rule import DEVICE, Finding, FixPlan, Replace, Rule, literal_text, source_of

FIXABLE = frozenset({"cuda", "cuda:0"})
TORCH_CUDA_KEYWORDS = frozenset({"device", "non_blocking", "memory_format"})
DEFAULT_MESSAGE = 'Device `"cuda"` is used for placement without a CUDA availability check'
DEVICE_MESSAGE = '`torch.device("cuda")` without a CUDA availability check'
INDEX_FIX = "Keep the index where CUDA is available"
# Where an index names no CUDA device: the next choice as a device string.
NOT_CUDA = '"mps" if {torch}.backends.mps.is_available() else "cpu"'
OWN_CUDA_MESSAGE = (
    "`.cuda()` of an object that moves its tensors to CUDA, without a CUDA availability check"
)


class UnguardedCuda(Rule):
    """
    ## What it does
    Checks for placement on CUDA (`.cuda()`, `.to("cuda")`, `device="cuda"`,
    `torch.device("cuda")`, `map_location="cuda"`) that runs whether or not CUDA is
    available: outside every availability guard (`if torch.cuda.is_available():`,
    `device.type == "cuda"`, an `assert`, an early `return`, `pytest.mark.skipif`, ...).
    An integer device (`.to(rank)`, `device=0`, `torch.device(local_rank)`) is not one of
    these forms and is not reported: since torch 2.5 an index names the current
    accelerator, CUDA's or MPS's, and the DDP scripts that place by rank choose their
    backend elsewhere.

    A CUDA device written once and placed with later (`device = "cuda"`, `device =
    torch.device("cuda")`, a parameter default `device="cuda"`, an argparse `--device`
    default, `"cuda" if args.cuda else "cpu"`) is reported once, where it is written, and
    only if it reaches a placement or is handed on (stored on an object, passed to a
    call) outside every guard: one never used, used only where CUDA is available, or
    replaced by the CPU under `if not torch.cuda.is_available():` is not. An object of
    a class in the file whose own `cuda()` moves its tensors (`sampler.cuda()`) places
    them too; a class whose `cuda()` moves nothing does not. A CUDA device kept as data
    (`types.SimpleNamespace(device="cuda")`, `dict(device="cuda")`, a class of the file
    that only stores it) or given only to a torch API that places nothing
    (`torch.cuda.set_device(device)`, `dist.init_process_group(device_id=device)`) is
    not a placement; one a class of the file places with is reported where it is written.

    ## Why is this bad?
    On a machine without an NVIDIA GPU, such as a laptop, a CI runner or an Apple Silicon
    Mac, the first placement raises `AssertionError: Torch not compiled with CUDA enabled`
    (CPU-only builds) or `RuntimeError: Found no NVIDIA driver` / `No CUDA GPUs are
    available`. The code only runs where its author ran it.

    ## Example
    ```python
    model = Net().cuda()
    inputs = torch.zeros(8, 3, device="cuda")
    ```

    ## Use instead
    Choose the device once, then place everything with it:
    ```python
    device = torch.device(
        "cuda" if torch.cuda.is_available()
        else "mps" if torch.backends.mps.is_available()
        else "cpu"
    )
    model = Net().to(device)
    inputs = torch.zeros(8, 3, device=device)
    ```

    ## Fix safety
    The rewrite to `.to(device)` / `device=device` is safe: on CUDA machines it places
    everything exactly as before, and elsewhere the code runs instead of crashing. The
    device is the variable already in scope (a module-level device, a `device`
    parameter, `self.device`), else one selection (`accelerator-api`) is added after
    the imports. `torch.device("cuda")` becomes the selection itself. `.cuda(0)` / `"cuda:0"` are
    treated as `"cuda"`; `.cuda(1)`, `.cuda(rank)`, `"cuda:1"` and `torch.device("cuda",
    rank)` name one GPU of several and get no fix. An index in a CUDA device
    (`f"cuda:{rank}"`, a `storage.cuda(dev)` `map_location` lambda) is kept where CUDA is
    available (`rank if torch.cuda.is_available() else "mps" if ... else "cpu"`; the same
    fix passes `device_ids=[rank] if torch.cuda.is_available() else None` to
    `DistributedDataParallel`, which refuses them for a module elsewhere): unsafe, since a
    process group or a per-GPU setting chosen for CUDA may need another choice on MPS or
    the CPU (the lambda becomes the device in scope, dropping its index). A value keeps its type: a device
    string (`device = "cuda"`, a `--device` default, compared with strings, tested with
    `"cuda" in device`, overridden by a configurator that checks types) becomes the same
    choice as a string, `"cuda" if torch.cuda.is_available() else "mps" if
    torch.backends.mps.is_available() else "cpu"`.

    The file is converted as a whole: `if torch.cuda.is_available():` blocks that move
    things with `.cuda()` ("method one", DEV016) are folded into `.to(device)` moves by
    the same fix, so nothing stays on the CPU where the new selection picks MPS. Where
    such code cannot be folded (the block does more than move, or it is a conditional
    expression), the fix is unsafe.
    """

    code = "DEV003"
    name = "unguarded-cuda"
    summary = "CUDA placement without a CUDA availability check"
    fix = "safe"
    virtual_note = "CUDA is present on virtual CUDA; on virtual MPS `.cuda()` fails as on a Mac"
    runtime_errors = (device_errors.NO_CUDA,)

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        findings = list(_with_device_ids(self._findings(facts), facts))
        if not any(finding.fix for finding in findings):
            yield from findings
            return
        blocks = method_one_blocks(facts)
        folds = [fold for _, fold in blocks]
        for finding in findings:
            if finding.fix is None or not blocks:
                yield finding
            elif all(folds):  # fold them with the fix: the file ends on one device
                edits = finding.fix.edits + tuple(e for fold in folds if fold for e in fold.edits)
                message = f"{finding.fix.message}, and fold the CUDA-only `if` blocks"
                yield replace(finding, fix=replace(finding.fix, message=message, edits=edits))
            else:  # what stays behind would stay on the CPU where the fix picks MPS
                fix = replace(finding.fix, applicability="unsafe")
                yield replace(finding, fix=fix)

    def _findings(self, facts: FileFacts) -> Iterator[Finding]:
        defaults: dict[int, cst.BaseExpression] = {}  # CUDA defaults that reach a placement
        reached: dict[int, list[Step]] = {}  # the placements each default reaches
        direct: set[int] = set()  # literals reported where they are placed
        mappers = _storage_mappers(facts)
        for call in facts.calls:
            if call.site.guarded or forwards_placement(call):
                continue
            for finding, literal in self._placements(call, facts, mappers):
                if finding is not None:
                    direct.add(id(literal))
                    yield finding
                elif literal is not None:
                    defaults.setdefault(id(literal), literal)
                    reached.setdefault(id(literal), []).append(
                        Step(call.node, "reaches this placement")
                    )
        for key, device_call in facts.read_defaults.items():
            defaults.setdefault(key, device_call)  # handed on outside every guard: in use
            reached.setdefault(key, [])
        for key, literal in defaults.items():
            if key in direct:
                continue
            if isinstance(literal, cst.Call):  # ``device = torch.device("cuda")``
                yield Finding(literal, DEVICE_MESSAGE, _device_fix(literal), tuple(reached[key]))
                continue
            yield Finding(
                literal, DEFAULT_MESSAGE, _default_fix(literal, facts), tuple(reached[key])
            )

    def _placements(
        self, call: CallRecord, facts: FileFacts, mappers: dict[int, FixPlan]
    ) -> Iterator[tuple[Finding | None, cst.BaseExpression | None]]:
        """Each CUDA placement of one call: a finding where a literal is placed directly,
        or (None, literal) for a CUDA default that reaches it through a name. A device
        passed on to one of this file's functions is placed (or not) in its body."""
        node = call.node
        passes_to_local_function = facts.value_of(node.func).kind in (Kind.FUNCTION, Kind.CLASS)
        if call.method == "cuda" and call.receiver is not None:
            if may_be_placed(call.receiver) and _is_torch_cuda_signature(call):
                fix = _to(node) or mappers.get(id(node))
                yield Finding(node, "`.cuda()` without a CUDA availability check", fix), None
            elif _moves_own_tensors(call, facts):
                yield Finding(node, OWN_CUDA_MESSAGE), None
            return
        # a device handed to one of this file's functions is placed (or not) in its body
        placed = [
            placement
            for placement in placements(call, facts.values)
            if placement[2] == "to" or not passes_to_local_function
        ]
        # a project function's parameter that places with what it is given: no fix (it may
        # expect a string), and the literal stays what it says
        handed = facts.handed_placements.get(id(node), ())
        for index, (expression, value, how) in enumerate((*placed, *handed)):
            fixable = index < len(placed)
            if not _cuda_literal(value):
                continue
            if not any(default is expression for default in value.cuda_defaults):
                # ``torch.device(name)`` converts; the result carries the defaults to
                # wherever it is placed (a helper that validates it places nothing).
                converts = how == "torch.device" and isinstance(
                    expression, cst.Name | cst.Attribute | cst.Subscript
                )
                if not passes_to_local_function and not converts:
                    for default in value.cuda_defaults:
                        if encloses(expression, default):  # ``device="cuda" if n else "cpu"``
                            fix = _default_fix(default, facts)
                            step = (Step(default, "the CUDA device named here"),)
                            yield Finding(node, _message(how), fix, step), default
                        else:
                            yield None, default
            elif how == "to":
                yield (
                    Finding(node, _message(how), _replace_literal(expression, "{device}")),
                    expression,
                )
            else:
                message = _message(how)
                fix = _replace_literal(expression, "{device}") if fixable else None
                if isinstance(expression, cst.Call):  # ``device=torch.device("cuda")``
                    yield Finding(expression, message, fix), expression
                else:
                    yield Finding(node, message, fix, _keyword_step(node, expression)), expression


def _message(how: str) -> str:
    """What a placement with a CUDA literal, made ``how`` (``"to"`` or a keyword), says."""
    placed = '`.to("cuda")`' if how == "to" else f'`{how}="cuda"`'
    return f"{placed} without a CUDA availability check"


def _default_fix(literal: cst.BaseExpression, facts: FileFacts) -> FixPlan | None:
    """The fix of a CUDA literal that reaches a placement as part of a value: the
    selected device in its place, where a device definition names it (or an index)."""
    if id(literal) in facts.definition_literals or _indexed(literal):
        return _replace_literal(literal, "{selection_str}")
    return None


def _keyword_step(call: cst.Call, value: cst.BaseExpression) -> tuple[Step, ...]:
    """The keyword argument that places a call's result, as its related location: the
    finding is the call's (``torch.zeros(..., device="cuda")``)."""
    arg = next((a for a in call.args if a.value is value), None)  # else a dict's entry
    return (Step(arg or value, "placed on CUDA here"),)


def _with_device_ids(findings: Iterable[Finding], facts: FileFacts) -> Iterator[Finding]:
    """Each index fix also passes ``device_ids=None`` where CUDA is absent to the file's
    ``DistributedDataParallel(model, device_ids=[rank])`` (refused for a module on the CPU
    or MPS); ``device_ids`` is not a placement, so it is not reported on its own."""
    edits = tuple(edit for call in facts.calls for edit in _device_ids(call, facts))
    for finding in findings:
        if edits and finding.fix is not None and finding.fix.message == INDEX_FIX:
            finding = replace(finding, fix=replace(finding.fix, edits=finding.fix.edits + edits))
        yield finding


def _device_ids(call: CallRecord, facts: FileFacts) -> Iterator[Replace]:
    """``DDP(model, device_ids=[rank], output_device=rank)`` outside every guard: both
    become ``None`` where CUDA is absent."""
    if call.callee not in DISTRIBUTED_WRAPPERS or call.site.guarded:
        return
    indices = {
        arg.keyword.value: arg
        for arg in call.node.args
        if arg.keyword is not None and arg.keyword.value in ("device_ids", "output_device")
    }
    listed = indices.get("device_ids")
    if listed is None or not isinstance(listed.value, cst.List | cst.Tuple):
        return
    elements = [element.value for element in listed.value.elements]
    if elements and all(is_index(facts.value_of(element)) for element in elements):
        for arg in indices.values():
            yield Replace(arg.value, _if_cuda(arg.value, "None"))


def _if_cuda(index: cst.BaseExpression, otherwise: str) -> str:
    """``index if torch.cuda.is_available() else <otherwise>``, as a ``Replace`` text."""
    return f"{literal_text(source_of(index))} if {{torch}}.cuda.is_available() else {otherwise}"


def _storage_mappers(facts: FileFacts) -> dict[int, FixPlan]:
    """``torch.load(f, map_location=lambda storage, loc: storage.cuda(dev))``: the lambda's
    ``.cuda(...)`` call, and a fix that loads onto the device in scope instead (unsafe: it
    drops the index the lambda chose)."""
    mappers: dict[int, FixPlan] = {}
    for call in facts.calls:
        argument = next(
            (a.value for a in call.node.args if a.keyword and a.keyword.value == "map_location"),
            None,
        )
        if call.callee != "torch.load" or not isinstance(argument, cst.Lambda):
            continue
        params = argument.params.params
        body = argument.body
        if (
            params
            and isinstance(body, cst.Call)
            and isinstance(body.func, cst.Attribute)
            and body.func.attr.value == "cuda"
            and isinstance(body.func.value, cst.Name)
            and body.func.value.value == params[0].name.value
        ):
            edit = Replace(argument, "{device}")
            mappers[id(body)] = FixPlan("Load onto the selected device", (edit,), "unsafe")
    return mappers


def _to(call: cst.Call) -> FixPlan | None:
    """``x.cuda(non_blocking=True)`` -> ``x.to(device, non_blocking=True)``; not ``.cuda(1)``.

    ``.cuda(0)`` and ``"cuda:0"`` are fixed like ``.cuda()``: on a machine with one GPU
    (and by default on others) they are the same device.
    """
    func, args = call.func, list(call.args)
    if args and args[0].keyword is None and _is_zero(args[0].value):
        args = args[1:]  # GPU 0 is what "cuda" means unless the program chose another
    if not isinstance(func, cst.Attribute) or any(
        arg.keyword is None or arg.keyword.value == "device" for arg in args
    ):
        return None
    first = cst.Arg(DEVICE, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    moved = call.with_changes(
        func=func.with_changes(attr=cst.Name("to")),
        args=[first, *args] if args else [cst.Arg(DEVICE)],
    )
    return FixPlan("Use `.to(device)`", (Replace(call, moved),))


def _is_zero(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Integer) and node.evaluated_value == 0


def _device_fix(call: cst.Call) -> FixPlan | None:
    """``torch.device("cuda")`` -> the selection (a ``torch.device`` still); none for
    ``torch.device("cuda", rank)``, one GPU of several."""
    literal = call.args[0].value
    one_gpu = all(_is_zero(arg.value) for arg in call.args[1:])
    return _replace_literal(literal, "{selection}", call) if one_gpu else None


def _replace_literal(
    literal: cst.BaseExpression, text: str, node: cst.CSTNode | None = None
) -> FixPlan | None:
    """Replace ``"cuda"`` (or ``node``, the call around it) with the device in scope; an
    indexed ``f"cuda:{rank}"`` is kept where CUDA is available (unsafe, as an index)."""
    if _indexed(literal):
        edit = Replace(literal, _if_cuda(literal, NOT_CUDA))
        return FixPlan(INDEX_FIX, (edit,), "unsafe")
    if not isinstance(literal, cst.SimpleString) or literal.evaluated_value not in FIXABLE:
        return None  # "cuda:1" names one GPU of several: the user decides
    if text in ("{selection}", "{selection_str}"):
        return FixPlan("Select the device that is available", (Replace(node or literal, text),))
    return FixPlan("Use the selected device", (Replace(literal, text),))


def _indexed(literal: cst.BaseExpression) -> bool:
    """``f"cuda:{rank}"``: CUDA's device of one index."""
    if not isinstance(literal, cst.FormattedString) or len(literal.parts) != 2:
        return False
    head, index = literal.parts
    return (
        isinstance(head, cst.FormattedStringText)
        and head.value == "cuda:"
        and isinstance(index, cst.FormattedStringExpression)
        and index.format_spec is None
    )


def _cuda_literal(value: Value) -> bool:
    """A device that may be a ``"cuda"`` literal written where CUDA may be absent."""
    return (
        value.kind is Kind.DEVICE
        and bool(value.cuda_defaults)
        and value.where is not None
        and "cuda" in value.where
    )


def _moves_own_tensors(call: CallRecord, facts: FileFacts) -> bool:
    """``memory.cuda()`` of an object whose class (in this file) defines a ``cuda()`` that
    moves its tensors: no ``.to(device)`` to write for it (no fix)."""
    receiver = call.receiver
    return (
        receiver is not None
        and receiver.kind is Kind.INSTANCE
        and receiver.qualname is not None
        and not call.args
        and _own_cuda_method_moves(facts, receiver.qualname)
    )


def _own_cuda_method_moves(facts: FileFacts, class_name: str) -> bool:
    """Whether this file's class ``class_name`` has a ``cuda()`` method of its own that
    moves tensors to CUDA (RepDistiller's ``AliasMethod.cuda``): calling it places them,
    as ``tensor.cuda()`` would."""
    return any(
        call.site.class_name == class_name
        and call.site.function is not None
        and call.site.function.name.value == "cuda"
        and facts.moves_to_cuda(call.node)
        for call in facts.calls
    )


def _is_torch_cuda_signature(call: CallRecord) -> bool:
    """``Tensor.cuda(device=None, non_blocking=False, memory_format=...)``: not another API
    (``utils.cuda(torch.rand(n))``, a helper of the project's that is given the tensor)."""
    placed = (Kind.TENSOR, Kind.MODULE, Kind.LOADER)
    return (
        len(call.args) <= 2
        and set(call.keywords) <= TORCH_CUDA_KEYWORDS
        and not (call.args and call.args[0].kind in placed)
    )
