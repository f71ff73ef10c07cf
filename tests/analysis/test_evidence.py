"""Issue 27, "evidence, not guesses": what the analysis does not know stays unknown.

A line ``probe(EXPR)  # kind where`` asks for EXPR's kind and the devices it may be on
there (``unknown`` for either: the analysis must not claim to know); ``# guarded`` /
``# unguarded`` after a call asks whether it runs only where CUDA is available.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from devlint.analysis import analyze
from devlint.analysis.facts import version_test_answer
from devlint.engine import CheckOptions, check_text
from devlint.positions import positions_of

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

MARK = re.compile(r"#\s*(?P<kind>[a-z]+)\s+(?P<where>[a-z, ]+)$")


def probed(source: str) -> list[tuple[int, str, str]]:
    """(line, what the analysis says, what the mark says) for each probe."""
    source = textwrap.dedent(source).lstrip()
    module = cst.parse_module(source)
    facts = analyze(module)
    positions = positions_of(module)
    lines = source.splitlines()
    found = []
    for call in facts.calls:
        node = call.node
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            row = positions[node].start.line
            value = facts.value_of(node.args[0].value)
            where = (
                "unknown" if value.where is None else ", ".join(sorted(value.where)) or "nowhere"
            )
            mark = MARK.search(lines[row - 1])
            assert mark, f"line {row} has no '# kind where' mark"
            expected_where = ", ".join(sorted(mark["where"].replace(" ", "").split(",")))
            found.append((row, f"{value.kind.value} {where}", f"{mark['kind']} {expected_where}"))
    assert found, "no probes"
    return found


CASES = {
    "a_test_parametrized_over_a_list_of_devices_gets_one_of_them": """
        import pytest
        import torch

        devices = ["cpu"]
        if torch.cuda.is_available():
            devices.append("cuda")
        probe(devices)  # device cpu, cuda

        @pytest.mark.parametrize("device", devices)
        def test_ones(device):
            probe(device)  # device cpu, cuda

        @pytest.mark.parametrize("device", ["cpu", "mps"])
        def test_literal(device):
            probe(device)  # device cpu, mps

        @pytest.mark.parametrize("dtype", [torch.float32])
        def test_dtypes(device, dtype):
            probe(device)  # device cpu, cuda, mps
    """,
    "a_library_data_loader_yields_its_datasets_items": """
        import torch
        from speechbrain.dataio.dataloader import SaveableDataLoader

        dataset = torch.randn(10, 1).cuda()
        probe(next(iter(SaveableDataLoader(dataset, collate_fn=None))))  # tensor cuda
    """,
    "a_pipeline_output_holds_images_not_tensors": """
        import torch
        from diffusers import StableDiffusionPipeline

        pipe = StableDiffusionPipeline.from_pretrained("x").to("cuda")
        out = pipe("a cat")
        probe(out.images[0])  # unknown unknown
        probe(out.frames)  # unknown unknown
    """,
    "isinstance_of_a_host_type_knows_no_tensor_in_its_body": """
        import numpy as np
        import torch

        def f(x, y):
            wav = torch.randn(2).cuda()
            x = torch.as_tensor(x).cuda()
            if isinstance(wav, (str, np.ndarray)):
                probe(wav)  # unknown unknown
            probe(wav)  # tensor cuda
            if isinstance(wav, (list, tuple)):  # the outputs of a model may be a tuple
                probe(wav)  # tensor cuda
            moved = y if y is not None else torch.randn(2).cuda()
            if isinstance(moved, list):
                probe(moved)  # unknown unknown
            if isinstance(x, torch.Tensor):
                probe(x)  # tensor cuda
    """,
    "module_instances_need_evidence_of_cpu_parameters": """
        import torch
        from torch import nn

        class Layered(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)

        class Derived(Layered):
            pass

        class Conv(nn.Conv2d):
            pass

        class Holder(nn.Module):
            def __init__(self, parts):
                super().__init__()
                self.parts = parts

        class Computes(nn.Module):
            def __init__(self, k=3):
                super().__init__()
                self.k = k

        parts = nn.ModuleDict()
        parts["a"] = nn.Linear(2, 2).cuda()
        probe(Layered())  # module cpu
        probe(Derived())  # module cpu
        probe(Conv(1, 1, 1))  # module cpu
        probe(Holder(parts))  # module unknown
        probe(Holder(nn.Linear(2, 2).cuda()))  # module unknown
        probe(Computes())  # module unknown
    """,
    "a_class_with_a_base_this_file_cannot_see_may_be_a_module": """
        import argparse

        import models
        import torch

        class Generator(models.FlowGenerator):
            pass

        class Meter:
            pass

        class Options(argparse.Namespace):
            pass

        probe(Generator(1, 2))  # unknown unknown
        probe(Generator(1, 2).cuda())  # unknown cuda
        probe(Meter())  # instance unknown
        probe(Options())  # instance unknown
    """,
    "empty_containers_hold_what_is_put_in_them": """
        import torch
        from torch import nn

        models = {}
        models["g"] = nn.Linear(2, 2)
        probe(models)  # unknown unknown
        outs = []
        for i in range(3):
            outs.append(torch.zeros(2).cuda())
        probe(outs)  # tensor cuda
        losses = {}
        losses["g"] = torch.ones(1).cuda()
        probe(losses)  # tensor cuda
        heads = []
        heads.append(nn.Linear(2, 2))
        probe(heads)  # unknown unknown
        probe([])  # unknown nowhere
    """,
    "with_a_device_context_factories_land_there": """
        import torch
        from torch import nn

        with torch.device("cuda"):
            probe(torch.zeros(2))  # tensor cuda
            probe(nn.Linear(2, 2))  # module cuda
        with torch.device("meta"):
            probe(torch.zeros(2))  # tensor unknown
        probe(torch.zeros(2))  # tensor cpu
        probe(nn.Linear(2, 2))  # module cpu
        probe(nn.Linear(2, 2, device=dev))  # module unknown
    """,
    "after_set_default_device_factories_are_anywhere": """
        import torch
        from torch import nn

        probe(torch.zeros(2))  # tensor unknown
        probe(nn.Linear(2, 2))  # module unknown
        probe(torch.zeros(2, device="cpu"))  # tensor cpu

        def setup(device):
            torch.set_default_device(device)
    """,
    "placement_follows_the_flag_that_moved_it": """
        import torch

        def run(x: torch.Tensor, flag, other):
            x = torch.zeros(2)
            if flag:
                x = x.cuda()
            probe(x)  # tensor cpu, cuda
            probe(x if not flag else None)  # tensor cpu
            probe(x if flag else None)  # tensor cuda
            if not flag:
                probe(x)  # tensor cpu
            else:
                probe(x)  # tensor cuda
            if other:
                probe(x)  # tensor cpu, cuda
            probe(x)  # tensor cpu, cuda
            if not flag:
                return None
            probe(x)  # tensor cuda

        def train(criterion, args):
            if args.cosub:
                criterion = torch.nn.BCEWithLogitsLoss()
            if not args.cosub:
                probe(criterion)  # unknown unknown
            else:
                probe(criterion)  # module cpu
    """,
    "loaders_over_moved_graphs_batch_on_the_device": """
        import torch
        from torch_geometric.loader import NeighborLoader
        from torch.utils.data import DataLoader

        data = dataset[0].to(device, "x", "y")
        for batch in NeighborLoader(data, num_neighbors=[10]):
            probe(batch.y)  # tensor cpu, cuda, mps
        for batch in DataLoader(dataset[0]):
            probe(batch)  # tensor cpu
    """,
    "a_device_replaced_where_cuda_is_absent_is_either": """
        import torch

        device = torch.device("cuda")
        if not torch.cuda.is_available():
            device = torch.device("cpu")
        probe(device)  # device cpu, cuda
        x = torch.ones(2).to(device)
        if device.type != "cpu":
            x = x.cpu()
        probe(x)  # tensor cpu
    """,
    "accelerate_places_what_it_prepares": """
        import torch
        from accelerate import Accelerator
        from torch.utils.data import DataLoader
        from models import Transformer

        accelerator = Accelerator()
        probe(accelerator.device)  # device cpu, cuda, mps
        model, optim, loader = accelerator.prepare(
            Transformer(), torch.optim.Adam(params), DataLoader(dataset)
        )
        probe(model)  # unknown cpu, cuda, mps
        probe(accelerator.unwrap_model(model))  # unknown cpu, cuda, mps
        for batch in accelerator.skip_first_batches(loader, 3):
            probe(batch)  # tensor cpu, cuda, mps
        net = accelerator.prepare(torch.nn.Linear(2, 2))
        probe(net)  # module cpu, cuda, mps
        probe(Transformer())  # unknown unknown
    """,
    "a_device_index_appended_to_a_string_is_that_device": """
        import torch

        rank = int(input())
        probe("cuda:" + str(rank))  # device cuda
        probe("cpu" + "x")  # unknown unknown
        probe(str(torch.device("cuda")))  # device cuda
    """,
    "dgl_loaders_make_batches_on_their_device": """
        import torch
        from dgl.dataloading import DataLoader, NeighborSampler

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        loader = DataLoader(graph, train_idx, NeighborSampler([10]), device=device)
        for input_nodes, output_nodes, blocks in loader:
            probe(blocks)  # tensor cpu, cuda
    """,
    "a_collate_function_that_moves_puts_batches_on_its_device": """
        import torch
        from torch.utils.data import DataLoader

        def batcher(device):
            def collate(items):
                return torch.stack(items).to(device)
            return collate

        def pad(items):
            return torch.stack(items)

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        for batch in DataLoader(dataset, collate_fn=batcher(device)):
            probe(batch)  # tensor cpu, cuda
        for batch in DataLoader(dataset, collate_fn=pad):
            probe(batch)  # tensor cpu
    """,
    "a_classs_own_methods_run_with_their_arguments": """
        import torch
        import torch.nn.functional as F
        from model import Net

        class Solver:
            def __init__(self, count: int):
                self.count = count
                self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                self.net = Net().to(self.device)
                self.stats = {"min": torch.zeros(5)}

            def loss(self, logits, target, kind="ce"):
                if kind == "ce":
                    return F.cross_entropy(logits, target)
                elif kind == "nll":
                    return F.nll_loss(logits, target)

            def normalize(self, data, stats):
                return data - stats["min"]

            def penalty(self, out, x):
                return torch.autograd.grad(outputs=out, inputs=x, create_graph=True)[0]

            def step(self, x, y):
                x, y = x.to(self.device), y.to(self.device)
                out = self.net(x)
                probe(self.loss(out, y))  # tensor cpu, cuda
                probe(self.normalize(x, self.stats))  # tensor cpu, cuda
                probe(self.penalty(out, x))  # tensor cpu, cuda
                probe(torch.tensor(self.count))  # tensor cpu
    """,
    "an_operation_over_moved_values_is_a_tensor_where_they_are": """
        import torch

        def adapt(batch, learner, loss, device):
            data, labels = batch
            data, labels = data.to(device), labels.to(device)
            probe(loss(learner(data), labels))  # tensor cpu, cuda, mps
            probe(labels * 2)  # tensor cpu, cuda, mps
            probe(batch[0] * 2)  # unknown unknown
    """,
    "a_value_none_on_one_path_is_the_other_paths_where_used": """
        import torch
        from accelerate import Accelerator

        accelerator = Accelerator()
        loader = make_loader()
        if loader is None:
            model = accelerator.prepare(model)
        else:
            model, loader = accelerator.prepare(model, loader)
        probe(loader)  # unknown cpu, cuda, mps
        stats = None
        if flag:
            stats = torch.zeros(3)
        probe(stats)  # tensor cpu
    """,
    "lightning_places_what_it_sets_up": """
        import lightning as L
        import torch

        fabric = L.Fabric(accelerator="auto")
        probe(fabric.device)  # device cpu, cuda, mps
        model, optimizer = fabric.setup(Net(), torch.optim.SGD(params))
        probe(model)  # unknown cpu, cuda, mps
        loader = fabric.setup_dataloaders(torch.utils.data.DataLoader(dataset))
        for batch in loader:
            probe(batch)  # tensor cpu, cuda, mps
    """,
    "a_lightning_object_handed_to_a_function_still_places": """
        import lightning as L
        import torch

        def setup():
            fabric = L.Fabric(devices=1, strategy="auto")
            main(fabric, "data/")

        def main(fabric, data_dir):
            loader = fabric.setup_dataloaders(torch.utils.data.DataLoader(data_dir))
            for batch in loader:
                probe(batch)  # tensor cpu, cuda, mps
    """,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_facts_at_probes(name: str) -> None:
    for row, actual, expected in probed(CASES[name]):
        assert actual == expected, f"line {row}: {actual} != {expected}"


def test_flags_set_in_each_branch_of_an_availability_test_are_guards() -> None:
    """``if avail: use_cuda = 1 else: use_cuda = 0`` (pytorch-YOLOv4): ``use_cuda`` is
    the test, as ``use_cuda = 1 if avail else 0`` is; a user's option stays one."""
    source = textwrap.dedent(
        """
        import torch
        if torch.cuda.is_available():
            use_cuda = 1
        else:
            use_cuda = 0
        on_gpu = False
        if torch.cuda.device_count() > 0:
            on_gpu = True
        if opt.cuda:
            flag = True
        else:
            flag = False
        if use_cuda:
            a = torch.zeros(1).cuda()
        if on_gpu:
            b = torch.zeros(1).cuda()
        if flag:
            c = torch.zeros(1).cuda()
        """
    )
    facts = analyze(cst.parse_module(source))
    cuda_calls = [c for c in facts.calls if c.method == "cuda"]
    assert [c.site.guarded for c in cuda_calls] == [True, True, False]


