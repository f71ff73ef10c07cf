"""Abstract values of the device-flow analysis and their lattice.

A value is what the analysis knows about one Python object at one program point:
its kind (tensor, module, device, ...) and its *placement*, the set of devices it may
live on. Placement ``None`` means unknown (the top of the lattice); joining anything
with unknown stays unknown, so a rule that needs a known placement stays silent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import field, replace
from enum import Enum

import libcst as cst

from devlint.records import record

Placement = frozenset[str] | None

CPU: Placement = frozenset({"cpu"})
CUDA: Placement = frozenset({"cuda"})
MPS: Placement = frozenset({"mps"})
ANY_DEVICE: Placement = frozenset({"cpu", "cuda", "mps"})
ACCELERATORS = frozenset({"cuda", "mps"})
# In a placement, "and maybe somewhere not known": a tensor or module moved to an
# accelerator on one path and of unknown placement on the other (``if args.cuda:
# X = X.cuda()`` after ``X = load()``) may be on that accelerator, but is not known to be
# only there (not ``== CUDA``) nor anywhere else (not on the CPU).
ELSEWHERE = "elsewhere"


class Kind(Enum):
    UNKNOWN = "unknown"
    TENSOR = "tensor"  # a tensor, or a container of tensors (a batch, a list of outputs)
    MODULE = "module"  # an nn.Module instance
    DEVICE = "device"  # a torch.device or a device string
    LOADER = "loader"  # a torch.utils.data.DataLoader
    IMPORTED = "imported"  # a module or object reached through an import: see ``qualname``
    FUNCTION = "function"  # a function defined in this file: see ``qualname``
    CLASS = "class"  # a class defined in this file
    CONSTANT = "constant"  # a literal constant: see ``constant``
    GUARD = "guard"  # a boolean derived from an availability test: see ``polarity``
    TENSOR_TYPE = "tensor type"  # a legacy type (``torch.cuda.FloatTensor``): see ``where``
    INSTANCE = "instance"  # an object of a class defined in this file (not an nn.Module)
    ARRAY = "array"  # a NumPy array (on the host; see ``float64``)
    # An ``int`` whose value is not written here (``int(os.environ["LOCAL_RANK"])``, a
    # parameter annotated ``int``): placed with, it is a device index (``.to(rank)``).
    INTEGER = "integer"


def join_placement(a: Placement, b: Placement) -> Placement:
    if a is None or b is None:
        return None
    return a | b


def join_branches(a: Placement, b: Placement) -> Placement:
    """Where a tensor or module may be after two paths meet: an accelerator one path put it
    on stays possible when the other path's placement is unknown (see ``ELSEWHERE``)."""
    if (a is None) == (b is None):
        return join_placement(a, b)
    known = a if b is None else b
    assert known is not None
    return known | {ELSEWHERE} if known & ACCELERATORS else None


def join_placements(placements: Iterable[Placement]) -> Placement:
    """Where any of several values may be (unknown if one is unknown; nothing: empty)."""
    joined: Placement = frozenset()
    for placement in placements:
        joined = join_placement(joined, placement)
    return joined


# Kinds that are never tensors nor modules: a move or a pin on one is not a placement.
_NEVER_PLACED = frozenset(
    {
        Kind.IMPORTED, Kind.FUNCTION, Kind.CLASS, Kind.CONSTANT, Kind.GUARD, Kind.DEVICE,
        Kind.TENSOR_TYPE, Kind.INSTANCE, Kind.ARRAY, Kind.INTEGER,
    }
)  # fmt: skip


# Kinds that stand for an object where it is used, when ``None`` on another path.
_OPTIONAL = frozenset({Kind.TENSOR, Kind.MODULE, Kind.LOADER, Kind.DEVICE, Kind.UNKNOWN})

# Kinds whose placement joins across branches with ``join_branches``.
_PLACED = frozenset({Kind.TENSOR, Kind.MODULE, Kind.UNKNOWN})


def may_be_placed(value: Value) -> bool:
    """Whether ``value`` may be a tensor, a module or a loader (unknown values may be)."""
    return value.kind not in _NEVER_PLACED


def may_be_tensor(value: Value) -> bool:
    """Whether ``value`` may be a tensor (known tensors and values of unknown kind)."""
    return value.kind in (Kind.TENSOR, Kind.UNKNOWN)


