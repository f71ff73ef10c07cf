from collections.abc import Iterator, Sequence
from dataclasses import replace

import libcst as cst

from devlint.analysis.facts import (
    CPU_DEVICE_INDEX,
    Conditional,
    FileFacts,
    mps_note,
)
from devlint.analysis.values import CPU, CUDA, Kind, Placement, Step, Value, may_be_placed
from devlint.codemod import (
    else_is_body_on_cpu,
    fold_method_one,
    mps_variant,
    only_moves_to_cuda,
    statement_lines,
)
from devlint.rule import BLOCK_INDENT, Finding, FixPlan, Replace, Rule, literal_text, source_of

MESSAGE = "Device choice falls back from CUDA straight to CPU, skipping Apple's MPS"
TYPE_MESSAGE = (
    "Tensor type choice falls back from CUDA straight to CPU, skipping Apple's MPS "
    "(legacy tensor types have no MPS variant: choose a device, create tensors on it)"
)
THREE_WAY = "Try MPS before falling back to the CPU"


class CudaWithoutMpsFallback(Rule):
    """
    ## What it does
    Checks for a device choice that tries CUDA and falls back straight to the CPU:
    `"cuda" if torch.cuda.is_available() else "cpu"` (also inside `torch.device(...)`),
    the same as an `if`/`else` statement, a CPU default that only CUDA overrides
    (`device = "cpu"`, then `if torch.cuda.is_available(): device = "cuda"`, with or
    without an `else` that only logs), or a helper function that returns
    `torch.device("cuda")` when CUDA is available and `torch.device("cpu")` otherwise.

    A choice between legacy tensor types (`torch.cuda.FloatTensor if cuda else
    torch.FloatTensor`, through which old scripts make every tensor) is one too; it has
    no fix, since there is no MPS tensor type: choose a device and create tensors on it.
    So are device indices chosen for libraries that take them (`device = 0 if
    torch.cuda.is_available() else -1` for `transformers.pipeline` or torchtext, where -1
    is the CPU), a trainer's accelerator named as Lightning and composer name CUDA
    (`Trainer(accelerator="gpu" if torch.cuda.is_available() else "cpu")`, where
    `"mps"` is the missing choice), an `if`/`else` that moves a model to CUDA or back to the CPU
    (`model.cuda()` / `model.cpu()`; its fix folds both into one `.to(device)`), and an
    `if`/`else` whose `else` is its body without the `.cuda()` calls, the same
    computation on the CPU (`w = torch.ones(n).cuda() * a` / `w = torch.ones(n) * a`;
    one that only moves, `v = Variable(x.cuda())` / `v = Variable(x)`, is method one);
    the indices, types and computations have no fix.

    A choice made by the user's own option alone (`"cuda" if args.cuda else "cpu"`, no
    availability test) tries nothing and falls back from nothing: it is the user's; its
    hard-coded `"cuda"` is DEV003's. Combined with an availability test
    (`not args.no_cuda and torch.cuda.is_available()`) it is a choice, and the fix gates
    MPS by the same option.

    So is `x.cuda() if torch.cuda.is_available() else x`, a conditional expression that
    moves `x` to CUDA or leaves it on the CPU; its fix tries MPS in between
    (`x.cuda() if ... else x.to("mps") if torch.backends.mps.is_available() else x`). A
    statement that moves to CUDA or does nothing (the tutorials' "method one", `if
    torch.cuda.is_available(): model = model.cuda()`) chooses no device: that is DEV016,
    off by default.

    ## Why is this bad?
    On an Apple Silicon Mac the model silently trains on the CPU, often ten times slower
    than on the GPU it has. Nothing fails; the run is just slow.

    ## Example
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ```

    ## Use instead
    ```python
    device = torch.device(
        "cuda" if torch.cuda.is_available()
        else "mps" if torch.backends.mps.is_available()
        else "cpu"
    )
    ```
    or, with PyTorch 2.6 and later:
    ```python
    device = (
        torch.accelerator.current_accelerator()
        if torch.accelerator.is_available() else torch.device("cpu")
    )
    ```

    ## Fix safety
    Both fixes are unsafe: on a Mac the code then runs on MPS, where some operators are
    missing or behave differently. The fix's help names the operators of the file that
    have no MPS kernel in `target-torch` or fall back to the CPU there (DEV019's table). A device choice gains an MPS branch
    (`... else "mps" if torch.backends.mps.is_available() else "cpu"`, or an `elif`).
    `x.cuda() if ... else x` becomes `x.to(device)`, with one device selection after the
    imports ("method two").
    """

    code = "DEV004"
    name = "cuda-without-mps-fallback"
    summary = "A device choice that tries CUDA, then CPU, and never MPS"
    fix = "unsafe"
    virtual_note = "the availability APIs answer as on that machine; the program prints its choice"

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        note: str | None = None  # the operators MPS lacks in this file (DEV019's table)
        for conditional in facts.conditionals:
            test = conditional.test
            if test.kind is not Kind.GUARD or test.qualname != "cuda" or not test.polarity:
                continue  # a user's option (``"cuda" if args.cuda else "cpu"``) tries nothing
            if test.classifies or conditional.enclosing_backends - {"cuda", "cpu"}:
                # ``device.type == "cuda"`` classifies a device already chosen; the ``else``
                # of another backend's test has considered it (the CPU is no backend: the
                # ``else`` of ``if args.device == "cpu":`` still chooses, eval/blind118)
                continue
            node = conditional.node
            when_true, when_false = _branches(conditional, facts)
            if test.polarity < 0:
                when_true, when_false = when_false, when_true
            if when_true == CUDA and when_false == CPU and not _mps_later(conditional, facts):
                related = (*test.placed, *_fallback(conditional))
                if _chooses_tensor_types(node, facts):
                    yield Finding(node, TYPE_MESSAGE, related=related)
                    continue
                fix = _add_mps(conditional, _gate(conditional)) if test.polarity > 0 else None
                if fix is None and isinstance(node, cst.If) and only_moves_to_cuda(node, facts):
                    # moves, or moves back: one ``.to(device)`` (not over the ``else``'s
                    # comments, which the fold has no line for)
                    fix = None if _else_has_comments(node) else fold_method_one(node)
                if fix is not None:
                    note = mps_note(facts, self.settings.target_torch) if note is None else note
                    fix = replace(fix, message=fix.message + note)
                yield Finding(node, MESSAGE, fix, related)