def test_a_cuda_default_checked_against_availability_is_not_one() -> None:
    """``torch.device(args.device if torch.cuda.is_available() or args.device == "cpu"
    else "cpu")``: the ``--device`` default ``"cuda"`` is used only where CUDA is there;
    ``torch.device("cuda").type`` compares a type and places nothing."""
    source = textwrap.dedent(
        """
        import argparse
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--device", default="cuda")
        args = parser.parse_args()
        device = torch.device(args.device if torch.cuda.is_available() or args.device == "cpu" else "cpu")
        other = torch.device(args.device)
        same = device.type == torch.device("cuda").type
        """
    )
    module = cst.parse_module(source)
    facts = analyze(module)
    devices = [call for call in facts.calls if call.callee == "torch.device" and call.args]
    assert [bool(call.args[0].cuda_defaults) for call in devices[:2]] == [False, True]
    assert [call.reference_only for call in devices] == [False, False, True]


def test_a_setting_overridden_where_cuda_is_absent_tests_availability() -> None:
    """``if not torch.cuda.is_available(): args.mode = "cpu"`` (DGL's examples): past it,
    ``args.mode == "puregpu"`` or ``args.mode != "cpu"`` implies CUDA; another value's
    test (``args.mode != "mixed"``) does not, nor does one before the override."""
    source = textwrap.dedent(
        """
        import argparse
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--mode", default="mixed")
        args = parser.parse_args()
        before = torch.zeros(1).cuda() if args.mode != "cpu" else None
        if not torch.cuda.is_available():
            args.mode = "cpu"
        a = torch.zeros(1).cuda() if args.mode == "puregpu" else None
        b = torch.zeros(1).cuda() if args.mode != "cpu" else None
        c = None if args.mode == "cpu" else torch.zeros(1).cuda()
        d = torch.zeros(1).cuda() if args.mode != "mixed" else None
        args.mode = input()
        e = torch.zeros(1).cuda() if args.mode == "puregpu" else None
        """
    )
    facts = analyze(cst.parse_module(source))
    cuda_calls = [c for c in facts.calls if c.method == "cuda"]
    assert [c.site.guarded for c in cuda_calls] == [False, True, True, True, False, False]