def is_index(value: Value) -> bool:
    """Whether ``value`` is an ``int``: as a device (``.to(0)``, ``.to(rank)``), the index of
    an accelerator (CUDA's, where there is one)."""
    return value.kind is Kind.INTEGER or (
        value.kind is Kind.CONSTANT and type(value.constant) is int
    )


def may_be_accelerator(where: Placement) -> bool:
    return where is not None and bool(where & ACCELERATORS)


def placed_on_accelerator(value: Value) -> bool:
    """May be on an accelerator by evidence (a move, a device), not only as what an unseen
    function computed (``Value.computed_from``): what a mismatch report may rest on."""
    return may_be_accelerator(value.where) and not value.computed_from


def is_cpu(where: Placement) -> bool:
    return where == CPU


def placement_words(where: Placement) -> str:
    """How a step of a chain names a placement: ``cuda``, ``mps``, ``the CPU``, ``the device``."""
    names = {CPU: "the CPU", CUDA: "cuda", MPS: "mps"}
    return names.get(where, "the device")


@record(frozen=True, slots=True)
class Step:
    """One fact in the chain behind a value: the node where it happened and what happened
    there (``moved to cuda here``), reported as a related location of a diagnostic."""

    node: cst.CSTNode
    note: str


def chain(*parts: tuple[Step, ...]) -> tuple[Step, ...]:
    """Several chains of steps one after the other, each step once, in order."""
    nonempty = [part for part in parts if part]
    if len(nonempty) <= 1 or all(part is nonempty[0] for part in nonempty):
        return nonempty[0] if nonempty else ()
    seen: dict[tuple[int, str], Step] = {}
    for part in nonempty:
        for step in part:
            seen.setdefault((id(step.node), step.note), step)
    return tuple(seen.values())


def placement_of_device_string(text: str) -> Placement:
    """The placement named by a device string such as ``"cuda:0"``; None if not a device."""
    kind = text.split(":", 1)[0].strip().lower()
    if kind == "cuda":
        return CUDA
    if kind == "mps":
        return MPS
    if kind == "cpu":
        return CPU
    return None