def _fallback(conditional: Conditional) -> tuple[Step, ...]:
    """Where the choice falls back to the CPU (the ``else``, or the body of a negated
    test): the proof's last step."""
    node, negated = conditional.node, conditional.test.polarity < 0
    taken: cst.CSTNode | None
    if isinstance(node, cst.IfExp):
        taken = node.body if negated else node.orelse
    elif negated:
        taken = _first(node.body)
    elif isinstance(node.orelse, cst.Else):
        taken = _first(node.orelse.body)
    elif node.orelse is not None:
        taken = node.orelse
    elif (overridden := _overridden(conditional)) is not None:  # ``device = "cpu"``, ``if``
        taken = overridden
    else:  # ``if avail: return "cuda"``, then ``return "cpu"``
        taken = conditional.next_statement if _returns(node.body.body) else None
    return (Step(taken, "falls back to the CPU here, without trying MPS"),) if taken else ()


def _first(suite: cst.BaseSuite) -> cst.CSTNode | None:
    body: Sequence[cst.CSTNode] = suite.body
    return body[0] if body else None


def _else_has_comments(node: cst.If) -> bool:
    orelse = node.orelse
    if orelse is None:
        return False
    return "#" in source_of(orelse)


def _gate(conditional: Conditional) -> str | None:
    """The user setting the choice depends on, to gate MPS by it too: the user's part of
    ``flag and torch.cuda.is_available()`` when it was written in the same function."""
    test = conditional.test
    if test.gate is not None and conditional.site is not None:
        setting, function = test.gate
        if function is conditional.site.function:
            return setting
    return None