def test_code_after_a_lightning_object_built_for_cuda_runs_only_with_cuda() -> None:
    """``L.Fabric(accelerator="cuda")`` raises where CUDA is absent: what follows it in
    its block, and the functions every call hands it to, run only with CUDA; a Fabric
    for any accelerator guards nothing."""
    source = textwrap.dedent(
        """
        import lightning as L
        import torch

        def get_batch(fabric, data):
            return data.pin_memory()

        def other(data):
            return data.pin_memory()

        def main():
            early = torch.zeros(1).pin_memory()
            fabric = L.Fabric(accelerator="cuda", devices=1)
            after = torch.zeros(1).pin_memory()
            get_batch(fabric, torch.zeros(1))
            other(torch.zeros(1))

        def elsewhere():
            fabric = L.Fabric(accelerator="auto")
            x = torch.zeros(1).pin_memory()
        """
    )
    facts = analyze(cst.parse_module(source))
    pins = [c for c in facts.calls if c.method == "pin_memory"]
    by_function = [(c.site.function.name.value, c.site.guarded) for c in pins]  # type: ignore[union-attr]
    assert sorted(by_function) == [
        ("elsewhere", False),
        ("get_batch", True),
        ("main", False),
        ("main", True),
        ("other", False),
    ]


def test_a_device_compared_with_a_torch_device_is_tested_not_placed() -> None:
    """``if device == torch.device("cuda"): model.cuda()`` (stable diffusion's scripts):
    the move runs only on CUDA, and the parameter's CUDA default is read to compare it,
    not to place anything."""
    source = textwrap.dedent(
        """
        import torch

        def load(model, device=torch.device("cuda")):
            if device == torch.device("cuda"):
                model.cuda()
            elif device == torch.device("cpu"):
                model.cpu()
            return model
        """
    )
    facts = analyze(cst.parse_module(source))
    moves = [c for c in facts.calls if c.method == "cuda"]
    assert [c.site.guarded for c in moves] == [True]
    assert not facts.read_defaults