@record(frozen=True, slots=True)
class Value:
    """What is known about one object."""

    kind: Kind = Kind.UNKNOWN
    where: Placement = None
    # IMPORTED / FUNCTION / CLASS: the dotted name it stands for; MODULE: its class, when
    # the class is defined in this file; UNKNOWN: ``NAMESPACE`` for parsed options
    qualname: str | None = None
    constant: object = None  # CONSTANT: the literal value (True, 3, "cuda", ...)
    polarity: int = 0  # GUARD: +1 truthy implies CUDA available, -1 falsy implies it
    from_batch: bool = False  # a batch element straight out of a data loader, not yet moved
    whole_batch: bool = False  # the loader's item itself (may be a dict-like batch object)
    stateless: bool = False  # MODULE without parameters (losses, activations)
    scalar: bool = False  # a 0-dim tensor from a number: mixes with any device
    # TENSOR made on the CPU as one dimension of numbers (``torch.linspace(0, 1, n)``,
    # ``arange``, ``tensor([0.1, 0.5])``): iterating it yields 0-dim tensors (``scalar``).
    vector: bool = False
    # TENSOR / ARRAY of dtype float64 (DEV018): "numpy" when it comes from NumPy's default
    # dtype, "explicit" when the code asked for it (``.double()``, ``dtype=torch.float64``).
    float64: str = ""
    # TENSOR computed from factory calls without ``device=`` (DEV013, DEV014): those calls.
    origins: tuple[cst.Call, ...] = field(default=(), compare=False)
    # DEVICE that is CUDA by default, from an unguarded literal written at a definition
    # (``device = "cuda"``, a parameter or ``--device`` default): those literals, one per
    # definition that reaches here (DEV003).
    cuda_defaults: tuple[cst.BaseExpression, ...] = field(default=(), compare=False)
    # GUARD combined with a user setting (``not args.no_cuda and avail``): the setting's
    # source and the function it was written in, to gate other choices by it (DEV004).
    gate: tuple[str, cst.FunctionDef | None] | None = field(default=None, compare=False)
    # GUARD that classifies a device already chosen (``device.type == "cuda"``,
    # ``x.is_cuda``) rather than testing availability: not itself a device choice.
    classifies: bool = False
    # A tuple written as a literal (``return loss, acc``): what each element is, so that
    # unpacking it (``loss, acc = step(x)``) or indexing it with a number keeps each
    # element's facts. The value itself describes the tuple as a whole.
    elements: tuple[Value, ...] | None = None
    # UNKNOWN: a method's parameter without a default or off by default (``False``,
    # ``None``), whose calls the file does not show, or what was stored from it
    # (``self.cuda = cuda``). As a flag, it may be an availability test the caller computed
    # (``guards.may_guard_cuda``). Also a function's parameter that every call in the file
    # passes a moved value of unknown kind (a model of a class from elsewhere).
    from_caller: bool = False
    # MODULE made by a ``torch.nn`` class: that constructor call, kept through moves
    # (DEV019 reads its arguments: ``nn.Embedding(..., max_norm=1.0)``).
    built_by: cst.Call | None = field(default=None, compare=False)
    # TENSOR / MODULE / UNKNOWN set differently under a flag (``if flag: x = x.cuda()``):
    # the flag's source and the value where it holds and where it does not, so that code
    # under the flag again (``x.numpy() if not flag else x.cpu().numpy()``) sees only
    # its own side (branches.py ``follow_flag``).
    follows: tuple[str, Value, Value] | None = None
    # TENSOR / MODULE / DEVICE: how it got its placement, in order (the device chosen, the
    # move, the model computing it): the chain a diagnostic on it reports.
    placed: tuple[Step, ...] = field(default=(), compare=False)
    # The constant this value holds wherever CUDA is absent: a setting overridden under
    # ``if not torch.cuda.is_available(): args.mode = "cpu"``. Comparing it with that
    # constant tests availability (``args.mode == "puregpu"`` implies CUDA).
    absent: object = None
    # UNKNOWN returned by a function devlint cannot see (another package's ``mse_loss``)
    # given tensors that may be on an accelerator: where those are (also its ``where``). A
    # computation on it is placed there (``loss.mean().item()``: DEV012), but it may be
    # anything (an image, a number, a tuple): its elements are not, and NumPy's
    # conversions of it are no DEV001.
    computed_from: Placement = None
    # TENSOR that is a Python list or tuple of tensors (a literal, a list comprehension,
    # ``append``s to an empty list), not one tensor: ``torch.tensor(it)`` reads each
    # element's value and builds a new tensor on the default device.
    listed: bool = False
    # DEVICE that is any device on some path only because the analysis does not know which
    # (a parameter or attribute named like a device: ``def f(x, device)``, ``self.device``;
    # the user's ``--device`` option): the devices the code itself chooses, the rest of
    # ``where`` being the caller's or the user's (empty for such a device alone; None: all
    # of ``where`` is chosen). A user may pass MPS, but DEV018 reads MPS only from a choice
    # the code makes (READING: float64 moved to a parameter or user-chosen device is no
    # DEV018); a three-way selection, ``torch.accelerator`` or accelerate's device is one.
    chosen: Placement = field(default=None, compare=False)

    def moved(self, where: Placement, by: tuple[Step, ...] = ()) -> Value:
        """This value after ``.to(...)``/``.cuda()``/``.cpu()``: same kind, new placement;
        ``by``: the steps of the move (the device's own, then the call's)."""
        kind = self.kind if self.kind in (Kind.MODULE, Kind.TENSOR) else Kind.UNKNOWN
        qualname = self.qualname if kind is Kind.MODULE else None
        return Value(
            kind=kind,
            where=where,
            qualname=qualname,
            stateless=self.stateless,
            float64=self.float64,
            built_by=self.built_by if kind is Kind.MODULE else None,
            placed=by,
            # ``torch.zeros(n).cpu()`` is still the factory's tensor, where it was made
            origins=self.origins if where == CPU and self.where == CPU else (),
        )

    def derived(self) -> Value:
        """A tensor computed from this one (method chains, slicing, arithmetic)."""
        if self.kind is Kind.TENSOR:
            follows = self.follows
            if follows is not None:  # ``y.squeeze()`` of a ``y`` that follows a flag
                follows = (follows[0], follows[1].derived(), follows[2].derived())
            return (
                self
                if self.scalar
                else Value(
                    Kind.TENSOR,
                    self.where,
                    origins=self.origins,
                    from_batch=self.from_batch,
                    float64=self.float64,
                    placed=self.placed,
                    follows=follows,
                    computed_from=self.computed_from,
                )
            )
        return Value(Kind.TENSOR, self.where, placed=self.placed, computed_from=self.computed_from)