def _add_mps(conditional: Conditional, gate: str | None) -> FixPlan | None:
    """Insert the MPS choice between the CUDA choice and the CPU fallback (gated by the
    user's setting when the choice depends on one)."""
    node = conditional.node
    mps_test = "{torch}.backends.mps.is_available()"
    if gate is not None:
        mps_test = f"{literal_text(gate)} and {mps_test}"
    if isinstance(node, cst.IfExp):
        mps = mps_variant(node.orelse)
        receiver = _moved_receiver(node)
        if mps is None and receiver is not None:  # ``x.to("mps") if ... else x``
            mps = literal_text(source_of(receiver)) + '.to("mps")'
        if mps is None:
            return None
        return FixPlan(THREE_WAY, (Replace(node.orelse, f"{mps} if {mps_test} else ", "before"),))
    overridden = _overridden(conditional)  # an ``else`` that keeps it only logs
    if overridden is not None:  # its comments are about it, not the new branch
        overridden = overridden.with_changes(leading_lines=())
    if isinstance(node.orelse, cst.Else) and isinstance(node.orelse.body, cst.IndentedBlock):
        fallback: Sequence[cst.BaseStatement] = (
            [overridden] if overridden is not None else node.orelse.body.body
        )
        anchor: cst.CSTNode = node.orelse
        keyword = "elif"
    elif overridden is not None:
        fallback, anchor, keyword = [overridden], node, "elif"
    elif conditional.next_statement is not None:
        fallback, anchor, keyword = [conditional.next_statement], conditional.next_statement, "if"
    else:
        return None
    # The MPS branch assigns what the fallback assigns; its messages (``print("No GPU,
    # using the CPU")``) would be wrong there.
    fallback = [line for line in fallback if not _is_bare_expression(line)] or fallback
    lines = statement_lines(fallback, rewrite=False)
    block = cst.IndentedBlock(body=fallback)
    variant = mps_variant(block) if lines is not None else None
    if variant is None:
        return None
    # The block's lines start with its indentation (``BLOCK_INDENT`` and one level): the
    # new branch's body is one level deeper than ``anchor``.
    level = BLOCK_INDENT + cst.Module(body=[]).default_indent
    body = [
        line.replace(level, "{indent}{tab}", 1)
        for line in variant.splitlines()
        if line.replace(BLOCK_INDENT, "").strip()
    ]
    text = f"{keyword} {mps_test}:" + "".join("{nl}" + line for line in body)
    if anchor is node:  # after the ``if``'s body: its ``elif``
        return FixPlan(THREE_WAY, (Replace(anchor, "{nl}{indent}" + text, "after"),))
    return FixPlan(THREE_WAY, (Replace(anchor, text + "{nl}{indent}", "before"),))


def _mps_later(conditional: Conditional, facts: FileFacts) -> bool:
    """The name the choice binds may hold MPS where its code ends: a later test picks MPS
    (``if torch.backends.mps.is_available(): device = "mps"``, in a ``try`` too)."""
    node = conditional.node
    if isinstance(node, cst.If):
        name = _assigned(node.body.body[-1]) if node.body.body else None
    else:
        name = conditional.binds
    function = conditional.site.function if conditional.site is not None else None
    return name is not None and _may_end_on_mps(facts, function, name)


def _may_end_on_mps(facts: FileFacts, function: cst.FunctionDef | None, name: str) -> bool:
    """Whether ``name``, assigned an MPS device in ``function`` (None: the module), may
    still hold it where that code ends: a CUDA-or-CPU choice that a later MPS test
    overrides (``if torch.backends.mps.is_available(): device = "mps"``)."""
    return (id(function) if function is not None else 0, name) in facts.mps_at_end


def _is_bare_expression(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, cst.Expr) for small in statement.body
    )


