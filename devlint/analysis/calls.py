"""The interpreter's calls: torch APIs, this file's functions and classes, modules called.

A call is recorded (``CallRecord``: callee, receiver, argument values, site) and given a
value. Torch APIs go through the semantics table (``torch_api.call_effect``): one handler
per effect, no API names here. Methods (``receiver.m(...)``: ``.to``, ``.cuda``, a
module's or a tensor's) are ``methods.py``'s. A module-level function of this file
is re-run at the call with the caller's arguments (bounded inlining: ``inlining.py``) to
learn what it returns; calling a module compares its inputs with its device (a ``Mix``).
"""

from __future__ import annotations

import libcst as cst

from devlint.analysis import guards, name_guesses, torch_api
from devlint.analysis.facts import CallRecord, Mix, Operand
from devlint.analysis.interpreter import Interpreter, batch_of
from devlint.analysis.methods import on_devices_of
from devlint.analysis.project_imports import CallerCall
from devlint.analysis.requirements import is_private, private_method
from devlint.analysis.syntax import (
    dotted_name,
    is_main_test,
    items_moved_in_place,
    lambda_moves,
)
from devlint.analysis.torch_api import Effect
from devlint.analysis.values import (
    CPU,
    CUDA,
    UNKNOWN,
    Kind,
    Step,
    Value,
    chain,
    follow_operands,
    join,
    may_be_accelerator,
)

# Builtins whose result is falsy exactly when their last argument, a count or flag, is.
_GUARD_PRESERVING = frozenset({"len", "range", "list", "tuple", "sorted", "bool", "min"})