def follow_operands(result: Value, operands: Sequence[Value]) -> Value:
    """``result`` computed from operands of which some follow one flag (``if args.cuda:
    model.cuda(); x = x.cuda()`` then ``y = model(x)``): it follows that flag too, where
    the followers are where the flag puts them and the other operands where they are."""
    marks = [(v.follows, v.where) for v in operands if v.follows is not None]
    keys = {follows[0] for follows, _ in marks}
    if len(keys) != 1 or result.kind is not Kind.TENSOR:
        return result
    others = [v.where for v in operands if v.follows is None and v.where is not None]
    holds: list[Placement] = [follows[1].where or where for follows, where in marks]
    fails: list[Placement] = [follows[2].where or where for follows, where in marks]
    sides = []
    for wheres in (holds + others, fails + others):
        # A side where the follower's placement is not known: wherever it may be at all.
        where = None if None in wheres else join_placements(wheres)
        sides.append(replace(result, where=where, follows=None))
    return replace(result, follows=(keys.pop(), sides[0], sides[1]))


UNKNOWN = Value()
# The ``qualname`` of what ``parser.parse_args()`` returns (an UNKNOWN value): its
# attributes are the run's settings, ``ns.device`` included, whatever the variable's name.
NAMESPACE = "argparse.Namespace"
# A literal container with nothing in it yet: no kind (its elements will say), no placement
# (``join`` with a tensor container gives the tensors' placement).
EMPTY = Value(where=frozenset())
FROM_CALLER = Value(from_caller=True)


def is_empty_container(value: Value) -> bool:
    """``[]``, ``{}``: a container of nothing yet (``EMPTY``), of no kind."""
    return value.kind is Kind.UNKNOWN and value.where == frozenset()


def join(a: Value, b: Value) -> Value:
    """The least value describing both ``a`` and ``b`` (the two sides of a branch)."""
    if a is b or a == b:
        return a
    if is_empty_container(a) and b.kind is Kind.TENSOR:
        return replace(b, scalar=False)  # ``outs = []`` on one path, tensors on the other
    if is_empty_container(b) and a.kind is Kind.TENSOR:
        return replace(a, scalar=False)
    if a.kind is not b.kind:
        if is_none(a) and b.kind in _OPTIONAL:
            return b  # ``None`` on one path: where it is used, it is the other path's
        if is_none(b) and a.kind in _OPTIONAL:
            return a
        if a.elements is not None and b.elements is not None:
            return Value(elements=_join_elements(a.elements, b.elements))
        # ``use_cuda = torch.cuda.is_available()`` on one path, a placeholder (``False``,
        # ``None``, ``"NA"``) on the other: still the availability test's variable.
        if {a.kind, b.kind} == {Kind.GUARD, Kind.CONSTANT}:
            return a if a.kind is Kind.GUARD else b
        if is_index(a) and is_index(b):
            return Value(Kind.INTEGER)  # ``0`` on one path, ``int(rank)`` on the other
        if a.kind in _PLACED and b.kind in _PLACED:  # a CUDA tensor, or something unknown
            return Value(
                where=join_branches(a.where, b.where),
                placed=chain(a.placed, b.placed),
                computed_from=joined_inference(a, b),
            )
        return UNKNOWN
    if a.kind in (Kind.IMPORTED, Kind.FUNCTION, Kind.CLASS, Kind.CONSTANT):
        if (a.qualname, a.constant) == (b.qualname, b.constant):
            return a
        if a.kind is Kind.CLASS:
            return Value(Kind.CLASS)  # one of two classes: what calling it makes is not known
        if a.kind is Kind.IMPORTED:
            # ``from train import train_a as train`` or ``train_b as train``: still code
            # from elsewhere, not a callable of unknown kind (a model) computing on its inputs
            return Value(Kind.IMPORTED)
        return Value(Kind.INTEGER) if is_index(a) and is_index(b) else UNKNOWN
    return Value(
        kind=a.kind,
        where=(join_branches if a.kind in _PLACED else join_placement)(a.where, b.where),
        qualname=a.qualname if a.kind is Kind.MODULE and a.qualname == b.qualname else None,
        polarity=a.polarity if a.polarity == b.polarity else 0,
        from_batch=a.from_batch or b.from_batch,
        stateless=a.stateless and b.stateless,
        scalar=a.scalar and b.scalar,
        vector=a.vector and b.vector,
        float64=a.float64 or b.float64,
        origins=_joined_origins(a, b),
        cuda_defaults=_union(a.cuda_defaults, b.cuda_defaults),
        gate=a.gate if a.gate == b.gate else None,
        classifies=a.classifies and b.classifies,
        elements=_join_elements(a.elements, b.elements),
        from_caller=a.from_caller and b.from_caller,
        placed=chain(a.placed, b.placed),
        absent=a.absent if a.absent == b.absent else None,
        computed_from=joined_inference(a, b),
        listed=a.listed and b.listed,
        chosen=_joined_choice(a, b),
    )


