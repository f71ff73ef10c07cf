"""The device-flow analysis on small programs: the placement at marked points.

A line ``probe(EXPR)  # where: cuda, cpu`` asks for the devices EXPR may be on there;
``# where: unknown`` means the analysis must not claim to know.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from devlint.analysis import analyze
from devlint.analysis.values import Kind
from devlint.positions import positions_of

MARK = re.compile(r"#\s*where:\s*(?P<where>[a-z, ]+)")


def probes(source: str) -> list[tuple[int, str, str]]:
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
            where = "unknown" if value.where is None else ", ".join(sorted(value.where))
            expected = MARK.search(lines[row - 1])
            assert expected, f"line {row} has no '# where:' mark"
            found.append(
                (row, where, ", ".join(sorted(expected["where"].replace(" ", "").split(","))))
            )
    assert found, "no probes"
    return found


CASES = {
    "function_summaries": """
        import torch
        from torch import nn

        def get_device():
            if torch.cuda.is_available():
                return torch.device("cuda")
            return torch.device("cpu")

        def predict(model, x):
            return model(x)

        def to_host(t):
            return t.detach().cpu()

        def recurse(t):
            return recurse(t)

        device = get_device()
        model = nn.Linear(2, 2).to(device)
        probe(torch.zeros(2, device=device))  # where: cpu, cuda
        probe(predict(model, torch.ones(2, 2)))  # where: cpu, cuda
        probe(to_host(torch.ones(2).cuda()))  # where: cpu
        probe(recurse(torch.ones(2).cuda()))  # where: unknown
    """,
    "data_moved_by_a_mapped_lambda": """
        import torch
        from diffusion_policy.common.pytorch_util import dict_apply
        from mylib import register
        from pydreamer.tools import map_structure

        device = torch.device("cuda")
        for batch in loader:
            probe(dict_apply(batch, lambda x: x.to(device, non_blocking=True)))  # where: cuda
            probe(map_structure(batch, lambda x: x.cuda() if torch.is_tensor(x) else x))  # where: cuda
            obs, action = map(lambda t: t.to(device), batch)
            probe(obs)  # where: cuda
            probe(dict_apply(batch, lambda x: x.float()))  # where: unknown
            probe(dict_apply(batch, lambda x, y: x.to(y)))  # where: unknown
            probe(register(lambda x: x.to(device)))  # where: unknown
            probe(dict_apply(batch, lambda x: torch.zeros(2, device=device)))  # where: unknown
    """,
    "legacy_constructor_and_boosted_models": """
        import torch
        from colossalai.booster import Booster
        from models import build

        booster = Booster(plugin=plugin)
        model, optimizer, _, loader, _ = booster.boost(build(), opt, dataloader=data)
        probe(model)  # where: cpu, cuda, mps
        probe(loader)  # where: cpu, cuda, mps
        direction = torch.Tensor([dy, dx])
        probe(direction)  # where: cpu
        probe(direction[1] + torch.ones(2, device="cuda"))  # where: cuda
        probe(torch.Tensor(losses).mean())  # where: cpu
    """,
    "image_to_tensor_transforms": """
        import torch
        import torchvision.transforms as T
        from torchvision.transforms import functional as TF
        from torchvision.transforms import v2
        preprocess = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor()])
        resize = T.Compose([T.Resize(256)])
        probe(preprocess(image).unsqueeze(0))  # where: cpu
        probe(v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32)])(image))  # where: cpu
        probe(TF.to_tensor(image))  # where: cpu
        probe(T.PILToTensor()(image))  # where: cpu
        probe(resize(image))  # where: unknown
        probe(T.Normalize([0.5], [0.5])(x.cuda()))  # where: cuda
    """,
    "method_chain": """
        import torch
        x = torch.randn(3).float().cuda()
        probe(x)  # where: cuda
        probe(x.cpu())  # where: cpu
        probe(x.detach().cpu().float())  # where: cpu
    """,
    "aliases": """
        import torch as T
        from torch import zeros as Z
        probe(Z(3, device="mps"))  # where: mps
        probe(T.ones(2).to("cuda:0"))  # where: cuda
    """,
    "device_variable_three_way": """
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu")
        probe(torch.zeros(2).to(device))  # where: cpu, cuda, mps
    """,
    "branches_join": """
        import torch
        x = torch.zeros(2)
        if torch.cuda.is_available():
            x = x.cuda()
        probe(x)  # where: cpu, cuda
    """,
    "device_test_narrows_its_body_only": """
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
        if device == "cpu":
            probe(device)  # where: cpu
            torch.set_num_threads(2)
        probe(device)  # where: cpu, cuda
        x = torch.zeros(2).to(device)
        if device != "cpu":
            x = x.cpu()
        probe(x)  # where: cpu
    """,
    "module_only_method_combines_nothing": """
        import torch
        model = load_somehow().to("cuda")
        state = torch.load("w.pt", map_location="cpu")
        probe(model.load_state_dict(state))  # where: unknown
        net = torch.load("net.pt").cuda()
        probe(net.load_state_dict(state))  # where: unknown
    """,
    "accelerate_collectives_keep_the_device": """
        import torch
        from accelerate import Accelerator
        accelerator = Accelerator()
        model = accelerator.prepare(torch.nn.Linear(2, 2))
        loss = model(torch.zeros(1, 2, device=accelerator.device)).sum()
        probe(loss)  # where: cpu, cuda, mps
        probe(accelerator.gather(loss))  # where: cpu, cuda, mps
        probe(accelerator.reduce(loss))  # where: cpu, cuda, mps
    """,
    "foreign_method_given_cpu_tensors_is_unknown": """
        import torch
        from model import Tacotron2
        model = Tacotron2().cuda()
        batch = torch.zeros(2)
        probe(model.parse_batch(batch))  # where: unknown
        probe(model.infer(torch.zeros(2).cuda()))  # where: cuda
    """,
    "moved_model_output": """
        import torch
        from torch import nn
        model = nn.Linear(2, 2)
        model.to("cuda")
        out = model(torch.zeros(1, 2))
        probe(out)  # where: cuda
        probe(out.argmax(1))  # where: cuda
    """,
    "containers_and_loops": """
        import torch
        feats = []
        for i in range(3):
            feats.append(torch.zeros(2).cuda())
        for f in feats:
            probe(f)  # where: cuda
        probe(torch.cat(feats))  # where: cuda
    """,
    "moved_on_one_path_unknown_on_the_other": """
        import torch
        x = load()
        y = load()
        if flag:
            x = x.cuda()
            y = y.cpu()
        probe(x)  # where: cuda, elsewhere
        probe(x.cpu())  # where: cpu
        probe(y)  # where: unknown
    """,
    "tuple_elements": """
        import torch
        def step(x):
            return x.cuda(), None
        loss, extra = step(torch.zeros(2))
        probe(loss)  # where: cuda
        probe(step(torch.zeros(2))[0])  # where: cuda
        probe(extra)  # where: unknown
        first, second = (torch.zeros(1), torch.ones(1).cuda()) if flag else (torch.ones(1), load())
        probe(first)  # where: cpu
        probe(second)  # where: cuda, elsewhere
    """,
    "tuple_unpacking": """
        import torch
        a, b = torch.zeros(1).cuda(), torch.zeros(1)
        probe(a)  # where: cuda
        probe(b)  # where: cpu
    """,
    "function_parameter_is_unknown": """
        import torch
        def f(x):
            probe(x)  # where: unknown
            probe(x.to(device))  # where: cpu, cuda, mps
    """,
    "conditional_cpu_copy": """
        import torch
        def f(spec, device):
            spec = torch.zeros(3, device=device)
            if device != "cpu":
                spec = spec.cpu()
            probe(spec)  # where: cpu
    """,
    "loader_batch_then_moved": """
        import torch
        from torch.utils.data import DataLoader
        loader = DataLoader([])
        for x, y in loader:
            probe(y)  # where: cpu
            y = y.to("cuda")
            probe(y)  # where: cuda
    """,
    "dtype_is_not_a_move": """
        import torch
        x = torch.zeros(1).cuda()
        probe(x.to(torch.float16))  # where: cuda
    """,
    "unknown_to_argument": """
        import torch
        x = torch.zeros(1)
        probe(x.to(something))  # where: unknown
    """,
    "attributes_of_tensor_values": """
        import torch
        from torch import nn
        model = nn.Linear(2, 2).to("cuda")
        out = model(torch.zeros(1, 2).cuda())
        probe(out.logits)  # where: cuda
        probe(out.logits.softmax(dim=-1))  # where: cuda
        probe(out.max(dim=1).values)  # where: cuda
        probe(out.shape)  # where: unknown
        probe(out.dtype)  # where: unknown
        probe(torch.zeros(out.shape))  # where: cpu
    """,
    "loader_over_moved_tensor_dataset": """
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        device = torch.device("cuda")
        moved = TensorDataset(torch.randn(8, 2).to(device), torch.zeros(8).to(device))
        for x, y in DataLoader(moved, batch_size=4, shuffle=True):
            probe(x)  # where: cuda
            probe(y)  # where: cuda
        for batch in DataLoader(dataset=moved):
            probe(batch[0])  # where: cuda
        for x, y in DataLoader(TensorDataset(torch.randn(8, 2), torch.zeros(8))):
            probe(x)  # where: cpu
            x = x.to(device)
            probe(x)  # where: cuda
    """,
    "loader_over_this_files_dataset": """
        import torch
        from torch.utils.data import DataLoader, Dataset
        device = torch.device("cuda")
        class MovedInInit(Dataset):
            def __init__(self, x, y):
                self.x = torch.tensor(x).cuda()
                self.y = torch.tensor(y).to(device)
            def __len__(self):
                return len(self.x)
            def __getitem__(self, i):
                return self.x[i], self.y[i]
        class Keeps(Dataset[torch.Tensor]):
            def __init__(self, x):
                self.x = x
            def __getitem__(self, i):
                return self.x[i]
        class MovesItems(Keeps):
            def __getitem__(self, i):
                return self.x[i].to(device)
        class NotADataset:
            def __init__(self, x):
                self.x = x.cuda()
            def __getitem__(self, i):
                return self.x[i]
        for x, y in DataLoader(MovedInInit([[1.0]], [0])):
            probe(x)  # where: cuda
            probe(y)  # where: cuda
        for x in DataLoader(Keeps(torch.randn(8, 2))):
            probe(x)  # where: cpu
        for x in DataLoader(dataset=Keeps(torch.randn(8, 2).to(device))):
            probe(x)  # where: cuda
        for x in DataLoader(Keeps(load())):
            probe(x)  # where: cpu
        for x in DataLoader(MovesItems(torch.randn(8, 2))):
            probe(x)  # where: cuda
        for x in DataLoader(NotADataset(torch.randn(8, 2))):
            probe(x)  # where: cpu
        def main(data):
            for x in DataLoader(MovedInInit(data, data), batch_size=2):
                probe(x)  # where: cuda
    """,
    "closure_of_nested_function": """
        import torch
        from torch import nn
        def main():
            model = nn.Linear(2, 2).to("cuda")
            offsets = torch.tensor([1.0, 2.0])
            def predict(x):
                probe(model(x))  # where: cuda
                probe(offsets)  # where: cpu
                probe(model(x) + offsets)  # where: cpu, cuda
            def shadowed(model, x):
                probe(model(x))  # where: unknown
            return predict
    """,
    "tensor_from_python_data": """
        import torch
        import numpy as np
        from torch import nn
        class Agent(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.dim = dim
            def forward(self, x):
                probe(torch.tensor(self.dim))  # where: cpu
                probe(torch.tensor(x))  # where: unknown
        def update(rewards, gamma):
            probe(torch.tensor(rewards, dtype=torch.float32))  # where: cpu
            probe(torch.tensor(gamma))  # where: cpu
            probe(torch.tensor(torch.ones(2).cuda()))  # where: cuda
            probe(torch.tensor(np.ones(3)))  # where: cpu
    """,
    "parameter_seeds_from_every_call": """
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset

        def evaluate(model, x, loader):
            probe(model)  # where: cuda
            probe(x)  # where: cpu
            for xb, yb in loader:
                probe(xb)  # where: cuda
            return model(x)

        def imshow(img):
            probe(img)  # where: cpu, cuda

        def scaled(t, scale=None):
            probe(t)  # where: cuda
            probe(scale)  # where: unknown

        def show(t):
            probe(t)  # where: unknown

        def mixed(t):
            probe(t)  # where: unknown

        def keyword_only(t, *, model):
            probe(model)  # where: cuda
            probe(t)  # where: cuda

        def main(data):
            net = nn.Linear(4, 4).to("cuda")
            moved = TensorDataset(data.to("cuda"), data.to("cuda"))
            evaluate(net, torch.randn(2, 4), DataLoader(moved, batch_size=2))
            imshow(torch.ones(2).cuda())
            imshow(torch.ones(2))
            scaled(torch.ones(2).cuda())
            scaled(torch.ones(2).cuda(), scale=torch.ones(1).cuda())
            show(torch.ones(2).cuda())
            callbacks = [show]
            mixed(torch.ones(2).cuda())
            mixed(data)
            keyword_only(torch.ones(2).cuda(), model=net)

        def never_called(t):
            probe(t)  # where: unknown

        if __name__ == "__main__":
            main(None)
    """,
    "module_containers_take_their_parts": """
        import torch
        from collections import OrderedDict
        from torch import nn
        device = torch.device("cuda")
        a = nn.Linear(4, 4, device=device)
        b = nn.Linear(4, 4).to(device)
        layers = [nn.Linear(4, 4, device=device) for _ in range(2)]
        probe(nn.Sequential(a, b))  # where: cuda
        probe(nn.Sequential(a, b)(torch.ones(1, 4).cuda()))  # where: cuda
        probe(nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4)))  # where: cpu
        probe(nn.Sequential(a, nn.Linear(4, 4)))  # where: cpu, cuda
        probe(nn.Sequential(nn.Linear(4, 4), nn.ReLU()).to(device))  # where: cuda
        probe(nn.Sequential(*layers))  # where: unknown
        probe(nn.Sequential(OrderedDict(fc=a)))  # where: unknown
        probe(nn.ModuleList([a, b]))  # where: unknown
        probe(nn.ModuleDict({"a": a, "b": b}))  # where: unknown
    """,
    "moved_containers_hold_their_parts_where_they_were_moved": """
        import torch
        device = torch.device("cuda")

        def step(workspace, helper):
            replay = workspace.to(device)  # a container of unknown kind, moved
            probe(replay["critic"])  # where: cuda
            critic, reward = replay["critic", "reward"]
            probe(reward)  # where: cuda
            probe(replay.data)  # where: cuda
            probe(workspace["critic"])  # where: unknown
            probe(helper.data)  # where: unknown
            probe((torch.arange(2),) + torch.ones(4, device=device).split(2))  # where: cpu, cuda
    """,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_placement_at_probes(name: str) -> None:
    for row, actual, expected in probes(textwrap.dedent(CASES[name]).lstrip()):
        assert actual == expected, f"line {row}: {actual} != {expected}"


def test_tensor_from_python_data_is_a_scalar_unless_named_plural() -> None:
    """``torch.tensor(name)`` on Python data: made on the CPU, and 0-dim (a scalar, which
    mixes with any device) unless the name says it holds several or a shape is given."""
    source = textwrap.dedent(
        """
        import torch
        from torch import nn
        class Attention(nn.Module):
            def __init__(self, d_k, mean):
                super().__init__()
                self.d_k = d_k
                self.mean = torch.tensor(mean).view(1, 3, 1, 1)
                probe(self.mean)
            def forward(self, x):
                probe(torch.tensor(self.d_k, dtype=torch.float32))
                probe(torch.sqrt(torch.tensor(self.d_k, dtype=torch.float32)))
        def update(rewards, gamma, token_list, loss):
            probe(torch.tensor(rewards, dtype=torch.float32))
            probe(torch.tensor(token_list))
            probe(torch.tensor(gamma))
            probe(torch.tensor(loss))
        """
    )
    module = cst.parse_module(source)
    facts = analyze(module)
    values = {
        module.code_for_node(call.node.args[0].value): facts.value_of(call.node.args[0].value)
        for call in facts.calls
        if isinstance(call.node.func, cst.Name) and call.node.func.value == "probe"
    }
    scalar = {code: value.scalar for code, value in values.items()}
    assert scalar == {
        "self.mean": False,
        "torch.tensor(self.d_k, dtype=torch.float32)": True,
        "torch.sqrt(torch.tensor(self.d_k, dtype=torch.float32))": True,
        "torch.tensor(rewards, dtype=torch.float32)": False,
        "torch.tensor(token_list)": False,
        "torch.tensor(gamma)": True,
        "torch.tensor(loss)": True,
    }
    assert all(value.kind is Kind.TENSOR and value.where == {"cpu"} for value in values.values())


def test_guards_mark_calls() -> None:
    source = textwrap.dedent(
        """
        import sys
        import torch
        a = torch.zeros(1).cuda()
        if torch.cuda.is_available():
            b = torch.zeros(1).cuda()
        if not torch.cuda.is_available():
            sys.exit(0)
        c = torch.zeros(1).cuda()
        """
    )
    facts = analyze(cst.parse_module(source))
    cuda_calls = [c for c in facts.calls if c.method == "cuda"]
    assert [c.site.guarded for c in cuda_calls] == [False, True, True]


def test_branches_record_the_enclosing_parts() -> None:
    source = textwrap.dedent(
        """
        import torch
        a(1)
        if old:
            b(1)
        elif newer:
            c(1)
        else:
            d(1)
        try:
            e(1)
        except AttributeError:
            f(g(1) if x else h(1))

            def inner():
                i(1)
        """
    )
    module = cst.parse_module(source)
    facts = analyze(module)
    branches = {
        c.node.func.value: c.site.branches
        for c in facts.calls
        if isinstance(c.node.func, cst.Name) and c.node.func.value != "inner"
    }
    first_if, try_ = module.body[2], module.body[3]
    assert isinstance(first_if, cst.If) and isinstance(try_, cst.Try)
    elif_ = first_if.orelse
    assert isinstance(elif_, cst.If)
    assert branches["a"] == ()
    assert [(b.node, b.part) for b in branches["b"]] == [(first_if, first_if.body)]
    assert [b.part for b in branches["c"]] == [elif_, elif_.body]
    assert [b.part for b in branches["d"]] == [elif_, elif_.orelse]
    assert [b.part for b in branches["e"]] == [try_.body]
    assert [b.part for b in branches["f"]] == [try_.handlers[0]]
    ifexp = branches["g"][-1].node
    assert isinstance(ifexp, cst.IfExp)
    assert [b.part for b in branches["g"]] == [try_.handlers[0], ifexp.body]
    assert [b.part for b in branches["h"]] == [try_.handlers[0], ifexp.orelse]
    # the body of a function defined inside the handler continues its branches
    assert [b.part for b in branches["i"]] == [try_.handlers[0]]


def test_imports_resolve_to_qualified_names() -> None:
    source = "import torch.utils.data as tud\nfrom torch.utils.data import DataLoader as DL\nDL(1)\ntud.DataLoader(2)\n"
    facts = analyze(cst.parse_module(source))
    assert [c.callee for c in facts.calls] == [
        "torch.utils.data.DataLoader",
        "torch.utils.data.DataLoader",
    ]
    assert all(facts.value_of(c.node).kind is Kind.LOADER for c in facts.calls)


REQUIREMENT = re.compile(r"#\s*(?P<state>first|required|guarded)\b")


def requirement_states(source: str) -> list[tuple[int, str, str]]:
    """``(row, actual, expected)`` for every CUDA-only call marked ``# first`` (DEV011
    reports it), ``# required`` (CUDA is already required there) or ``# guarded``."""
    from devlint.analysis import torch_api

    module = cst.parse_module(source)
    facts = analyze(module)
    positions = positions_of(module)
    lines = source.splitlines()
    found = []
    for call in facts.calls:
        if call.callee not in torch_api.CUDA_ONLY_CALLS:
            continue
        row = positions[call.node].start.line
        expected = REQUIREMENT.search(lines[row - 1])
        assert expected, f"line {row} has no '# first/required/guarded' mark"
        site = call.site
        actual = "guarded" if site.guarded else "required" if site.cuda_required else "first"
        found.append((row, actual, expected["state"]))
    assert found, "no CUDA-only calls"
    return found