class Calls:
    """Call handlers (see the module docstring)."""

    def __init__(self, core: Interpreter) -> None:
        self.core = core
        # function id -> its positional parameters whose items it moves in place
        self.moved_in_place: dict[int, dict[int, frozenset[str]]] = {}

    def call(self, node: cst.Call) -> Value:
        func = node.func
        callee_value, receiver, method = self.resolve_callee(func)
        args, keywords, starred = self.arguments(node, callee_value)
        imported = callee_value is not None and callee_value.kind is Kind.IMPORTED
        callee = callee_value.qualname if imported and callee_value is not None else None
        named = callee
        if (
            callee is None
            and type(func) is cst.Name
            and func.value in _RECORDED_BUILTINS
            and self.core.lookup(func.value) is None
        ):
            named = f"builtins.{func.value}"  # ``dict(device="cuda")``: a record
        record = CallRecord(node, named, method, receiver, tuple(args), keywords, self.core.site())
        self.core.rec.calls[id(node)] = record
        self.note_call(record, func)
        if method is not None and receiver is not None:
            own = self.core.methods.own_method(func, method)
            if own is not None and not starred:
                inlined = self.core.inlining.call(own, args, keywords, bound=1)
                if inlined is not UNKNOWN:
                    return inlined
            return self.core.methods.method_call(node, receiver, method, args, keywords)
        if (
            callee is None
            and type(func) is cst.Name
            and self.core.imports.star_origin(func.value, callee_value)
        ):
            self.note_project_call(func.value, node, args, keywords)  # ``Repack(n, True)``
        if callee is not None:
            unseen = True  # a function whose body devlint cannot read
            if self.core.imports.is_project_name(callee):
                self.note_project_call(callee, node, args, keywords)
                self.note_handed_placements(callee, node, args, keywords)
                returned, unseen = self.project_call(callee, args)
                if returned is not None:
                    return returned
            return self.library_call(node, callee, args, keywords, unseen)
        if named == "builtins.map" and (moved := self.applied_move(node)) is not None:
            return moved  # ``x, y = map(lambda t: t.to(device), batch)``
        if callee_value is None:
            return UNKNOWN
        return self.value_call(node, callee_value, args, keywords, starred)

    def resolve_callee(
        self, func: cst.BaseExpression
    ) -> tuple[Value | None, Value | None, str | None]:
        """What is called: the callee's value (a resolved name: ``torch.zeros``, a
        function of the file), or else the receiver and name of a method call."""
        if type(func) is not cst.Attribute:
            return self.core.expressions.expr(func), None, None
        assert isinstance(func, cst.Attribute)
        callee_value: Value | None = None
        receiver: Value | None = None
        method: str | None = None
        key = dotted_name(func)
        known = self.core.lookup(key) if key is not None else None
        if known is not None:
            callee_value = known
        else:
            receiver = self.core.expressions.expr(func.value)
            if receiver.kind is Kind.IMPORTED and receiver.qualname:
                qualname = f"{receiver.qualname}.{func.attr.value}"
                callee_value, receiver = Value(Kind.IMPORTED, qualname=qualname), None
            else:
                method = func.attr.value
        if callee_value is not None:
            self.core.rec.values[id(func)] = callee_value
        return callee_value, receiver, method

    def arguments(
        self, node: cst.Call, callee_value: Value | None
    ) -> tuple[list[Value], dict[str, Value], list[Value]]:
        """The call's positional, keyword and starred arguments, evaluated where they run:
        a test's skip mark first, since it decides whether the rest runs at all."""
        args: list[Value] = []
        keywords: dict[str, Value] = {}
        starred: list[Value] = []
        # ``torch.cuda.set_device(device)``, ``dist.init_process_group(device_id=device)``:
        # a torch API that computes nothing places nothing with the device it is given.
        reading, places_nothing = (
            self.core.comparing,
            (
                callee_value is not None
                and callee_value.kind is Kind.IMPORTED
                and callee_value.qualname is not None
                and not torch_api.places_by_keyword(callee_value.qualname)
            ),
        )
        self.core.comparing = reading or places_nothing
        marks = self.test_marks(node)  # evaluated first: they decide where the rest runs
        skipped = marks is not None and guards.is_cuda_guard(marks[1], +1)
        # No change, no new context: the site of every call in a block stays one object.
        changes = {"guarded": True} if skipped and not self.core.ctx.guarded else {}
        with self.core.scope(**changes):
            for arg in node.args:
                value = marks[1] if marks is not None and arg is marks[0] else None
                self.argument(arg, value, callee_value, args, keywords, starred)
        self.core.comparing = reading
        return args, keywords, starred

    def argument(
        self,
        arg: cst.Arg,
        value: Value | None,
        callee_value: Value | None,
        args: list[Value],
        keywords: dict[str, Value],
        starred: list[Value],
    ) -> None:
        """One argument of a call (evaluated here unless ``value`` is given) into
        ``args``, ``keywords`` or ``starred``."""
        if value is None:
            value = self.core.expressions.expr(arg.value)
        if (
            callee_value is None
            or callee_value.qualname is None
            or not (callee_value.qualname.startswith("torch."))
        ):
            self.core.note_read(value)  # ``attr.ib(default=torch.device("cuda"))``
        if arg.keyword is not None:
            keywords[arg.keyword.value] = value
        elif arg.star:
            starred.append(value)
        else:
            args.append(value)

    def test_marks(self, node: cst.Call) -> tuple[cst.Arg, Value] | None:
        """``marks=`` of ``pytest.param(torch.device("cuda"), marks=pytest.mark.skipif(not
        available))`` and its value: a guard where the case runs only with CUDA."""
        func = node.func
        name: str | None = None
        if type(func) is cst.Attribute:
            name = func.attr.value
        elif type(func) is cst.Name:
            name = func.value
        if name != "param" or dotted_name(func) not in ("pytest.param", "param"):
            return None
        arg = next((a for a in node.args if a.keyword and a.keyword.value == "marks"), None)
        if arg is None:
            return None
        marks = arg.value
        if isinstance(marks, cst.List | cst.Tuple):
            values = [self.core.expressions.expr(element.value) for element in marks.elements]
            guard = next((v for v in values if guards.is_cuda_guard(v, +1)), UNKNOWN)
            return arg, guard
        return arg, self.core.expressions.expr(marks)

    def project_call(self, callee: str, args: list[Value]) -> tuple[Value | None, bool]:
        """A function of a project module (``from utils import reduce_dict``): what it
        returns for any arguments, or on the device of the tensors it is given (None: not
        known); and whether its module is unseen (not found, or not read)."""
        on_inputs = on_devices_of(args)
        found = self.core.imports.project_summary(callee, may_be_accelerator(on_inputs.where))
        if found is None:
            return None, True
        summary, name = found
        returned = summary.returns.get(name)
        if returned is not None and returned != UNKNOWN:
            return returned, False
        if name in summary.follows_inputs and on_inputs.kind is Kind.TENSOR:
            return on_inputs, False
        return None, False

    def note_project_call(
        self, callee: str, node: cst.Call, args: list[Value], keywords: dict[str, Value]
    ) -> None:
        """In an entry script's caller analysis (``analyzer.caller_summary``): what this
        call of a project module's function passes, with the availability flags set on
        each argument that is a name (``args.cuda``). Not while inlining."""
        if self.core.imports.project_calls is None or self.core.returns is not None:
            return
        flags: dict[int | str, dict[str, Value]] = {}
        positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
        named = {arg.keyword.value: arg for arg in node.args if arg.keyword is not None}
        keyed: list[tuple[int | str, cst.Arg]] = [*enumerate(positional), *named.items()]
        for key, arg in keyed:
            holder = dotted_name(arg.value)
            prefix = f"{holder}."
            found = {
                name[len(prefix) :]: value
                for name, value in [*self.core.module_env.items(), *self.core.env.items()]
                if holder and name.startswith(prefix) and value.kind is Kind.GUARD
            }
            if found:
                flags[key] = found
        self.core.imports.project_calls.append(
            (callee, CallerCall(tuple(args), dict(keywords), flags))
        )

    def note_handed_placements(
        self, callee: str, node: cst.Call, args: list[Value], keywords: dict[str, Value]
    ) -> None:
        """The CUDA defaults this call hands, outside every guard, to parameters of a
        project function that places with them (``load_state_dict(path, location="cuda")``,
        ``ModuleSummary.placing_parameters``), for DEV003."""
        if self.core.ctx.guarded or self.core.returns is not None:
            return
        positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
        given = [
            (arg, value)
            for arg, value in (
                *zip(positional, args, strict=False),
                *((arg, keywords.get(arg.keyword.value)) for arg in node.args if arg.keyword),
            )
            if value is not None and value.kind is Kind.DEVICE and value.cuda_defaults
        ]
        found = self.core.imports.project_summary(callee, device_args=True) if given else None
        if found is None:
            return
        summary, name = found
        handed = []
        for index, parameter in summary.placing_parameters.get(name, ()):
            for arg, value in given:
                keyword = arg.keyword.value if arg.keyword is not None else None
                at = positional.index(arg) if keyword is None else -1
                if keyword == parameter or (keyword is None and at == index):
                    handed.append((arg.value, value, parameter))
        if handed:
            self.core.rec.handed_placements[id(node)] = tuple(handed)

    def note_call(self, record: CallRecord, func: cst.BaseExpression) -> None:
        """Remember calls of this file's functions, and the DEV011 candidates in them, for
        *CUDA required* (requirements.py). Not while inlining: those records are dropped."""
        if self.core.returns is not None:
            return
        function = record.site.function
        if record.method in torch_api.PLACING_METHODS and function is not None:
            self.core.definitions.placing_functions.add(id(function))
        definitions = self.core.definitions
        if type(func) is cst.Name and (
            func.value in definitions.function_defs
            or (func.value in definitions.class_parents and is_private(func.value))
        ):
            # a call of this file's function, or a construction of its private class
            self.core.local_calls.append((func.value, record.site, self.core.owner))
        elif record.method is not None and _calls_on_self(func):
            # ``self._helper(...)``: a call of the class's private method
            method = private_method(record.site.class_name, record.method)
            if method is not None:
                self.core.local_calls.append((method, record.site, self.core.owner))
        site = record.site
        if (
            record.callee in torch_api.CUDA_ONLY_CALLS
            and self.core.owner is not None
            and not (site.guarded or site.cuda_required)
        ):
            self.core.owned_records.append((record, self.core.owner))

    # -- torch APIs, through the semantics table

    def library_call(
        self,
        node: cst.Call,
        callee: str,
        args: list[Value],
        keywords: dict[str, Value],
        unseen: bool = True,
    ) -> Value:
        """A call of a function from elsewhere, through the semantics table; one the table
        does not know, given device tensors, computes there when its body is ``unseen``
        (another package's ``mse_loss(out, y)``, a project module not found): inferred,
        ``Value.computed_from``. A project function that was read and says nothing is
        unknown."""
        effect = torch_api.call_effect(callee)
        leaf = callee.rsplit(".", 1)[-1]
        if effect is not Effect.AVAILABILITY and (
            callee in self.core.guard_functions
            or leaf in self.core.guard_leaf_names
            or name_guesses.GUARD_FUNCTION_NAME.match(leaf)
        ):
            return guards.CUDA_AVAILABLE
        if effect is None and name_guesses.MPS_GUARD_FUNCTION_NAME.match(leaf):
            return guards.availability("mps")
        if effect is None and args and name_guesses.names_a_data_parallel(leaf):
            return Value(Kind.MODULE, args[0].where, qualname=torch_api.NAMED_DATA_PARALLEL)
        if effect is None and name_guesses.names_a_pipeline(callee):
            return Value(Kind.MODULE, qualname=torch_api.NAMED_PIPELINE)
        if effect is None and (moved := self.applied_move(node)) is not None:
            return moved
        if effect is None and callee in torch_api.HOST_ARGUMENT_CALLS:
            # a loss module of another package that takes its targets on the host
            # (``warpctc_pytorch.CTCLoss()``): named, so its calls know which
            return Value(Kind.MODULE, qualname=callee, stateless=True)
        if effect is None:
            on_inputs = on_devices_of(args).where
            built_on = keywords.get("device")
            if not may_be_accelerator(on_inputs) and built_on and built_on.kind is Kind.DEVICE:
                on_inputs = built_on.where  # ``TensorDict(..., device=device)``
            if not unseen or not may_be_accelerator(on_inputs):
                return UNKNOWN  # the guess about unseen functions: see ``name_guesses``
            return Value(Kind.UNKNOWN, on_inputs, computed_from=on_inputs)
        return self.core.effects.apply(effect, node, callee, args, keywords)

    def applied_move(self, node: cst.Call) -> Value | None:
        """An unseen function handed data and a lambda that moves its argument returns
        the data moved (``dict_apply(batch, lambda x: x.to(device))``, ``map_structure``,
        ``tree_map``), as ``map`` does: where the lambda's move puts it."""
        moved: Value | None = None
        for move in lambda_moves(node):
            value = self.core.rec.values.get(id(move))
            if value is None or value.where is None:
                return None
            moved = value if moved is None else join(moved, value)
        return Value(Kind.TENSOR, moved.where, placed=moved.placed) if moved is not None else None

    # -- this file's functions, classes and callable values

    def value_call(
        self,
        node: cst.Call,
        callee: Value,
        args: list[Value],
        keywords: dict[str, Value],
        starred: list[Value],
    ) -> Value:
        function = node.func.value if type(node.func) is cst.Name else None
        if function in ("all", "any") and callee.kind is Kind.UNKNOWN and len(node.args) == 1:
            tested = node.args[0].value
            if isinstance(tested, cst.GeneratorExp | cst.ListComp):
                # ``all(d.type == "cuda" for d in devices)``: each element a device test, so
                # where it holds, CUDA is (one element of ``any``; all of ``all``)
                element = self.core.rec.values.get(id(tested.elt), UNKNOWN)
                if element.kind is Kind.GUARD:
                    return element
        if function in _GUARD_PRESERVING and args and args[-1].kind is Kind.GUARD:
            # ``len(torch.cuda.default_generators) > 0``; ``list(range(device_count()))``
            # is empty exactly where CUDA is absent, so it tests and iterates like the count.
            return args[-1]
        if callee.kind is Kind.CLASS:
            if function is not None:
                self.core.name_calls[function] += 1
            return self.instantiate(callee, args, keywords)
        if callee.kind is Kind.TENSOR_TYPE:
            return Value(Kind.TENSOR, callee.where)  # ``Tensor(3, 4)`` of a legacy type
        leaf = (dotted_name(node.func) or "").rsplit(".", 1)[-1]
        if leaf in name_guesses.LOADER_WRAPPERS and node.args and callee.kind is not Kind.MODULE:
            return self.core.effects.wrapped_loader(node)  # a local ``tqdm`` stand-in, say
        if leaf == "next" and args and args[0].kind is Kind.LOADER:
            return batch_of(args[0], node)  # ``images, labels = next(iter(loader))``
        if leaf == "enumerate" and args and args[0].kind is Kind.LOADER:
            return args[0]  # ``_, (x, y) = next(enumerate(loader))``: the index goes along
        if callee.kind is Kind.FUNCTION:
            return self.function_call(node, callee, args, keywords, starred)
        if callee.kind is Kind.IMPORTED:
            # one of several imported callables (``F.cross_entropy if raw else mix_loss``):
            # what an unknown callable would return; a single one is a library's
            return self.module_call(node, callee) if callee.qualname is None else UNKNOWN
        if function == "isinstance" and guards.cuda_type_test(node) is not None:
            return guards.ON_CUDA  # ``isinstance(x, torch.cuda.FloatTensor)``: ``x.is_cuda``
        if function == "int" and callee.kind is Kind.UNKNOWN:
            return Value(Kind.INTEGER)  # ``int(os.environ["LOCAL_RANK"])``
        if function == "str" and args and args[0].kind is Kind.DEVICE:
            return args[0]  # ``str(device)``: the same device, as a string
        if function in torch_api.NON_TENSOR_BUILTINS and callee.kind is Kind.UNKNOWN:
            return UNKNOWN  # ``len(batch)``: an int, not a result on the batch's device
        return self.module_call(node, callee)

    def instantiate(self, callee: Value, args: list[Value], keywords: dict[str, Value]) -> Value:
        """An instance of a class defined in this file: a module (on the default device
        where ``module_classes.py`` sees it built there), or an object (a dataset's
        placement is where its items are: ``datasets.py``). An object whose class has a
        base this file cannot see (``class G(models.Generator):``) is of unknown kind."""
        core = self.core
        if callee.qualname is None:
            return UNKNOWN  # ``Model = GPT if fine else FineGPT``: one of several classes
        if core.returns is None and not self.in_self_test():
            constructed = core.definitions.constructor_args.setdefault(callee.qualname, [])
            constructed.append((tuple(args), dict(keywords)))
        wrapper = core.definitions.scattering_classes.get(callee.qualname)
        if wrapper is not None and args:
            # ``CustomDataParallel(NetLoss(net))`` (yolact, eval/blind164): the wrapper it
            # subclasses, around the module where that is
            return Value(Kind.MODULE, args[0].where, qualname=wrapper)
        if callee.qualname in core.definitions.module_classes:
            stateless = callee.qualname in core.definitions.stateless_classes
            where = core.default_device
            module = Value(Kind.MODULE, where, qualname=callee.qualname, stateless=stateless)
            return core.module_classes.instance(module, args, keywords)
        instance = core.datasets.instance(
            Value(Kind.INSTANCE, qualname=callee.qualname), args, keywords
        )
        if instance.kind is Kind.INSTANCE and callee.qualname in core.definitions.unseen_bases:
            return UNKNOWN  # a base this file cannot see may make it a module (or a tensor)
        return instance

    def in_self_test(self) -> bool:
        """Module-level code under ``if __name__ == "__main__":``: a library module's own
        demonstration (``SegmentationLosses(cuda=True)``), not how the code that imports
        it constructs its classes (not while inlining either); unless the block parsed the
        command line before: then it is how the program runs (TuckER's ``main.py``:
        ``Experiment(cuda=args.cuda)``, eval/blind149)."""
        ctx = self.core.ctx
        return (
            ctx.function is None
            and not self.core.parses_command_line
            and any(
                type(branch.node) is cst.If and is_main_test(branch.node.test)
                for branch in ctx.branches
            )
        )

    def function_call(
        self,
        node: cst.Call,
        callee: Value,
        args: list[Value],
        keywords: dict[str, Value],
        starred: list[Value],
    ) -> Value:
        core, definitions = self.core, self.core.definitions
        name = callee.qualname or ""
        if name in core.guard_leaf_names or name_guesses.GUARD_FUNCTION_NAME.match(name):
            return guards.CUDA_AVAILABLE
        if type(node.func) is cst.Name:
            core.name_calls[node.func.value] += 1
        if starred:
            return UNKNOWN
        if name not in definitions.function_defs and name in definitions.imported_returns:
            return definitions.imported_returns[name]  # a star-imported project module's function
        if core.returns is None:  # not while inlining
            definitions.call_args.setdefault(name, []).append((tuple(args), dict(keywords)))
        function = definitions.function_defs.get(name)
        result = self.core.inlining.call(function, args, keywords)
        if function is not None and any(arg.from_batch for arg in args):
            self.batch_moved_in_place(node, function, args)
        return result

    def batch_moved_in_place(
        self, node: cst.Call, function: cst.FunctionDef, args: list[Value]
    ) -> None:
        """``input_cuda(batch)`` whose body runs ``batch["x"] = batch["x"].cuda()``: the
        batch it is given is moved in place (to CUDA, or where ``.to(...)`` sends it: not
        known here), no longer the loader's CPU batch (fastMRI's ``RunInference.py``)."""
        key = id(function)
        if key not in self.moved_in_place:
            self.moved_in_place[key] = items_moved_in_place(function)
        for index, methods in self.moved_in_place[key].items():
            if index < len(args) and index < len(node.args) and args[index].from_batch:
                target = node.args[index].value
                if type(target) is cst.Name and node.args[index].keyword is None:
                    where = CUDA if methods == {"cuda"} else None
                    self.core.bind(target, Value(Kind.TENSOR, where))

    def module_call(self, node: cst.Call, callee: Value) -> Value:
        """Calling a module (or a value of unknown kind): its inputs meet its device."""
        inputs = [
            (arg.value, self.core.rec.values.get(id(arg.value), UNKNOWN)) for arg in node.args
        ]
        imported = callee.kind is Kind.IMPORTED  # one of several functions from elsewhere
        if (callee.kind is Kind.UNKNOWN or imported) and callee.where is None:
            # An unknown callable (a parameter ``model``, ``self.net``): a loss-like name
            # combines its inputs; anything else returns a result on their device.
            callee_name = dotted_name(node.func) or ""
            if name_guesses.names_a_class(callee_name):
                return UNKNOWN  # ``cls(config)``, ``ModelClass(checkpoint["args"])``: an object
            if name_guesses.is_loss_like_name(callee_name):
                return self.core.operators.combine(node, inputs)
            if not name_guesses.follows_its_inputs(callee_name):
                return UNKNOWN  # ``convert2cpu(x)``
            known = [  # a value of unknown kind moved with ``.to(device)`` counts too, but
                # a function from elsewhere given a moved model is no model computing there
                v.where
                for _, v in inputs
                if (v.kind is Kind.TENSOR or (v.kind is Kind.UNKNOWN and not imported)) and v.where
            ]
            where = frozenset().union(*known)
            # Given only CPU tensors, its result is where the callable is, which is not
            # known (a model on the GPU wrapped in ``DataParallel`` takes CPU batches).
            if not may_be_accelerator(where):
                return UNKNOWN
            followed = [v for _, v in inputs if v.kind in (Kind.TENSOR, Kind.UNKNOWN)]
            placed = chain(*(v.placed for v in followed if may_be_accelerator(v.where)))
            computed = (Step(node, "computed from them here"),) if placed else ()
            # computed only from what unseen functions returned: still an inference
            inferred = where if all(v.computed_from for v in followed if v.where) else None
            return follow_operands(
                Value(Kind.TENSOR, where, placed=chain(placed, computed), computed_from=inferred),
                followed,
            )
        if callee.kind not in (Kind.MODULE, Kind.UNKNOWN, Kind.TENSOR):
            return UNKNOWN
        if callee.kind is Kind.UNKNOWN and callee.computed_from:
            # An object an unseen function built (``load_model(name, device=device)``):
            # it computes where it was built, inferred; what it takes is its own affair.
            return Value(Kind.UNKNOWN, callee.where, computed_from=callee.computed_from)
        if callee.qualname in torch_api.HOST_ARGUMENT_CALLS:  # ``nn.CTCLoss()(log_probs, ...)``
            inputs = inputs[: torch_api.HOST_ARGUMENT_CALLS[callee.qualname]]
        if callee.stateless or callee.where is None:
            return self.core.operators.combine(node, inputs)
        if _moves_its_inputs(callee):
            return Value(Kind.TENSOR, callee.where)  # scattered from any device to CUDA
        tensors = [(n, v) for n, v in inputs if v.kind is Kind.TENSOR]
        if callee.from_caller and any(may_be_accelerator(v.where) for _, v in tensors):
            # An object of unknown kind that the caller moved and passed (a model of a class
            # from elsewhere), given batch elements moved to the device and others left: it
            # takes those as they are (captions it tokenizes itself, BLIP's
            # ``model(image, caption)``).
            tensors = [(n, v) for n, v in tensors if not (v.from_batch and v.where == CPU)]
        if tensors:
            operands = (
                Operand(None, Value(Kind.MODULE, callee.where, placed=callee.placed)),
                *(Operand(n, v) for n, v in tensors),
            )
            self.core.rec.mixes[id(node)] = Mix(node, operands, self.core.site())
        computed = (Step(node, "computed by the model here"),) if callee.placed else ()
        result = Value(Kind.TENSOR, callee.where, placed=chain(callee.placed, computed))
        return follow_operands(result, [callee])  # where the module is


def _moves_its_inputs(callee: Value) -> bool:
    """A wrapper that moves its inputs to its CUDA devices (``nn.DataParallel``), also
    where a flag chose it (``if args.cuda: model = DataParallel(model).cuda()``): the
    other side of the flag is the model as it was. A diffusion pipeline moves them to
    whatever device it runs on."""
    sides = (callee, *callee.follows[1:]) if callee.follows is not None else (callee,)
    return any(
        side.qualname == torch_api.NAMED_PIPELINE
        or (side.qualname in torch_api.INPUT_MOVING_WRAPPERS and "mps" not in (side.where or ()))
        for side in sides
    )


def _calls_on_self(func: cst.BaseExpression) -> bool:
    """``self.m`` as the function of a call."""
    return (
        type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self"
    )


_RECORDED_BUILTINS = frozenset({"dict", "map"})
