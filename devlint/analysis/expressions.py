"""The interpreter's expressions: names, attributes, strings, branches and containers.

Every expression's value is recorded (``Records.values``) for the rules; operators and
comparisons are ``operators.py``'s, calls ``calls.py``'s. ``not`` and conditional
expressions over availability tests compute guard values (``guards.py``).
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, cast

import libcst as cst

from devlint.analysis import guards, library_api, name_guesses, torch_api
from devlint.analysis.facts import Branch, Conditional
from devlint.analysis.interpreter import Interpreter, batch_of, element_of
from devlint.analysis.operators import FOLLOWING
from devlint.analysis.releases import version_test_answer
from devlint.analysis.syntax import (
    dotted_name,
    number_value,
    parameters,
    string_value,
    subscript_key,
)
from devlint.analysis.values import (
    ANY_DEVICE,
    CPU,
    CUDA,
    EMPTY,
    NAMESPACE,
    UNKNOWN,
    Kind,
    Placement,
    Step,
    Value,
    chain,
    is_index,
    is_none,
    join,
    join_placements,
    may_be_accelerator,
    placement_of_device_string,
)

_CONSTANT_NAMES = {"True": True, "False": False, "None": None}
_BUILTINS = frozenset(dir(builtins))


class Expressions:
    """Expression handlers (see the module docstring)."""

    def __init__(self, core: Interpreter) -> None:
        self.core = core

    def expr(self, node: cst.BaseExpression) -> Value:
        """The value of an expression, recorded for the rules (calls: ``calls.py``)."""
        kind = type(node)
        if kind is cst.Call:
            value = self.core.calls.call(node)  # type: ignore[arg-type]
        else:
            handler = _HANDLERS.get(kind)
            value = handler(self, node) if handler is not None else UNKNOWN
        self.core.rec.values[id(node)] = value
        return value

    def await_expression(self, node: cst.Await) -> Value:
        return self.expr(node.expression)

    def starred(self, node: cst.StarredElement) -> Value:
        return self.expr(node.value)

    def name(self, node: cst.Name) -> Value:
        if node.value in _CONSTANT_NAMES:
            return Value(Kind.CONSTANT, constant=_CONSTANT_NAMES[node.value])
        value = self.core.lookup(node.value)
        if value is None and self.core.imports.unresolved_stars and node.value not in _BUILTINS:
            self.core.imports.resolve_stars()
            value = self.core.lookup(node.value)
        if value is None:
            return self.star_imported(node.value)
        if value.kind is Kind.CONSTANT and node.value not in self.core.env:
            value = self.placeholder_flag(node.value, value)  # a module's, in a function
        elif value.kind is Kind.FUNCTION:
            self.core.name_reads[node.value] += 1
        elif value.kind is Kind.CLASS:
            self.core.class_reads[node.value] += 1
        elif value.kind is Kind.IMPORTED and value.qualname in self.core.imports.project_names:
            return self.project_value(value)  # ``from config import USE_CUDA``
        self.core.note_read(value)
        return value

    def placeholder_flag(self, key: str, placeholder: Value) -> Value:
        """``self.use_cuda = False`` read before the method that sets it only where CUDA is
        (its class's ``cuda()``), a module's ``initialized = False`` read in a function
        where another sets it (``global initialized``) only where CUDA is: the test, once
        that is known (``Branches.flag_set_with_cuda``; the placeholder joins it:
        ``values.join``). Until then the key is missed: the analysis runs once more."""
        flag = self.core.guard_attributes.get(key)
        if flag is None:
            self.core.missed_attributes.add(key)
            return placeholder
        return join(placeholder, flag)

    def project_value(self, imported: Value) -> Value:
        """What a project module's top-level name holds (a flag, a device), when its text
        tests availability; else the import itself (``project_imports.py``)."""
        qualname = imported.qualname or ""
        if qualname not in self.core.imports.project_values:
            found = self.core.imports.project_summary(qualname)
            held = found[0].names.get(found[1]) if found is not None else None
            usable = held is not None and held.kind not in (Kind.FUNCTION, Kind.CLASS)
            self.core.imports.project_values[qualname] = held if usable else None
        return self.core.imports.project_values[qualname] or imported

    def star_imported(self, name: str) -> Value:
        """An unbound name after ``from torch import *``: the last such module's (builtins
        such as ``range`` and ``print`` stay themselves); ``torch`` after a star import of
        user code that did not bind it (``name_guesses.STAR_EXPORTED_PACKAGES``)."""
        if self.core.imports.user_star and name in name_guesses.STAR_EXPORTED_PACKAGES:
            return Value(Kind.IMPORTED, qualname=name_guesses.STAR_EXPORTED_PACKAGES[name])
        if not self.core.imports.star_modules or name in _BUILTINS:
            return UNKNOWN
        module = name_guesses.star_import_source(name, self.core.imports.star_modules)
        return Value(Kind.IMPORTED, qualname=f"{module}.{name}")

    def string(self, node: cst.SimpleString) -> Value:
        text = string_value(node)
        if text is not None:
            where = placement_of_device_string(text)
            if where is not None:
                return Value(
                    Kind.DEVICE,
                    where,
                    constant=text,
                    cuda_defaults=self.unguarded(node, where),
                    placed=(Step(node, "device chosen here"),),
                )
        return _constant(text)

    def unguarded(
        self, node: cst.BaseExpression, where: Placement
    ) -> tuple[cst.BaseExpression, ...]:
        """``node`` when it names CUDA outside every guard (``Value.cuda_defaults``)."""
        return (node,) if where == CUDA and not self.core.ctx.guarded else ()

    def formatted_string(self, node: cst.FormattedString) -> Value:
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                self.expr(part.expression)
        head = node.parts[0] if node.parts else None
        if isinstance(head, cst.FormattedStringText) and head.value.startswith("cuda"):
            return Value(Kind.DEVICE, CUDA, cuda_defaults=self.unguarded(node, CUDA))
        return UNKNOWN

    def number(self, node: cst.Integer | cst.Float) -> Value:
        return _constant(number_value(node))

    def unary(self, node: cst.UnaryOperation) -> Value:
        inner = self.expr(node.expression)
        if type(node.operator) is cst.Not:
            return guards.negate(inner)
        if type(node.operator) is cst.Minus and inner.kind is Kind.CONSTANT:
            number = inner.constant
            if type(number) in (int, float):  # ``-1``: a constant too
                return Value(Kind.CONSTANT, constant=-number)  # type: ignore[operator]
        return inner if inner.kind is Kind.TENSOR else UNKNOWN

    def attribute(self, node: cst.Attribute) -> Value:
        key = dotted_name(node)
        known = self.known_attribute(node, key) if key is not None else None
        if known is not None:
            return known
        attr = node.attr.value
        if attr in ("type", "index"):
            # ``device.index``, ``torch.device("cuda").type``: reading what a device is
            # places nothing (its CUDA default is not in use here)
            reading, self.core.comparing = self.core.comparing, True
            base = self.expr(node.value)
            self.core.comparing = reading
            if base.kind is Kind.DEVICE:
                self.core.mark_reference(node.value)
        else:
            base = self.expr(node.value)
        if base.kind is Kind.IMPORTED and base.qualname:
            qualname = f"{base.qualname}.{attr}"
            if qualname in library_api.ACCELERATOR_DEVICE_ATTRIBUTES:
                return Value(Kind.DEVICE, ANY_DEVICE)  # ``accelerator.device``
            if qualname in torch_api.CUDA_AVAILABILITY_ATTRIBUTES:
                return guards.CUDA_AVAILABLE
            legacy = torch_api.legacy_tensor_type(qualname)
            if legacy is not None:
                return Value(Kind.TENSOR_TYPE, placement_of_device_string(legacy))
            return Value(Kind.IMPORTED, qualname=qualname)
        if attr == "is_cuda":
            return guards.ON_CUDA
        if base.kind in (Kind.TENSOR, Kind.MODULE):
            if attr == "device":
                return Value(Kind.DEVICE, base.where, placed=base.placed)
            if attr in torch_api.TENSOR_VIEW_ATTRIBUTES or (
                base.kind is Kind.TENSOR and attr not in torch_api.NON_TENSOR_ATTRIBUTES
            ):
                # ``x.T``, and the fields of a model's output (``out.logits``,
                # ``x.max(dim=1).values``): what a "tensor" value holds is on its device.
                return base.derived()
        if (
            base.kind is Kind.UNKNOWN
            and may_be_accelerator(base.where)
            and attr in torch_api.TENSOR_VIEW_ATTRIBUTES
        ):
            return Value(Kind.TENSOR, base.where)  # ``loss.data`` of a moved value: a tensor
        if base.kind is Kind.INSTANCE and base.qualname is not None:
            field = self.core.definitions.class_fields.get(base.qualname, {}).get(attr)
            if field is not None:
                return field  # ``config.device`` of ``device: str = "cuda"``
        if _holds_settings(node.value, base):
            if attr in self.core.option_defaults:  # ``args.device`` of ``--device``, default "cuda"
                return self.core.option_defaults[attr]
            self.core.missed_options.add(attr)  # its option may be registered later
            if key is not None and name_guesses.is_device_like_name(key):
                return Value(
                    Kind.DEVICE, ANY_DEVICE, chosen=frozenset()
                )  # ``self.device``, ``args.device``
        if attr == "device":
            return Value(Kind.DEVICE)  # the device of an unknown tensor: unknown
        return UNKNOWN

    def known_attribute(self, node: cst.Attribute, key: str) -> Value | None:
        """What the file bound to ``self.x`` / ``args.cuda`` (also through a star import, or
        a flag's alias); None, remembered as missed, when nothing is."""
        method_key = self.core.method_key(key)
        if method_key is not None:
            self.core.rec.attribute_loads[id(node)] = method_key
        known = self.core.lookup(key) or self.core.guard_attributes.get(key)
        if (
            known is None
            and self.core.imports.unresolved_stars
            and self.core.lookup(key.split(".")[0]) is None
        ):
            self.core.imports.resolve_stars()  # ``args.cuda`` of ``from utils import *``
            known = self.core.lookup(key)
        if known is None and self.core.guard_attributes:
            alias = name_guesses.aliased_flag(key, self.core.guard_attributes)
            known = self.core.guard_attributes[alias] if alias is not None else None
        if known is not None and known.kind is Kind.CONSTANT:
            known = self.placeholder_flag(key, known)  # ``self.use_cuda = False``
        if known is not None:
            self.core.note_read(known)
            return known
        self.core.missed_attributes.add(key)
        return None

    def subscript(self, node: cst.Subscript) -> Value:
        key = subscript_key(node)
        known = self.core.lookup(key) if key is not None else None
        if key is not None and known is None and "." in key:
            # ``self.opt["CUDA"]`` set from an availability test in another method
            known = self.core.guard_attributes.get(key)
            if known is None:
                self.core.missed_attributes.add(key)
        base = self.expr(node.value)
        index = UNKNOWN
        for element in node.slice:
            if isinstance(element.slice, cst.Index):
                index = self.expr(element.slice.value)
                self.core.operators.index_mix(node, base, element.slice.value, index)
            elif isinstance(element.slice, cst.Slice):
                for part in (element.slice.lower, element.slice.upper, element.slice.step):
                    if part is not None:
                        self.expr(part)
        if known is not None:
            return known  # ``cfg["cuda"]`` holding an availability test
        picked = _element_at(base, index) if len(node.slice) == 1 else None
        if picked is not None:
            return picked  # ``step(x)[0]`` of a function returning ``loss, acc``
        if base.kind is Kind.TENSOR:
            sliced = all(isinstance(element.slice, cst.Slice) for element in node.slice)
            if base.vector and not sliced and is_index(index):
                return element_of(base)  # ``direction[1]`` of a vector: a 0-dim tensor
            return replace(base, whole_batch=False, listed=base.listed and sliced)
        if base.kind is Kind.UNKNOWN and may_be_accelerator(base.where):
            # ``workspace.to(device)["critic"]``: what a moved container holds is there
            return Value(Kind.UNKNOWN, base.where, computed_from=base.computed_from)
        return UNKNOWN

    def inherited_flag(self, test: cst.BaseExpression) -> bool:
        """``self.use_cuda`` read in a method of a class whose base this file does not
        show, and never set here: the base may compute it from availability (ParlAI's
        agents), so it is no user option, and code under it is not unguarded."""
        ctx = self.core.ctx
        if type(test) is not cst.Attribute or ctx.function is None or not ctx.class_name:
            return False
        assert isinstance(test, cst.Attribute)
        params = ctx.function.params.params
        return (
            ctx.class_name in self.core.definitions.unseen_bases
            and type(test.value) is cst.Name
            and bool(params)
            and params[0].name.value == cast(cst.Name, test.value).value
            and self.core.lookup(dotted_name(test) or "") is None
        )

    def if_expression(self, node: cst.IfExp) -> Value:
        taken = version_test_answer(node.test, self.core.target_torch)
        if taken is not None:  # as for an ``if`` statement (branches.py): one side runs
            self.expr(node.test)
            return self.expr(node.body if taken else node.orelse)
        test = self.expr(node.test)
        ctx = self.core.ctx
        self.core.rec.conditionals[id(node)] = Conditional(
            node, test, ctx.backends_tested, None, self.core.site()
        )
        required, ids_test = self.core.cuda_required, guards.cuda_ids_test(node.test)
        placement, saved_env = guards.placement_test(node.test), self.core.env
        flag_key = guards.flag_test(node.test)
        sides = []
        for polarity, part in ((+1, node.body), (-1, node.orelse)):
            with self.core.scope(
                guarded=ctx.guarded
                or guards.may_guard_cuda(test, polarity)
                or (polarity > 0 and self.inherited_flag(node.test)),
                backends_tested=guards.tested_where_absent(ctx.backends_tested, test, polarity),
                branches=(*ctx.branches, Branch(node, part)),
            ):
                self.core.cuda_required = required or ids_test == polarity
                if placement is not None or flag_key is not None or polarity > 0:
                    self.core.env = dict(saved_env)
                    self.core.branches.refine(placement, polarity)
                    self.core.branches.follow_flag(
                        flag_key, polarity
                    )  # ``x.numpy() if not flag else ...``
                    if polarity > 0:
                        self.core.branches.drop_checked_default(node.test)
                sides.append(self.expr(part))
        self.core.env, self.core.cuda_required = saved_env, required
        body, orelse = sides
        body, orelse = _as_tensor_type(body, orelse), _as_tensor_type(orelse, body)
        self.core.rec.values[id(node.body)], self.core.rec.values[id(node.orelse)] = body, orelse
        flag = guards.conditional(test, body, orelse)  # ``True if avail else False``
        if flag is not None:
            return flag
        if is_none(body) or is_none(orelse):
            # ``torch.tensor(mean) if mean else None``: an optional value, used only where
            # it is not None (statements that bind None on one path stay unknown).
            return orelse if is_none(body) else body
        if body.kind is orelse.kind and body.kind in (Kind.DEVICE, Kind.TENSOR_TYPE):
            joined = replace(join(body, orelse), constant=None)
            if body.kind is Kind.DEVICE:
                joined = replace(joined, placed=(Step(node, "device chosen here"),))
            return joined
        joined = join(body, orelse)
        if (
            flag_key is not None
            and body.where != orelse.where
            and body.kind in FOLLOWING
            and orelse.kind in FOLLOWING
        ):
            # ``x.cuda() if args.cuda else x``: where the flag says, as after an ``if``
            holds, fails = (body, orelse) if flag_key[1] > 0 else (orelse, body)
            marks = (replace(holds, follows=None), replace(fails, follows=None))
            joined = replace(joined, follows=(flag_key[0], *marks))
        return joined

    def sequence(self, node: cst.Tuple | cst.List | cst.Set) -> Value:
        values = [self.expr(element.value) for element in node.elements]
        whole = self.container(values)
        if whole.kind is Kind.TENSOR and type(node) is not cst.Set:
            whole = replace(whole, listed=True)
        if (
            type(node) is not cst.Tuple
            or not any(value.kind is Kind.TENSOR or value.where for value in values)  # shapes
            or any(type(element) is cst.StarredElement for element in node.elements)
        ):
            return whole
        return replace(whole, elements=tuple(values))  # ``return loss, acc``

    def dictionary(self, node: cst.Dict) -> Value:
        values = []
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                key = self.expr(element.key)
                value = self.expr(element.value)
                if key.kind is Kind.DEVICE and key.where == CUDA and value.cuda_defaults:
                    # ``{"cuda:%d" % 0: "cuda:%d" % gpu}`` as a ``map_location``: storages
                    # saved on CUDA are renamed, nothing comes from the CPU (no default).
                    value = replace(value, cuda_defaults=())
            else:
                value = self.expr(element.value)
            values.append(value)
        return self.container(values)

    def container(self, values: Sequence[Value]) -> Value:
        """A literal list/tuple/dict: a tensor container when every element is a tensor;
        an empty one is of no kind yet (``EMPTY``), never a tensor."""
        if not values:
            return EMPTY
        if all(value.kind is Kind.TENSOR for value in values):
            where = join_placements(value.where for value in values)
            origins = tuple(origin for value in values for origin in value.origins)
            from_batch = all(v.from_batch for v in values)
            placed = chain(*(value.placed for value in values))
            return Value(Kind.TENSOR, where, from_batch=from_batch, origins=origins, placed=placed)
        if all(value.kind is Kind.DEVICE and value.where for value in values):
            # ``["cuda:0", "cpu"]``: one of these devices, each element (``for device in``)
            defaults = tuple(d for value in values for d in value.cuda_defaults)
            where = join_placements(value.where for value in values)
            return Value(Kind.DEVICE, where, cuda_defaults=defaults, elements=None)
        return UNKNOWN

    def comprehension(
        self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp
    ) -> Value:
        saved, required = self.core.env, self.core.cuda_required
        self.core.env = dict(saved)
        with self.core.scope():
            for_in: cst.CompFor | None = node.for_in
            while for_in is not None:
                iterable = self.expr(for_in.iter)
                element, _ = self.iteration_element(for_in.iter, iterable)
                self.bind_loop_target(for_in.target, for_in.iter, element)
                if guards.is_cuda_guard(iterable, +1):
                    self.core.narrow(guarded=True)  # ``[... for i in range(device_count())]``
                for condition in for_in.ifs:
                    self.comprehension_condition(condition.test)
                for_in = for_in.inner_for_in
            if isinstance(node, cst.DictComp):
                self.expr(node.key)
                element_value = self.expr(node.value)
            else:
                element_value = self.expr(node.elt)
        self.core.env, self.core.cuda_required = saved, required
        if element_value.kind is Kind.TENSOR:
            return Value(
                Kind.TENSOR,
                element_value.where,
                from_batch=element_value.from_batch,
                placed=element_value.placed,
                listed=type(node) is cst.ListComp,
            )
        return UNKNOWN

    def comprehension_condition(self, node: cst.BaseExpression) -> None:
        """A comprehension's ``if``: the element is computed only where it holds, as the
        body of an ``if`` statement (``[name(d) for d in devices if d.type == "cuda"]``)."""
        test = self.expr(node)
        if not self.core.ctx.guarded and (
            guards.may_guard_cuda(test, +1) or self.inherited_flag(node)
        ):
            self.core.narrow(guarded=True)
        if guards.cuda_ids_test(node) > 0:
            self.core.cuda_required = True
        placement = guards.placement_test(node)
        self.core.branches.refine(placement, +1)
        self.core.branches.guard_if_cuda_device(placement)

    def named_expression(self, node: cst.NamedExpr) -> Value:
        value = self.expr(node.value)
        self.core.bind(node.target, value)
        return value

    def lambda_expression(self, node: cst.Lambda) -> Value:
        saved, required = self.core.env, self.core.cuda_required
        self.core.env = dict(saved)
        for param in parameters(node.params):
            self.core.env[param.name.value] = UNKNOWN
        self.expr(node.body)
        self.core.env, self.core.cuda_required = saved, required
        return UNKNOWN

    def yield_expression(self, node: cst.Yield) -> Value:
        if isinstance(node.value, cst.BaseExpression):
            self.expr(node.value)
        elif isinstance(node.value, cst.From):
            self.expr(node.value.item)
        return UNKNOWN

    def concatenated_string(self, node: cst.ConcatenatedString) -> Value:
        self.expr(node.left)
        self.expr(node.right)
        return UNKNOWN

    def iteration_element(self, iterable: cst.BaseExpression, value: Value) -> tuple[Value, bool]:
        """The value of one element of ``iterable``, and whether it is a data loader."""
        inner = _unwrap_iteration(iterable)
        if inner is not iterable:
            return self.iteration_element(inner, self.core.rec.values.get(id(inner), UNKNOWN))
        name = dotted_name(iterable)
        if value.kind is Kind.LOADER or (
            value.kind is Kind.UNKNOWN
            and name is not None
            and name_guesses.is_loader_like_name(name)
        ):
            return batch_of(value, iterable), True
        if value.kind is Kind.UNKNOWN and type(iterable) is cst.Call:
            # ``metric_logger.log_every(data_loader, 10)``: a helper handed the loader,
            # iterated over, yields its batches.
            for arg in iterable.args:
                loader, is_loader = self.iteration_element(
                    arg.value, self.core.rec.values.get(id(arg.value), UNKNOWN)
                )
                if is_loader:
                    return loader, True
        return element_of(value), False

    def bind_loop_target(
        self, target: cst.BaseExpression, iterable: cst.BaseExpression, element: Value
    ) -> None:
        if type(iterable) is cst.Call and type(iterable.func) is cst.Name:
            function = iterable.func.value
            if function == "enumerate" and type(target) is cst.Tuple and len(target.elements) == 2:
                self.core.bind(target.elements[0].value, UNKNOWN)
                self.core.bind(target.elements[1].value, element)
                return
            if function == "zip" and type(target) is cst.Tuple:
                for item, arg in zip(target.elements, iterable.args, strict=False):
                    arg_value = self.core.rec.values.get(id(arg.value), UNKNOWN)
                    value, _ = self.iteration_element(arg.value, arg_value)
                    self.core.bind(item.value, value)
                return
        self.core.bind(target, element)


def _holds_settings(expr: cst.BaseExpression, value: Value) -> bool:
    """What ``parser.parse_args()`` returned, and ``self``, ``args``, ``config``...:
    objects whose ``.device`` is a chosen device."""
    if value.qualname == NAMESPACE:
        return True
    name = dotted_name(expr)
    return name is not None and name_guesses.holds_settings(name)


def _unwrap_iteration(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``enumerate(x)``, ``tqdm(x)``, ``iter(x)`` -> ``x`` (zip is handled by the caller)."""
    if type(expr) is cst.Call and expr.args and expr.args[0].keyword is None:
        name = dotted_name(expr.func)
        if name is not None and name.rsplit(".", 1)[-1] in name_guesses.ITERATION_WRAPPERS:
            return expr.args[0].value
    return expr


# The handler of each expression type but calls (``Expressions.expr``), as plain functions.
_HANDLERS: dict[type, Callable[[Expressions, Any], Value]] = {
    cst.Name: Expressions.name,
    cst.Attribute: Expressions.attribute,
    cst.SimpleString: Expressions.string,
    cst.FormattedString: Expressions.formatted_string,
    cst.Integer: Expressions.number,
    cst.Float: Expressions.number,
    cst.Subscript: Expressions.subscript,
    cst.BinaryOperation: lambda e, node: e.core.operators.binary_operation(node),
    cst.UnaryOperation: Expressions.unary,
    cst.BooleanOperation: lambda e, node: e.core.operators.boolean_operation(node),
    cst.Comparison: lambda e, node: e.core.operators.comparison(node),
    cst.IfExp: Expressions.if_expression,
    cst.Tuple: Expressions.sequence,
    cst.List: Expressions.sequence,
    cst.Set: Expressions.sequence,
    cst.Dict: Expressions.dictionary,
    cst.ListComp: Expressions.comprehension,
    cst.SetComp: Expressions.comprehension,
    cst.GeneratorExp: Expressions.comprehension,
    cst.DictComp: Expressions.comprehension,
    cst.NamedExpr: Expressions.named_expression,
    cst.Lambda: Expressions.lambda_expression,
    cst.Await: Expressions.await_expression,
    cst.Yield: Expressions.yield_expression,
    cst.StarredElement: Expressions.starred,
    cst.ConcatenatedString: Expressions.concatenated_string,
}


def _as_tensor_type(value: Value, other: Value) -> Value:
    """``torch.Tensor`` opposite a legacy tensor type is the (CPU) default type."""
    if other.kind is Kind.TENSOR_TYPE and value.qualname == torch_api.DEFAULT_TENSOR_TYPE:
        return Value(Kind.TENSOR_TYPE, CPU)
    return value


@functools.lru_cache(maxsize=4096, typed=True)  # ``typed``: ``1`` and ``1.0`` stay apart
def _constant(value: object) -> Value:
    """The value of a literal (values are immutable: one object per literal value)."""
    return Value(Kind.CONSTANT, constant=value)


def _element_at(base: Value, index: Value) -> Value | None:
    """The element of a literal tuple that a constant index (``[0]``, ``[-1]``) picks."""
    position = index.constant
    if base.elements is None or type(position) is not int:
        return None
    if not -len(base.elements) <= position < len(base.elements):
        return None
    return base.elements[position]
