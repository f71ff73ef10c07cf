from collections.abc import Iterator

import libcst as cst

from devlint import device_errors
from devlint.analysis.facts import AttributeStore, FileFacts
from devlint.analysis.values import Kind
from devlint.rule import Finding, FixPlan, Replace, Rule, literal_text, source_of


class UnregisteredTensorAttribute(Rule):
    """
    ## What it does
    Checks for `self.x = torch.tensor(...)` (or another plain factory: `zeros`,
    `ones`, `empty`, `full`, `arange`, `randn`, `rand`, `eye`) in the `__init__` of an
    `nn.Module`, neither an `nn.Parameter` nor a registered buffer, when `forward` uses
    `self.x`; moved there at once (`torch.tensor(...).to(device)`) too: the module's own
    moves still leave it behind. The legacy CPU constructors (`torch.Tensor(...)`,
    `torch.FloatTensor(...)`) make such tensors too, and so does a conditional expression
    on the side that calls a factory. An attribute that `__init__` replaces with something
    other than a tensor before it ends (`self.x = self.x.tolist()`) is not reported.

    ## Why is this bad?
    `model.to(device)` moves parameters and buffers only. The plain attribute stays on
    the CPU, and `forward` fails with a device mismatch on the GPU.

    ## Example
    ```python
    class Normalize(nn.Module):
        def __init__(self):
            super().__init__()
            self.mean = torch.tensor([0.485, 0.456, 0.406])

        def forward(self, x):
            return x - self.mean
    ```

    ## Use instead
    ```python
    class Normalize(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]), persistent=False)

        def forward(self, x):
            return x - self.mean
    ```

    ## Fix safety
    The fix registers a non-persistent buffer (`persistent=False`): it moves with the
    module but stays out of the `state_dict`, so the checkpoints the model writes keep
    their keys and earlier ones still load with `strict=True`. It is unsafe nonetheless:
    a buffer also follows the module's dtype casts (`model.half()` casts floating-point
    buffers), is listed by `named_buffers()` and is broadcast by
    `DistributedDataParallel`. Drop `persistent=False` where the tensor should be saved
    with the model.
    """

    code = "DEV014"
    name = "unregistered-tensor-attribute"
    summary = "A tensor attribute of an nn.Module that `model.to(device)` leaves behind"
    fix = "unsafe"
    virtual_note = (
        "operations check that their tensor inputs share one virtual device: Module.to leaves the "
        "plain attribute on the CPU"
    )
    runtime_errors = (device_errors.MIXED_DEVICES,)

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        last = _last_stores(facts)
        for store in facts.attribute_stores:
            if store.method != "__init__" or store.class_name not in facts.module_classes:
                continue
            value = store.value
            if value.kind is not Kind.TENSOR:
                continue
            final = last[(store.class_name, store.attribute)]
            if final.value.kind is not Kind.TENSOR:
                continue  # replaced before ``__init__`` ends (``.numpy().tolist()``)
            if _registered_under_another_name(store, facts):
                continue
            made = facts.named_factory_made(value)
            moved = not value.origins and facts.moved_factory(value, store)
            if not (made or moved):
                continue
            if (store.class_name, "forward", store.attribute) in facts.attribute_loads:
                behind = "where it was moved" if moved else "on the CPU"
                yield Finding(
                    store.target,
                    f"`self.{store.attribute}` is not a parameter or buffer; "
                    f"`model.to(device)` leaves it {behind}",
                    _fix(store, _init_of(store, facts) or _init_of_class(store, facts), facts),
                )


def _last_stores(facts: FileFacts) -> dict[tuple[str, str], AttributeStore]:
    """Each attribute's last store in its class's ``__init__``: what the other methods
    find there (NeRF++'s ``self.freq_bands = 2.0 ** torch.linspace(...)``, then
    ``self.freq_bands = self.freq_bands.numpy().tolist()``: a list, eval/blind163)."""
    return {
        (store.class_name, store.attribute): store
        for store in facts.attribute_stores
        if store.method == "__init__"
    }


def _registered_under_another_name(store: AttributeStore, facts: FileFacts) -> bool:
    """``self._min_std = torch.Tensor([m]).log()`` then ``self.register_buffer("min_std",
    self._min_std)`` (garage's ``GaussianMLPBaseModule``, eval/blind126): the tensor is
    registered, and the alias is the class's own to keep (its ``to()`` rebinds it)."""
    for call in facts.calls:
        if call.method not in ("register_buffer", "register_parameter"):
            continue
        if call.site.class_name != store.class_name:
            continue
        for arg in call.node.args:
            held = arg.value
            if (
                isinstance(held, cst.Attribute)
                and isinstance(held.value, cst.Name)
                and held.value.value == "self"
                and held.attr.value == store.attribute
            ):
                return True
    return False


def _init_of(store: AttributeStore, facts: FileFacts) -> cst.FunctionDef | None:
    """The ``__init__`` that made the value: the function its factory call ran in."""
    origins = {id(origin) for origin in store.value.origins}
    for call in facts.calls:
        if id(call.node) in origins and call.site.class_name == store.class_name:
            return call.site.function
    return None


def _init_of_class(store: AttributeStore, facts: FileFacts) -> cst.FunctionDef | None:
    """The ``__init__`` of the store's class, through a call made in it."""
    for call in facts.calls:
        function = call.site.function
        same_class = call.site.class_name == store.class_name
        if same_class and function is not None and function.name.value == "__init__":
            return function
    return None


def _fix(store: AttributeStore, init: cst.FunctionDef | None, facts: FileFacts) -> FixPlan | None:
    """``self.x = torch.ones(3)`` -> ``self.register_buffer("x", torch.ones(3), persistent=False)``;
    none where the value is a tensor on one path only (``1.0 if n else torch.ones(3)``:
    ``register_buffer`` refuses the float)."""
    if init is None:
        return None
    for statement in init.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            targets = small.targets if isinstance(small, cst.Assign) else ()
            if len(targets) == 1 and targets[0].target is store.target:
                assert isinstance(small, cst.Assign)
                if facts.value_of(small.value).kind is not Kind.TENSOR:
                    return None
                value = literal_text(source_of(small.value))
                text = f'self.register_buffer("{store.attribute}", {value}, persistent=False)'
                return FixPlan("Register it as a non-persistent buffer", (Replace(small, text),))
    return None
