"""What the analysis learned about one file: the records every rule queries.

This module and ``values.py`` are the analysis's query API: rules import nothing else of
it (``tests/test_module_graph.py``). The tables and answers they read besides the records
(the torch semantics, the ``torch.cuda`` APIs, the MPS operator tables, a few name
guesses) are re-exported or answered here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import field

import libcst as cst

from devlint.analysis import accelerator_api, name_guesses, torch_api
from devlint.analysis.accelerator_api import CudaApi as CudaApi
from devlint.analysis.accelerator_api import equivalent_in as equivalent_in
from devlint.analysis.guards import cuda_type_test, placement_test
from devlint.analysis.loops import Loop as Loop
from devlint.analysis.mps_calls import OpCall as OpCall
from devlint.analysis.mps_calls import mps_note as mps_note
from devlint.analysis.mps_calls import op_calls as op_calls
from devlint.analysis.mps_coverage import RELEASES as RELEASES
from devlint.analysis.mps_op_map import Verdict as Verdict
from devlint.analysis.name_guesses import names_lengths as names_lengths
from devlint.analysis.name_guesses import names_raw_text as names_raw_text
from devlint.analysis.releases import version_test_answer as version_test_answer
from devlint.analysis.syntax import child_nodes, operand_roots, source_of
from devlint.analysis.syntax import dotted_name as dotted_name
from devlint.analysis.syntax import encloses as encloses
from devlint.analysis.syntax import receivers as receivers
from devlint.analysis.torch_api import CPU_DEVICE_INDEX as CPU_DEVICE_INDEX
from devlint.analysis.torch_api import DATA_LOADERS as DATA_LOADERS
from devlint.analysis.torch_api import DISTRIBUTED_WRAPPERS as DISTRIBUTED_WRAPPERS
from devlint.analysis.torch_api import IDENTITY_WRAPPERS as IDENTITY_WRAPPERS
from devlint.analysis.torch_api import places_by_keyword as places_by_keyword
from devlint.analysis.values import (
    ACCELERATORS,
    CPU,
    CUDA,
    UNKNOWN,
    Kind,
    Value,
    may_be_placed,
    may_be_tensor,
)
from devlint.records import record


@record(frozen=True, slots=True)
class Branch:
    """One part of an ``if`` statement, conditional expression or ``try`` that code runs in.

    ``part`` is the node of that part: ``node.body`` or ``node.orelse`` of an ``If`` /
    ``IfExp``, ``node.body`` of a ``Try`` or one of its ``ExceptHandler``s. Two sites are in
    the same part when their branches hold the same ``part`` node (compare with ``is``).
    """

    node: cst.If | cst.IfExp | cst.Try | cst.TryStar
    part: cst.CSTNode


@record(frozen=True, slots=True)
class Site:
    """The context in which an expression was evaluated."""

    guarded: bool  # only runs where CUDA is available (docs/design.md §4, *Guards*)
    loop: Loop | None  # innermost enclosing loop over a data loader
    function: cst.FunctionDef | None  # innermost enclosing function
    class_name: str | None = None  # the class whose method this is
    conditional: bool = False  # inside an ``if`` nested in the loader loop's body
    # The enclosing if/else, conditional-expression and try/except parts, outermost first;
    # a function body continues the branches its ``def`` statement ran in.
    branches: tuple[Branch, ...] = ()
    # Written to run with CUDA only, though nothing tests for it: a contract visible in the
    # file (a class's ``cuda`` method, callers that check first, DDP device ids, a
    # CUDA-only package...; requirements.py). Weaker than ``guarded``:
    # only DEV011 uses it; placements (DEV003) and pin_memory (DEV005) keep to guards.
    cuda_required: bool = False
    inner_loop: Loop | None = None  # the innermost enclosing ``for`` or ``while`` loop
    inner_conditional: bool = False  # inside an ``if`` nested in that loop's body
    # The loop whose body runs the innermost loop on each of its iterations, if any
    # (``for out, target in zip(outs, targets):`` in a training step).
    outer_loop: Loop | None = None


@record(slots=True)
class CallRecord:
    """One call, with the values of its callee, receiver and arguments."""

    node: cst.Call
    callee: str | None  # qualified name when the callee resolves through imports
    method: str | None  # ``m`` for ``receiver.m(...)`` on a non-imported receiver
    receiver: Value | None
    args: tuple[Value, ...]
    keywords: dict[str, Value]
    site: Site
    discarded: bool = False  # a bare expression statement: the result is thrown away
    own_line: bool = False  # discarded, and alone on its line (not after ``;`` or ``if x:``)
    reference_only: bool = False  # compared, returned or a default: not a placement itself
    casts_only: bool = False  # ``x.to(torch.float16)``, ``x.to(x.dtype)``: no device named
    entered: bool = False  # a ``with`` item: the context it returns is entered


@record(frozen=True, slots=True)
class Operand:
    node: cst.BaseExpression | None  # None for the parameters of a called module
    value: Value


@record(slots=True)
class Mix:
    """An operation that combines several tensors (or a module and its inputs)."""

    node: cst.CSTNode
    operands: tuple[Operand, ...]
    site: Site


@record(slots=True)
class Conditional:
    """An ``if`` statement or conditional expression, with what its test checks."""

    node: cst.If | cst.IfExp
    test: Value  # a GUARD value when the test checks device availability
    enclosing_backends: frozenset[str]  # backends tested by the chain this is the else of
    next_statement: cst.BaseStatement | None = None  # for ``if`` statements in a block
    site: Site | None = None
    # for ``if`` statements in a block: the statements before it there, the nearest first
    preceding: tuple[cst.BaseStatement, ...] = ()
    binds: str | None = None  # a conditional expression's name: ``device = torch.device(...)``


@record(frozen=True, slots=True)
class AttributeStore:
    """``self.name = value`` in a method of a class."""

    class_name: str
    method: str
    attribute: str
    value: Value
    target: cst.BaseExpression


@record(slots=True)
class FileFacts:
    """Everything the rules may ask about one file."""

    calls: list[CallRecord] = field(default_factory=list)
    mixes: list[Mix] = field(default_factory=list)
    conditionals: list[Conditional] = field(default_factory=list)
    values: dict[int, Value] = field(default_factory=dict)
    attribute_stores: list[AttributeStore] = field(default_factory=list)
    # (class, method, attr) of ``self.attr`` read other than as the receiver of a move
    attribute_loads: set[tuple[str, str, str]] = field(default_factory=set)
    module_classes: set[str] = field(default_factory=set)  # classes deriving from nn.Module
    module_names: dict[str, Value] = field(default_factory=dict)  # module scope at its end
    # ids of CUDA literals that are a whole definition (``device = "cuda"``, a parameter or
    # ``--device`` default): where a CUDA default is reported and fixed (DEV003).
    definition_literals: set[int] = field(default_factory=set)
    # ``torch.device("cuda")`` calls whose device is read outside every guard, by id.
    read_defaults: dict[int, cst.Call] = field(default_factory=dict)
    # Calls of a project module's function, by id: the devices passed, outside every
    # guard, to parameters it places with (``ModuleSummary.placing_parameters``).
    handed_placements: dict[int, tuple[HandedPlacement, ...]] = field(default_factory=dict)
    # Expressions assigned to a device-like name (``device = 0 if avail else -1``).
    device_named: set[int] = field(default_factory=set)
    # Module-level functions this file calls with values that may be on an accelerator:
    # function id -> the parameters seeded with such values.
    device_parameters: dict[int, frozenset[str]] = field(default_factory=dict)
    # ids of ``from utils import *`` statements (``cst.ImportFrom``) of project modules
    # that were resolved: the names each bound (project_imports.py).
    star_bindings: dict[int, frozenset[str]] = field(default_factory=dict)
    # Resolves the star imports the analysis never needed (no name missed), binding their
    # names in ``module_names``: fixes ask for them through ``star_bound``.
    resolve_stars: Callable[[], dict[int, frozenset[str]]] | None = None
    # (function id, 0 for the module; name): a name assigned an MPS device in that code,
    # which it may still hold where the code ends.
    mps_at_end: set[tuple[int, str]] = field(default_factory=set)
    _calls_by_node: dict[int, CallRecord] | None = None
    _function_of: dict[int, cst.FunctionDef | None] | None = None
    _version_tests: dict[int, bool] = field(default_factory=dict)  # test id -> answer

    def call_of(self, node: cst.CSTNode) -> CallRecord | None:
        """The record of a call expression (None if ``node`` is no call the analysis ran)."""
        if self._calls_by_node is None:
            self._calls_by_node = {id(call.node): call for call in self.calls}
        return self._calls_by_node.get(id(node))

    def named_factory_made(self, value: Value) -> bool:
        """Whether a tensor on the default device comes from a factory of sizes and literals
        (``torch_api.STATE_FACTORIES``: ``torch.tensor``, ``zeros``, ``linspace``...; not
        ``from_numpy``): DEV014's tensors."""
        return any(
            self._named_factory(origin, torch_api.STATE_FACTORIES) for origin in value.origins
        )

    def gives_cuda_index(self, expr: cst.BaseExpression) -> bool:
        """``torch.cuda.current_device()``: a call whose ``int`` is a CUDA device's index."""
        call = self.call_of(expr)
        return call is not None and call.callee in torch_api.CUDA_INDEX_CALLS

    def moved_factory(self, value: Value, store: AttributeStore) -> bool:
        """Whether a stored tensor is made by one of the named factories and moved in the
        method that stores it (``torch.tensor([...]).view(1, 3, 1, 1).to(device)``): the
        move its chain ends with runs there, with such a call at the root of its
        receiver's method calls."""
        move = value.placed[-1].node if value.placed else None
        record = self.call_of(move) if move is not None else None
        function = record.site.function if record is not None else None
        if record is None or record.site.class_name != store.class_name or function is None:
            return False
        if function.name.value != store.method:
            return False
        for receiver in receivers(move) if isinstance(move, cst.Call) else ():
            call = self.call_of(receiver) if isinstance(receiver, cst.Call) else None
            if call is not None and call.callee is not None:
                return self._named_factory(call.node, torch_api.STATE_FACTORIES)
        return False

    def _named_factory(
        self, node: cst.Call, names: frozenset[str] = torch_api.NAMED_FACTORIES
    ) -> bool:
        call = self.call_of(node)
        head, _, name = (call.callee or "").rpartition(".") if call is not None else ("", "", "")
        return head == "torch" and name in names

    def wraps_for_parallelism(self, node: cst.CSTNode) -> bool:
        """``nn.DataParallel(model)`` (or DDP, or a class named for data parallelism): a
        call that wraps a module, not a move (READING: a block that wraps and moves is no
        DEV016 method one)."""
        call = self.call_of(node)
        callee = call.callee if call is not None else None
        if callee is None:
            return False
        return callee in torch_api.INPUT_MOVING_WRAPPERS or name_guesses.names_a_data_parallel(
            callee
        )

    def moves_to_cuda(self, node: cst.CSTNode) -> bool:
        """``x.cuda()`` / ``x.to(<a CUDA device>)`` of a value that may be a tensor or a
        module (not a cast, not an object of this file's own classes)."""
        call = self.call_of(node)
        if call is None or call.receiver is None or not may_be_placed(call.receiver):
            return False
        if call.method == "cuda":
            return True
        target = call.args[0] if call.args else call.keywords.get("device")
        return call.method == "to" and target is not None and target.where == CUDA

    def factories_meeting_inputs(self, mix: Mix) -> list[cst.Call]:
        """Tensor factories (``torch_api.NAMED_FACTORIES``) called without ``device=`` in the
        function ``mix`` is in, whose results meet that function's inputs (DEV013): in
        ``forward`` of a module, or in a function this file calls with values that may be
        on an accelerator (a gradient-penalty helper's ``torch.rand(...)`` mixed with its
        arguments)."""
        site = mix.site
        function = site.function
        if function is None:
            return []
        in_forward = function.name.value == "forward" and site.class_name in self.module_classes
        if not in_forward and id(function) not in self.device_parameters:
            return []
        made_here = [
            origin
            for op in mix.operands
            for origin in op.value.origins
            if self._function_of_node(origin) is function  # not an attribute from __init__
            and self._named_factory(origin)  # ``torch.zeros``..., not ``from_numpy(array)``
            # moved to CUDA on one path and to MPS on another: it follows the input
            and not (op.value.where is not None and op.value.where >= ACCELERATORS)
        ]
        inputs = [op for op in mix.operands if op.value.where != CPU]
        if not in_forward:  # a helper: the other operand must be one of its parameters
            names = self.device_parameters[id(function)]
            inputs = [op for op in inputs if operand_roots(op.node) & names]
        return made_here if inputs else []

    def factories_moved_on_cuda_only(self) -> list[tuple[cst.Call, cst.Name, cst.FunctionDef]]:
        """Tensor factories called without ``device=`` that a function moves only when
        another tensor is on CUDA (``noise = torch.randn(n)`` then ``if x.is_cuda: noise =
        noise.cuda()``): on MPS they stay on the CPU beside ``x`` (DEV013). Each with the
        tested name and the function."""
        found = []
        for conditional in self.conditionals:
            node = conditional.node
            if type(node) is not cst.If or node.orelse is not None:
                continue
            test = placement_test(node.test)
            tested = (
                node.test.value
                if isinstance(node.test, cst.Attribute)
                else cuda_type_test(node.test)
            )
            if test is None or test[1:] != ("cuda", 1) or not isinstance(tested, cst.Name):
                continue
            value = self.value_of(tested)
            if not may_be_tensor(value) or value.where == CPU:
                continue
            for receiver in self._cuda_self_moves(node.body):
                for factory in self.value_of(receiver).origins:
                    function = self._function_of_node(factory)
                    if not self._named_factory(factory):
                        continue  # ``torch.Tensor(n)`` takes no ``device=`` of another kind
                    if function is not None and function is self._function_of_node(node):
                        found.append((factory, tested, function))
        return found

    def _cuda_self_moves(self, body: cst.BaseSuite) -> list[cst.BaseExpression]:
        """The receivers of a block made only of ``v = v.cuda()`` statements (else none)."""
        receivers = []
        statements = body.body if isinstance(body, cst.IndentedBlock) else ()
        for statement in statements:
            lines = statement.body if isinstance(statement, cst.SimpleStatementLine) else ()
            small = lines[0] if len(lines) == 1 else None
            if not (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.value, cst.Call)
                and isinstance(small.value.func, cst.Attribute)
                and small.value.func.attr.value == "cuda"
                and source_of(small.value.func.value) == source_of(small.targets[0].target)
            ):
                return []
            receivers.append(small.value.func.value)
        return receivers

    def _function_of_node(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        if self._function_of is None:
            self._function_of = {id(call.node): call.site.function for call in self.calls}
            for conditional in self.conditionals:
                if conditional.site is not None:
                    self._function_of[id(conditional.node)] = conditional.site.function
        return self._function_of.get(id(node))

    def star_bound(self) -> dict[int, frozenset[str]]:
        """The names each resolved ``from <project module> import *`` binds (by statement
        id), resolving the ones the analysis left alone."""
        if self.resolve_stars is not None:
            self.star_bindings, self.resolve_stars = self.resolve_stars(), None
        return self.star_bindings

    def value_of(self, node: cst.CSTNode) -> Value:
        """The value the analysis computed for an expression (unknown if never evaluated)."""
        return self.values.get(id(node), UNKNOWN)

    def tests_torch_version(self, test: cst.CSTNode) -> bool:
        """A test of the torch release: a version name (``torch.__version__``,
        ``is_torch_version(...)``, ``_TORCH_GREATER_EQUAL_2_4``), or ``hasattr(torch..., ...)``."""
        if isinstance(test, cst.Name) and name_guesses.VERSION_NAME.search(test.value):
            return True
        if isinstance(test, cst.Attribute) and name_guesses.VERSION_NAME.search(test.attr.value):
            return True
        if (
            isinstance(test, cst.Call)
            and isinstance(test.func, cst.Name)
            and test.func.value == "hasattr"
            and test.args
        ):
            owner = self.value_of(test.args[0].value)
            if owner.qualname is not None and owner.qualname.split(".", 1)[0] == "torch":
                return True
        return any(self.tests_torch_version(child) for child in child_nodes(test))

    def in_torch_version_branch(self, site: Site) -> bool:
        """Whether ``site`` runs in one side of an ``if`` or conditional expression that
        tests the torch release (compatibility code for another torch). A test every torch
        from ``target-torch`` on answers alike (``torch.__version__ >= "1.10"``) is no
        such branch: the analysis runs only its live side (``version_test_answer``)."""
        return any(
            isinstance(branch.node, cst.If | cst.IfExp) and self._version_test(branch.node.test)
            for branch in site.branches
        )

    def _version_test(self, test: cst.BaseExpression) -> bool:
        """``tests_torch_version`` once per test: every call under a branch asks it."""
        known = self._version_tests.get(id(test))
        if known is None:
            known = self._version_tests[id(test)] = self.tests_torch_version(test)
        return known


def cuda_api(qualname: str | None) -> CudaApi | None:
    """The ``torch.cuda`` API a callee is, with its ``torch.accelerator`` equivalent
    (``accelerator_api.py``; DEV011, DEV017)."""
    return accelerator_api.lookup(qualname)


def cuda_api_table() -> str:
    """The ``torch.cuda`` APIs and their equivalents, as a Markdown table (rule pages)."""
    return accelerator_api.table_markdown()


# A device passed to a project function's parameter that places with it: the argument's
# expression, its value and the parameter's name.
HandedPlacement = tuple[cst.BaseExpression, Value, str]
# The keywords with which a call places what it makes or loads (DEV003's forms).
PLACEMENT_KEYWORDS = ("device", "map_location")


def placements(
    call: CallRecord, values: dict[int, Value]
) -> Iterator[tuple[cst.BaseExpression, Value, str]]:
    """What one call places, and with what: ``(expression, its value, how)`` for
    ``x.to(d)`` (how: ``"to"``) and for ``device=d`` / ``map_location=d`` of a call that
    places by keyword (``torch_api.places_by_keyword``; how: the keyword). A
    ``map_location`` dict sends storages to each entry's device from where they were
    saved: an entry whose key is a CUDA device needed CUDA already (a rename, not a
    placement); every other entry is a placement (``values``: the expressions' values)."""
    node = call.node
    if (
        call.method == "to"
        and call.args
        and node.args[0].keyword is None
        and (call.receiver is None or may_be_placed(call.receiver))
    ):
        yield node.args[0].value, call.args[0], "to"
    if not torch_api.places_by_keyword(call.callee):  # ``x.to(device=d)`` places too
        return
    for arg in node.args:
        keyword = arg.keyword.value if arg.keyword is not None else None
        if keyword == "map_location" and isinstance(arg.value, cst.Dict):
            for entry in arg.value.elements:
                if isinstance(entry, cst.DictElement):
                    key = values.get(id(entry.key), UNKNOWN)
                    if not (key.kind is Kind.DEVICE and key.where == CUDA):
                        yield entry.value, values.get(id(entry.value), UNKNOWN), keyword
        elif keyword in PLACEMENT_KEYWORDS:
            yield arg.value, call.keywords[keyword], keyword


def forwards_placement(call: CallRecord) -> bool:
    """A method call inside a method that forwards placement to torch's (a ``to`` or
    ``_apply`` override, a batch's ``pin_memory``: ``name_guesses.FORWARDING_METHODS``):
    its callers decide. In a ``cuda`` override only ``super().cuda(...)`` passes the
    caller's request on; the members it moves (``self.critic.cuda()``) and the tensors it
    moves and keeps (``self.prob = self.prob.cuda()``) are placements of its own
    (pymarl's learners, RepDistiller's memory bank, gpt-fast's ``MultiInput``:
    eval/blind152, blind15, blind42; blind9's early reading of a loss's member move as
    the caller's is the one label against it)."""
    function = call.site.function
    if function is None or not isinstance(call.node.func, cst.Attribute):
        return False
    if function.name.value == "cuda":
        receiver = call.node.func.value
        return (
            isinstance(receiver, cst.Call)
            and isinstance(receiver.func, cst.Name)
            and receiver.func.value == "super"
        )
    return name_guesses.forwards_placement(function.name.value)