def test_what_an_unseen_function_computes_stays_inferred() -> None:
    """Another package's function given device tensors: its result, what its methods
    return and what is unpacked from it are placed there as an inference
    (``Value.computed_from``), which mismatch rules do not take as evidence; a move is."""
    source = textwrap.dedent(
        """\
        import torch
        from otherpkg import loss_fn, split
        x = torch.zeros(2, device="cuda")
        loss = loss_fn(x, x)
        mean = loss.mean()
        kept = loss.detach()
        first, weight = split(x)
        moved = loss.to("cpu")
        """
    )
    module = cst.parse_module(source)
    facts = analyze(module)
    values = {}
    for statement in module.body:
        small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
        if isinstance(small, cst.Assign) and isinstance(small.targets[0].target, cst.Name):
            values[small.targets[0].target.value] = facts.value_of(small.value)
    assert values["x"].computed_from is None and values["x"].where == frozenset({"cuda"})
    for name in ("loss", "mean", "kept"):
        assert values[name].where == frozenset({"cuda"}), name
        assert values[name].computed_from == frozenset({"cuda"}), name
    assert values["moved"].where == frozenset({"cpu"})
    assert not values["moved"].computed_from


@pytest.mark.parametrize(
    ("test", "target", "answer"),
    [
        ('torch.__version__ >= "1.10"', (2, 0), True),  # FunCodec: every torch 2 passes
        ('"1.10" <= torch.__version__', (2, 0), True),
        ('torch.__version__ < "1.6"', (2, 0), False),
        ('LooseVersion(torch.__version__) >= LooseVersion("1.6.0")', (2, 0), True),
        ('version.parse(torch.__version__) > version.parse("2.0")', (2, 0), None),  # 2.0.0
        ('version.parse(torch.__version__) >= version.parse("2.4")', (2, 0), None),
        ('version.parse(torch.__version__) >= version.parse("2.4")', (2, 6), True),
        ('torch.__version__ >= "2.4"', (2, 6), None),  # strings: "2.10" < "2.4"
        ('torch.__version__ >= "1.10"', (1, 8), None),  # a 1.9 may run it
        ('LooseVersion(torch.__version__) >= "1.6"', (2, 0), None),  # not one kind
        ('torch.__version__ == "1.10"', (2, 0), None),
        ('np.__version__ >= "1.10"', (2, 0), None),
    ],
)
def test_a_release_test_every_supported_torch_answers_alike(
    test: str, target: tuple[int, int], answer: bool | None
) -> None:
    """``facts.version_test_answer``: what every torch from ``target`` on makes of a test."""
    assert version_test_answer(cst.parse_expression(test), target) is answer


def test_a_decided_release_test_runs_one_side() -> None:
    """ESPnet's ``if torch.__version__ >= "1.6.0": from torch.cuda.amp import autocast``
    with a stand-in ``autocast`` in the ``else``: every torch from the target on binds
    torch's, so its calls are DEV009; a target older than 1.6 may take either side."""
    source = (FIXTURES / "DEV009" / "bad_release_gated_import.py").read_text(encoding="utf-8")
    for target, reported in (((2, 0), [19, 20]), ((1, 5), [])):
        options = CheckOptions(codes=frozenset({"DEV009"}), target_torch=target)
        assert [d.start.row for d in check_text(source, "x.py", options)] == reported