def _branches(conditional: Conditional, facts: FileFacts) -> tuple[Placement, Placement]:
    """The devices chosen when the test is true and when it is false."""
    node = conditional.node
    if isinstance(node, cst.IfExp):
        when_true, when_false = _device(facts, node.body), _device(facts, node.orelse)
        if when_true is None and when_false is None and _names_a_device(node, facts):
            # ``device = 0 if avail else -1``, ``pipeline(device=0 if avail else -1)``
            return _device_indices(facts.value_of(node.body), facts.value_of(node.orelse))
        if when_true == CUDA and when_false is None and _stays(node, facts):
            return CUDA, CPU  # ``x.cuda() if avail else x``: CUDA, or where x was
        if when_false is None and _moved_only_with_cuda(node, facts):
            return CUDA, CPU  # ``x.to(device) if torch.cuda.device_count() >= 1 else x``
        if when_true is None and _names_an_accelerator(node, facts):
            # ``Trainer(accelerator="gpu" if avail else "cpu")``: Lightning's and
            # composer's name for CUDA
            return _accelerator(facts.value_of(node.body)), when_false
        return when_true, when_false
    body = _chosen(facts, node.body.body)
    if isinstance(node.orelse, cst.Else):
        orelse = _chosen(facts, node.orelse.body.body)
        if body in (None, CUDA) and orelse is None and else_is_body_on_cpu(node, facts):
            return CUDA, CPU
        if body is None and orelse is None and only_moves_to_cuda(node, facts):
            return CUDA, CPU  # ``model.cuda()`` / ``else: model.cpu()``
        if orelse is None and (overridden := _overridden(conditional)) is not None:
            return body, _chosen(facts, [overridden])  # ``else: print("on the CPU")``
        return body, orelse
    if isinstance(node.orelse, cst.If):  # ``elif``: the device of the chain's end
        return body, _chain_end(facts, node.orelse)
    following = conditional.next_statement
    if node.orelse is None and following is not None and _returns(node.body.body):
        return body, _chosen(facts, [following])
    if (overridden := _overridden(conditional)) is not None:
        return body, _chosen(facts, [overridden])  # ``device = "cpu"``, ``if avail: ...``
    return body, None


def _chain_end(facts: FileFacts, node: cst.If) -> Placement:
    """The device an ``elif`` chain falls back to: its ``else``'s, when no branch before
    it tests or may choose MPS (``elif self.tpu: device = xla_device()``)."""
    chosen = _chosen(facts, node.body.body)
    test = facts.value_of(node.test)
    if (test.kind is Kind.GUARD and test.qualname != "cuda") or (chosen and "mps" in chosen):
        return None  # ``elif torch.backends.mps.is_available():``, or MPS chosen
    if chosen is None and _takes_a_device(facts, node.body.body):
        return None  # ``elif params: device = params[0].device``: wherever they are
    if isinstance(node.orelse, cst.If):
        return _chain_end(facts, node.orelse)
    return _chosen(facts, node.orelse.body.body) if node.orelse is not None else None


def _takes_a_device(facts: FileFacts, statements: Sequence[cst.CSTNode]) -> bool:
    """A branch whose last statement binds the device of a tensor it was given
    (``params[0].device``), of unknown placement: it may be MPS. A device named in the
    code (``torch.device("xla")``) is what it says."""
    last = statements[-1] if statements else None
    if not isinstance(last, cst.SimpleStatementLine):
        return False
    small = last.body[-1]
    value = small.value if isinstance(small, cst.Assign | cst.AnnAssign | cst.Return) else None
    if not isinstance(value, cst.Attribute) or value.attr.value != "device":
        return False
    taken = facts.value_of(value)
    return taken.kind is Kind.DEVICE and taken.where is None


