"""The device-flow analysis on small programs: the placement at marked points.

A line ``probe(EXPR)  # where: cuda, cpu`` asks for the devices EXPR may be on there;
``# where: unknown`` means the analysis must not claim to know.
"""

from __future__ import annotations

import re
import textwrap

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from devlint.analysis.flow import analyze
from devlint.analysis.values import Kind

MARK = re.compile(r"#\s*where:\s*(?P<where>[a-z, ]+)")


def probes(source: str) -> list[tuple[int, str, str]]:
    module = cst.parse_module(source)
    facts = analyze(module)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
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
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_placement_at_probes(name: str) -> None:
    for row, actual, expected in probes(textwrap.dedent(CASES[name]).lstrip()):
        assert actual == expected, f"line {row}: {actual} != {expected}"


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


def test_imports_resolve_to_qualified_names() -> None:
    source = "import torch.utils.data as tud\nfrom torch.utils.data import DataLoader as DL\nDL(1)\ntud.DataLoader(2)\n"
    facts = analyze(cst.parse_module(source))
    assert [c.callee for c in facts.calls] == [
        "torch.utils.data.DataLoader",
        "torch.utils.data.DataLoader",
    ]
    assert all(facts.value_of(c.node).kind is Kind.LOADER for c in facts.calls)