REQUIREMENT_CASES = {
    "each_call_is_reported": """
        import torch
        def bench(model, x):
            x = x.cuda()
            device = torch.device("cuda")
            buffer = torch.zeros(3, device="cuda")
            torch.cuda.synchronize()  # first
            for _ in range(3):
                model(x)
            torch.cuda.synchronize()  # first
            torch.cuda.device(  # first
                torch.cuda.current_device()  # first
            )
        def probe_in_try():
            try:
                torch.cuda.synchronize()  # guarded
            except (RuntimeError, AssertionError):
                pass
            try:  # a build without CUDA raises AssertionError, which this lets through
                torch.cuda.synchronize()  # first
            except RuntimeError:
                pass
            torch.cuda.synchronize()  # first
    """,
    "nccl_process_group_is_no_guard": """
        import torch
        import torch.distributed as dist
        def worker(rank):
            dist.init_process_group("nccl", rank=rank, world_size=2)
            torch.cuda.set_device(rank)  # first
    """,
    "required_along_paths": """
        import torch
        def branches(device_ids):
            if device_ids is not None:
                torch.cuda.set_device(device_ids[0])  # required
                def closure():
                    torch.cuda.synchronize()  # required
            else:
                raise SystemExit("single process")
            torch.cuda.synchronize()  # required
        def one_side(device_ids):
            if device_ids is not None:
                torch.cuda.synchronize()  # required
            torch.cuda.synchronize()  # first
        def loop(device_ids, n):
            for _ in range(n):
                if device_ids is None:
                    continue
                torch.cuda.synchronize()  # required
            torch.cuda.synchronize()  # first
    """,
    # Creating CUDA streams is no contract (SPEC's guards): each call raises without CUDA.
    "stream_module": """
        import torch
        class Prefetcher:
            def __init__(self):
                self.stream = torch.cuda.Stream()  # first
            def wait(self):
                torch.cuda.current_stream().wait_stream(self.stream)  # first
        def report():
            print(torch.cuda.get_device_name())  # first
    """,
    "contracts": """
        import torch
        from contextlib import nullcontext
        class Checked:
            def __init__(self):
                if not torch.cuda.is_available():
                    raise RuntimeError("needs CUDA")
            def sync(self):
                torch.cuda.synchronize()  # required
        class Plain:
            def __init__(self, flag):
                if flag:  # the caller's flag: may test availability (not reported)
                    self.stream = torch.cuda.Stream()  # guarded
            def sync(self):
                torch.cuda.synchronize()  # first
            def _replay_cuda_graph(self):  # a name, no contract
                torch.cuda.current_stream().synchronize()  # first
            def cuda(self, device=None):  # what ``obj.cuda()`` runs
                return torch.cuda.current_device()  # required
        def check_cuda_capability():  # a name, no caller that checks first
            return torch.cuda.get_device_capability()  # first
        def gpu_banner():
            return torch.cuda.get_device_name()  # first
        def _ampere():
            return torch.cuda.get_device_capability()[0] >= 8  # required
        def _callback():
            torch.cuda.synchronize()  # first
        def wrap(module, device_ids):
            ctx = torch.cuda.device(0) if device_ids is not None else nullcontext()  # required
            if device_ids is None:
                return module
            torch.cuda.synchronize()  # required
        print(gpu_banner())
        fast = torch.cuda.is_available() and _ampere()
        if torch.cuda.is_available():
            _ampere()
        hooks = [_callback]
        if torch.cuda.is_available():
            _callback()
        if torch.cuda.is_available():
            print(len(torch.cuda.default_generators) and torch.cuda.current_device())  # guarded
        if len(torch.cuda.default_generators) > 0:
            torch.cuda.current_device()  # guarded
        names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]  # guarded
        torch.cuda.synchronize()  # first
    """,
    "cuda_only_package": """
        import torch
        import triton
        def launch():
            torch.cuda.synchronize()  # required
        torch.cuda.set_device(0)  # required
    """,
    "library_module_refusing_without_cuda": """
        import torch
        def usable(raise_error=False):
            if not torch.cuda.is_available():
                if raise_error:
                    raise ImportError("the kernel requires CUDA")
                return False
            return True
        def capability():
            return torch.cuda.get_device_capability()  # required
    """,
    "script_refusing_in_one_function": """
        import torch
        def train():
            if not torch.cuda.is_available():
                raise SystemExit("training needs a GPU")
            torch.cuda.synchronize()  # guarded
        def bench():
            torch.cuda.synchronize()  # first
        bench()
    """,
    "library_module_falling_back_is_no_refusal": """
        import os
        import torch
        def initialize():
            if not torch.cuda.is_available():
                print("cuda is not available, use cpu instead")
                return
            elif "RANK" not in os.environ:
                return
            torch.cuda.set_device(0)  # guarded
        def set_gpu_id(gpu_id):
            torch.cuda.set_device(gpu_id)  # first
    """,
    "library_module_refusing_without_saying_cuda": """
        import torch
        def usable():
            if not torch.cuda.is_available():
                raise ImportError("the kernel is not usable here")
        def capability():
            return torch.cuda.get_device_capability()  # first
    """,
    "optional_cuda_only_package": """
        import torch
        try:
            import apex
        except ImportError:
            apex = None
        def launch():
            torch.cuda.synchronize()  # first
    """,
}