def _overridden(conditional: Conditional) -> cst.BaseStatement | None:
    """The statement an ``if`` overrides: the nearest one before it that binds what its
    body rebinds (which may also log, or set CUDA's options: vall-e's ``allow_tf32``
    after ``device = torch.device("cuda", rank)``), with nothing between that mentions
    the name (``device = "cpu"``, ``use_cuda = True``, ``if use_cuda and
    torch.cuda.is_available(): device = "cuda:0"``; DeepCTR's examples). An ``else``
    that does not mention the name keeps it (PPO-PyTorch's ``else: print("Device set to
    : cpu")``, eval/blind161)."""
    node = conditional.node
    if not isinstance(node, cst.If) or isinstance(node.orelse, cst.If):
        return None
    rebound = {name for line in node.body.body if (name := _assigned(line)) is not None}
    if node.orelse is not None and not _only_logs(node.orelse, rebound):
        return None
    for statement in conditional.preceding:
        if _assigned(statement) in rebound:
            return statement
        if not isinstance(statement, cst.SimpleStatementLine):
            return None
        if any(name in source_of(statement) for name in rebound):
            return None
    return None


def _only_logs(orelse: cst.Else | cst.If, names: set[str]) -> bool:
    """An ``else`` of bare expressions that neither mention ``names`` nor end the program
    (``print("Device set to : cpu")``, not ``sys.exit("needs a GPU")``)."""
    if not isinstance(orelse, cst.Else) or not isinstance(orelse.body, cst.IndentedBlock):
        return False
    for statement in orelse.body.body:
        if not _is_bare_expression(statement) or any(n in source_of(statement) for n in names):
            return False
        assert isinstance(statement, cst.SimpleStatementLine)
        for small in statement.body:
            call = small.value if isinstance(small, cst.Expr) else None
            func = call.func if isinstance(call, cst.Call) else None
            name = func.attr.value if isinstance(func, cst.Attribute) else None
            name = func.value if isinstance(func, cst.Name) else name
            if name in ("exit", "quit", "_exit", "abort"):
                return False
    return True