def _joined_choice(a: Value, b: Value) -> Placement:
    """``Value.chosen`` where two paths meet: what either path's code chose."""
    if a.chosen is None and b.chosen is None:
        return None
    return (a.where or frozenset() if a.chosen is None else a.chosen) | (
        b.where or frozenset() if b.chosen is None else b.chosen
    )


def code_chosen(device: Value) -> Placement:
    """The devices ``device`` may be by the code's own choice (``Value.chosen``)."""
    return device.where if device.chosen is None else device.chosen


def join_binding(a: Value, b: Value) -> Value:
    """What a name holds where two paths meet (``join``), except that a CUDA default the
    code replaced on some paths only by a value of unknown kind (``device =
    torch.device("cuda:0")``, then ``if big: device = model.hf_device_map["lm_head"]``)
    still reaches what follows on the others (DEV003; wanda, eval/blind113)."""
    device, other = (a, b) if a.kind is Kind.DEVICE else (b, a)
    if device.kind is Kind.DEVICE and device.cuda_defaults and other.kind is Kind.UNKNOWN:
        return Value(
            Kind.DEVICE,
            join_branches(device.where, None),
            cuda_defaults=device.cuda_defaults,
            placed=device.placed,
        )
    return join(a, b)


def joined_inference(a: Value, b: Value) -> Placement:
    """Where either side was inferred to be computed (``Value.computed_from``): a value
    that may be an unseen function's result stays an inference."""
    if a.computed_from is None and b.computed_from is None:
        return None
    return (a.computed_from or frozenset()) | (b.computed_from or frozenset())


def _joined_origins(a: Value, b: Value) -> tuple[cst.Call, ...]:
    """The CPU factories behind either side; a 0-dim side's (``torch.tensor(1.0)`` on one
    path, a computed loss on the other) mixes with any device, so it is not kept."""
    if a.origins is b.origins:
        return a.origins
    if a.scalar != b.scalar:
        return b.origins if a.scalar else a.origins
    return (*a.origins, *b.origins)


def _join_elements(
    a: tuple[Value, ...] | None, b: tuple[Value, ...] | None
) -> tuple[Value, ...] | None:
    """Two tuples of the same length join element by element; anything else is unknown."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(join(x, y) for x, y in zip(a, b, strict=True))


def _union(
    a: tuple[cst.BaseExpression, ...], b: tuple[cst.BaseExpression, ...]
) -> tuple[cst.BaseExpression, ...]:
    """Both tuples of nodes, each node once (by identity), in order."""
    if a is b or not b:
        return a
    return (*a, *(node for node in b if not any(node is seen for seen in a)))


def provenance(value: Value) -> tuple[Step, ...]:
    """How ``value`` got where it is: the factories that made it on the CPU by default
    (``origins``), then its placement steps."""
    made = tuple(
        Step(node, "tensor created on the CPU here (no `device=`)") for node in value.origins
    )
    return chain(made, value.placed)


def is_none(value: Value) -> bool:
    return value.kind is Kind.CONSTANT and value.constant is None


def describe_accelerator(where: Placement) -> str:
    """``cuda``, ``mps`` or ``an accelerator``: the accelerator a placement may be on."""
    accelerators = sorted((where or frozenset()) & ACCELERATORS)
    return accelerators[0] if len(accelerators) == 1 else "an accelerator"