@pytest.mark.parametrize("name", sorted(REQUIREMENT_CASES))
def test_cuda_required_at_calls(name: str) -> None:
    source = textwrap.dedent(REQUIREMENT_CASES[name]).lstrip()
    for row, actual, expected in requirement_states(source):
        assert actual == expected, f"line {row}: {actual} != {expected}"


def test_literals_keep_their_type() -> None:
    # Literal values are shared objects, one per value: ``1`` and ``1.0`` are equal and hash
    # alike in Python, but each keeps its own type.
    module = cst.parse_module("a = 1\nb = 1.0\nc = 1\nd = 'cuda:0'\ne = 'x'\n")
    facts = analyze(module)
    values = [facts.value_of(statement.body[0].value) for statement in module.body]
    assert [type(value.constant) for value in values] == [int, float, int, str, str]
    assert values[0] is values[2]  # shared
    assert values[3].kind is Kind.DEVICE and values[4].kind is Kind.CONSTANT


def test_a_projects_own_package_named_like_a_cuda_only_one_is_its_code(tmp_path: Path) -> None:
    # gpt-neox's ``megatron/`` is the project itself: importing it is no import of the
    # CUDA-only Megatron-LM library, and the file's CUDA calls are judged as any other's.
    source = "import torch\nfrom megatron import mpu\ntorch.cuda.synchronize()\n"
    module = cst.parse_module(source)
    path = tmp_path / "megatron" / "model" / "router.py"
    elsewhere = tmp_path / "project" / "train.py"
    for origin, required in ((path, False), (elsewhere, True), (None, True)):
        facts = analyze(module, origin=origin)
        (call,) = [c for c in facts.calls if c.callee == "torch.cuda.synchronize"]
        assert call.site.cuda_required is required, origin


def test_a_class_built_by_a_class_below_it_runs_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Classes run the last defined first: the model's ``__init__`` builds the block
    defined above it, so the block's methods run once, with the arguments it gets."""
    from devlint.analysis.definitions import Definitions

    ran: list[str] = []
    original = Definitions.function_body

    def counted(self: Definitions, item: object) -> None:
        ran.append(f"{item.context.class_name}.{item.node.name.value}")  # type: ignore[attr-defined]
        original(self, item)  # type: ignore[arg-type]

    monkeypatch.setattr(Definitions, "function_body", counted)
    source = textwrap.dedent(
        """
        import torch
        from torch import nn

        class Block(nn.Module):
            def __init__(self, dim, device):
                super().__init__()
                self.scale = torch.ones(dim, device=device)

            def forward(self, x):
                return x * self.scale

        class Model(nn.Module):
            def __init__(self, device):
                super().__init__()
                self.block = Block(4, device)

            def forward(self, x):
                return self.block(x)

        def main():
            model = Model(torch.device("cpu"))
        """
    )
    analyze(cst.parse_module(source))
    assert sorted(ran) == [
        "Block.__init__", "Block.forward", "Model.__init__", "Model.forward", "None.main"
    ]  # fmt: skip