def _assigned(statement: cst.CSTNode) -> str | None:
    """The one name a simple ``name = value`` statement binds."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        return source_of(small.targets[0].target)
    if isinstance(small, cst.AnnAssign) and small.value is not None:
        return source_of(small.target)
    return None


def _chosen(facts: FileFacts, statements: Sequence[cst.CSTNode]) -> Placement:
    """The device a branch returns (its last statement) or assigns last (printing aside)."""
    if not statements:
        return None
    last = statements[-1]
    if isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return):
        returned = last.body[-1].value
        return _device(facts, returned) if returned is not None else None
    for statement in reversed(statements):
        if isinstance(statement, cst.If):
            if (inner := _chosen_by_both(facts, statement)) is not None:
                return inner
            continue
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in reversed(statement.body):
            if isinstance(small, cst.Assign | cst.AnnAssign) and small.value is not None:
                chosen = _device(facts, small.value)  # ``device: torch.device = ...`` too
                if chosen is not None:
                    return chosen
    return None


def _chosen_by_both(facts: FileFacts, node: cst.If) -> Placement:
    """A nested ``if``/``else`` whose branches both choose a device (``cuda:<rank>``
    with several processes, ``cuda:0`` without): the devices either may choose."""
    if not isinstance(node.orelse, cst.Else):
        return None
    body, orelse = _chosen(facts, node.body.body), _chosen(facts, node.orelse.body.body)
    return body | orelse if body is not None and orelse is not None else None


def _device(facts: FileFacts, expr: cst.BaseExpression) -> Placement:
    """The device ``expr`` names: a device, a legacy tensor type's device, or where it
    moves a module or tensor (``self.model = model.cuda()`` / ``model.cpu()`` /
    ``model.to(device)``)."""
    value = facts.value_of(expr)
    if value.kind in (Kind.DEVICE, Kind.TENSOR_TYPE):
        return value.where
    if facts.gives_cuda_index(expr):
        return CUDA  # ``torch.cuda.current_device()``: the index of a CUDA device
    call = facts.call_of(expr)
    if call is None or call.receiver is None or not may_be_placed(call.receiver):
        return None
    if call.method in ("cuda", "cpu") and not call.args:
        return value.where
    if call.method == "to" and len(call.args) == 1 and call.args[0].kind is Kind.DEVICE:
        return value.where  # ``model.to(device)`` with ``device = "cpu"``
    return None


def _moved_receiver(node: cst.IfExp) -> cst.BaseExpression | None:
    """``x`` of ``x.cuda() if ... else x``: the value the body moves and the fallback
    leaves where it is."""
    body = node.body
    if not isinstance(body, cst.Call) or body.args or not isinstance(body.func, cst.Attribute):
        return None
    if body.func.attr.value != "cuda" or not body.func.value.deep_equals(node.orelse):
        return None
    return node.orelse


def _stays(node: cst.IfExp, facts: FileFacts) -> bool:
    """``x.cuda() if avail else x`` of a value on the CPU (or of unknown placement): a
    conditional expression that chooses CUDA or the CPU (docs/design.md §4)."""
    receiver = _moved_receiver(node)
    return receiver is not None and facts.value_of(receiver).where in (None, CPU)


def _moved_only_with_cuda(node: cst.IfExp, facts: FileFacts) -> bool:
    """``x.to(device) if <CUDA test> else x`` of a value on the CPU (or of unknown
    placement): moved to the configured device only where CUDA is, so a Mac's MPS is never
    used (reid-strong-baseline's engine, eval/blind143). Reported without a fix: which
    device the ``else`` should try is the configuration's."""
    body = node.body
    if not isinstance(body, cst.Call) or not isinstance(body.func, cst.Attribute):
        return False
    if body.func.attr.value != "to" or not body.func.value.deep_equals(node.orelse):
        return False
    positional = [arg for arg in body.args if arg.keyword is None]
    if len(positional) != 1 or facts.value_of(node.orelse).where not in (None, CPU):
        return False
    target = facts.value_of(positional[0].value)
    return target.kind is Kind.DEVICE and target.where != CPU


def _names_a_device(node: cst.IfExp, facts: FileFacts) -> bool:
    """Assigned to a device-like name, or passed as ``device=``."""
    if id(node) in facts.device_named:
        return True
    return any(
        arg.value is node and arg.keyword is not None and arg.keyword.value == "device"
        for call in facts.calls
        for arg in call.node.args
    )


def _names_an_accelerator(node: cst.IfExp, facts: FileFacts) -> bool:
    """Passed as ``accelerator=`` or ``device=`` of a call, or assigned to a name for one
    (``accelerator = "gpu" if ... else "cpu"``)."""
    return id(node) in facts.device_named or any(
        arg.value is node and arg.keyword is not None and arg.keyword.value in _ACCELERATOR_KEYWORDS
        for call in facts.calls
        for arg in call.node.args
    )


_ACCELERATOR_KEYWORDS = frozenset({"accelerator", "device"})


def _accelerator(value: Value) -> Placement:
    """``"gpu"``: CUDA, as libraries' trainers name it."""
    return CUDA if value.kind is Kind.CONSTANT and value.constant == "gpu" else None


def _device_indices(when_true: Value, when_false: Value) -> tuple[Placement, Placement]:
    """``0 if avail else -1``, ``None if avail else -1``: a device given by index, as
    ``transformers.pipeline(device=...)`` and torchtext's legacy iterators take it (-1 is
    the CPU; 0, 1, ... a CUDA device; None torchtext's current CUDA device)."""
    if when_false.kind is not Kind.CONSTANT or when_false.constant != CPU_DEVICE_INDEX:
        return None, None
    chosen = when_true.constant if when_true.kind is Kind.CONSTANT else False
    if chosen is None or (type(chosen) is int and chosen >= 0):
        return CUDA, CPU
    return None, None


def _chooses_tensor_types(node: cst.If | cst.IfExp, facts: FileFacts) -> bool:
    """``torch.cuda.FloatTensor if cuda else torch.FloatTensor``: no MPS type to add."""
    return isinstance(node, cst.IfExp) and facts.value_of(node.body).kind is Kind.TENSOR_TYPE


def _returns(statements: Sequence[cst.CSTNode]) -> bool:
    last = statements[-1] if statements else None
    if isinstance(last, cst.SimpleStatementLine):
        return isinstance(last.body[-1], cst.Return)
    return False
