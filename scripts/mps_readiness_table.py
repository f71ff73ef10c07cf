"""Measure which models a user would try run on MPS, per torch release: docs/mps-readiness.md.

Each model runs a forward pass, a backward pass and an optimizer step under devlint's
virtual MPS (``devlint.verify.virtual.VirtualDevice(record=True)``: on the CPU, every
operator looked up in ``devlint/analysis/mps_coverage.json`` and recorded instead of
raising, as ``devlint run --device mps --report`` does) at torch 2.0, 2.4 and the newest
release of the coverage table. Then DEV019's fixtures run the same way at torch 2.0
(``devlint run --device mps --report --report-format json``) beside ``devlint check
--select DEV019`` on each: the operators tracked in pytorch/pytorch#77764 and #141287
found both ways.

Regenerate (needs torch; torchvision is used when installed)::

    python scripts/mps_readiness_table.py            # writes docs/mps-readiness.md
    python scripts/mps_readiness_table.py --check    # exit 1 when the doc is stale

Limits: the operators are those the CPU runs for these programs (a composite MPS runs by
its own kernel is looked up as a whole); the optimizers take their CPU code path
(``foreach`` is off for CPU tensors, on for real MPS ones).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from devlint.analysis import mps_coverage  # noqa: E402
from devlint.torch_target import TorchVersion, format_target  # noqa: E402
from devlint.verify.readiness import first_release  # noqa: E402
from devlint.verify.virtual import VirtualDevice  # noqa: E402

DOC = ROOT / "docs" / "mps-readiness.md"
TARGETS: tuple[TorchVersion, ...] = ((2, 0), (2, 4), mps_coverage.RELEASES[-1])
FIXTURES = ROOT / "fixtures" / "DEV019"
FIXTURE_TARGET: TorchVersion = (2, 0)

# -- the models ------------------------------------------------------------------------------


class Block(nn.Module):
    def __init__(self, channels: int, stride: int = 1) -> None:
        super().__init__()
        out = channels * stride
        self.conv1 = nn.Conv2d(channels, out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out)
        self.conv2 = nn.Conv2d(out, out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out)
        self.skip = (
            nn.Sequential(nn.Conv2d(channels, out, 1, stride, bias=False), nn.BatchNorm2d(out))
            if stride != 1
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(h)) + self.skip(x))


class SmallResNet(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2)
        )
        self.layers = nn.Sequential(Block(16), Block(16, 2), Block(32, 2))
        self.head = nn.Linear(64, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.layers(self.stem(x))
        return self.head(F.adaptive_avg_pool2d(h, 1).flatten(1))


class TinyTransformer(nn.Module):
    def __init__(self, vocab: int = 100, width: int = 32) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.position = nn.Parameter(torch.zeros(1, 16, width))
        layer = nn.TransformerEncoderLayer(width, 4, 64, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens) + self.position[:, : tokens.shape[1]]
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1], device=tokens.device)
        return self.head(self.encoder(h, mask=mask, is_causal=True))


class ResBlock(nn.Module):
    def __init__(self, channels: int, out: int, time: int) -> None:
        super().__init__()
        self.norm1 = nn.GroupNorm(8, channels)
        self.conv1 = nn.Conv2d(channels, out, 3, padding=1)
        self.time = nn.Linear(time, out)
        self.norm2 = nn.GroupNorm(8, out)
        self.conv2 = nn.Conv2d(out, out, 3, padding=1)
        self.skip = nn.Conv2d(channels, out, 1) if channels != out else nn.Identity()

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time(t)[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return h + self.skip(x)


class TinyUNet(nn.Module):
    """A diffusion-style UNet: GroupNorm, SiLU, a sinusoidal time embedding, strided
    downsampling, nearest upsampling and skip connections."""

    def __init__(self, width: int = 16, time: int = 32) -> None:
        super().__init__()
        self.time_width = time
        self.time = nn.Sequential(nn.Linear(time, time), nn.SiLU(), nn.Linear(time, time))
        self.inp = nn.Conv2d(3, width, 3, padding=1)
        self.down1 = ResBlock(width, width, time)
        self.pool1 = nn.Conv2d(width, width, 3, 2, 1)
        self.down2 = ResBlock(width, 2 * width, time)
        self.mid = ResBlock(2 * width, 2 * width, time)
        self.up2 = ResBlock(4 * width, width, time)
        self.up1 = ResBlock(2 * width, width, time)
        self.out = nn.Sequential(
            nn.GroupNorm(8, width), nn.SiLU(), nn.Conv2d(width, 3, 3, padding=1)
        )

    def embed(self, t: torch.Tensor) -> torch.Tensor:
        half = self.time_width // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, device=t.device) / half)
        angles = t[:, None].float() * freqs[None]
        return self.time(torch.cat([angles.sin(), angles.cos()], dim=-1))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        e = self.embed(t)
        h1 = self.down1(self.inp(x), e)
        h2 = self.down2(self.pool1(h1), e)
        h = self.mid(h2, e)
        h = self.up2(torch.cat([h, h2], 1), e)
        h = F.interpolate(h, scale_factor=2, mode="nearest")
        h = self.up1(torch.cat([h, h1], 1), e)
        return self.out(h)


class Policy(nn.Module):
    def __init__(self, observations: int = 8, actions: int = 4) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(observations, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh()
        )
        self.logits = nn.Linear(64, actions)
        self.value = nn.Linear(64, 1)

    def forward(self, obs: torch.Tensor) -> tuple[torch.distributions.Categorical, torch.Tensor]:
        h = self.body(obs)
        return torch.distributions.Categorical(logits=self.logits(h)), self.value(h).squeeze(-1)


class GraphLayer(nn.Module):
    """A GCN/GraphSAGE-style layer written with index_add_ and scatter_reduce (no PyG)."""

    def __init__(self, width: int, out: int) -> None:
        super().__init__()
        self.message = nn.Linear(width, out)
        self.update = nn.Linear(width + 2 * out, out)

    def forward(self, x: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        source, target = edges
        messages = self.message(x)[source]
        summed = torch.zeros(x.shape[0], messages.shape[1], device=x.device)
        summed = summed.index_add(0, target, messages)
        degree = torch.zeros(x.shape[0], device=x.device).scatter_add(
            0, target, torch.ones_like(target, dtype=torch.float32)
        )
        mean = summed / degree.clamp(min=1)[:, None]
        biggest = torch.zeros_like(summed).scatter_reduce(
            0, target[:, None].expand_as(messages), messages, reduce="amax", include_self=False
        )
        return F.relu(self.update(torch.cat([x, mean, biggest], -1)))


def _train(model: nn.Module, loss_of: Callable[[nn.Module], torch.Tensor]) -> None:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss = loss_of(model)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


def resnet(device: str) -> None:
    model = SmallResNet().to(device)
    images = torch.randn(4, 3, 32, 32).to(device)
    labels = torch.randint(0, 10, (4,)).to(device)
    _train(model, lambda m: F.cross_entropy(m(images), labels))


def torchvision_resnet18(device: str) -> None:
    import torchvision  # type: ignore[import-not-found]

    model = torchvision.models.resnet18(num_classes=10).to(device)
    images = torch.randn(2, 3, 64, 64).to(device)
    labels = torch.randint(0, 10, (2,)).to(device)
    _train(model, lambda m: F.cross_entropy(m(images), labels))


def transformer(device: str) -> None:
    model = TinyTransformer().to(device)
    tokens = torch.randint(0, 100, (4, 16)).to(device)
    _train(
        model,
        lambda m: F.cross_entropy(m(tokens[:, :-1]).flatten(0, 1), tokens[:, 1:].flatten()),
    )


def unet(device: str) -> None:
    model = TinyUNet().to(device)
    images = torch.randn(2, 3, 16, 16).to(device)
    noise = torch.randn_like(images)
    steps = torch.randint(0, 1000, (2,)).to(device)
    alpha = torch.rand(2, 1, 1, 1).to(device)
    noisy = alpha.sqrt() * images + (1 - alpha).sqrt() * noise
    _train(model, lambda m: F.mse_loss(m(noisy, steps), noise))


def policy(device: str) -> None:
    model = Policy().to(device)
    observations = torch.randn(16, 8).to(device)
    returns = torch.randn(16).to(device)

    def loss_of(m: nn.Module) -> torch.Tensor:
        distribution, value = m(observations)
        actions = distribution.sample()
        advantage = returns - value.detach()
        policy_loss = -(distribution.log_prob(actions) * advantage).mean()
        return policy_loss + F.smooth_l1_loss(value, returns) - 0.01 * distribution.entropy().mean()

    _train(model, loss_of)


def gnn(device: str) -> None:
    model = nn.ModuleList([GraphLayer(8, 16), GraphLayer(16, 4)]).to(device)
    x = torch.randn(20, 8).to(device)
    edges = torch.randint(0, 20, (2, 60)).to(device)
    labels = torch.randint(0, 4, (20,)).to(device)

    def loss_of(m: nn.Module) -> torch.Tensor:
        h = x
        for layer in m:  # type: ignore[union-attr]
            h = layer(h, edges)
        return F.cross_entropy(h, labels)

    _train(model, loss_of)


MODELS: dict[str, tuple[str, Callable[[str], None]]] = {
    "ResNet-ish CNN": ("conv, BatchNorm, max/avg pool, cross-entropy", resnet),
    "torchvision resnet18": ("torchvision.models.resnet18", torchvision_resnet18),
    "Transformer encoder": ("nn.TransformerEncoder, causal mask, dropout", transformer),
    "Diffusion UNet": ("conv, GroupNorm, SiLU, nearest upsample, skips", unet),
    "RL policy": ("MLP, Categorical sample/log_prob/entropy", policy),
    "GNN layer": ("index_add, scatter_add, scatter_reduce(amax)", gnn),
}

# -- measuring -------------------------------------------------------------------------------


def measure(run: Callable[[str], None], target: TorchVersion) -> tuple[dict[str, str], int, str]:
    """The operators MPS lacks at ``target`` in one run (name -> letter), the operators
    used, and an error other than a missing operator ("" when none)."""
    torch.manual_seed(0)
    virtual = VirtualDevice("mps", release=format_target(target), record=True)
    error = ""
    try:
        with virtual:
            run("mps")
    except ImportError as missing:
        return {}, 0, f"not measured ({missing.name} is not installed)"
    except Exception as failure:  # reported in the table
        error = f"{type(failure).__name__}: {str(failure).splitlines()[0]}"
    found = {name: entry[0] for name, entry in virtual.unavailable.items()}
    return found, len(virtual.operators), error


def _calls(count: int) -> str:
    return f"{count} call" if count == 1 else f"{count} calls"


def _ops(names: list[str]) -> str:
    return ", ".join(f"`{name}`" for name in sorted(names))


def model_section() -> list[str]:
    targets = [format_target(t) for t in TARGETS]
    lines = [
        "## Models a user would try",
        "",
        "Forward, backward and an AdamW step of each model under virtual MPS. **runs**: "
        "every aten operator has an MPS kernel; **fails**: torch raises "
        "`NotImplementedError` on the first operator listed unless "
        "`PYTORCH_ENABLE_MPS_FALLBACK=1`, which runs them on the CPU; *CPU fallback*: "
        "operators MPS always sends to the CPU, with a warning.",
        "",
        "| model | what it exercises | " + " | ".join(f"torch {t}" for t in targets) + " |",
        "|---|---|" + "---|" * len(targets),
    ]
    failing: dict[str, set[str]] = {}
    headline: dict[str, int] = {t: 0 for t in targets}
    measured = 0
    for name, (what, run) in MODELS.items():
        cells = []
        for target, shown in zip(TARGETS, targets, strict=True):
            found, used, error = measure(run, target)
            if error.startswith("not measured"):
                cells.append(error)
                continue
            missing = [op for op, letter in found.items() if letter == "M"]
            falling = [op for op, letter in found.items() if letter == "F"]
            for op in missing:
                failing.setdefault(op, set()).add(name)
            cell = f"**fails**: {_ops(missing)}" if missing else "**runs**"
            if falling:
                cell += f"; CPU fallback: {_ops(falling)}"
            if error:
                cell += f"; stopped: {error}"
            cell += f" ({used} operators)"
            headline[shown] += not missing and not error
            cells.append(cell)
        else:
            if not cells[0].startswith("not measured"):
                measured += 1
        lines.append(f"| {name} | {what} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Runs on MPS: "
        + ", ".join(f"{headline[t]} of {measured} models at torch {t}" for t in targets)
        + ". In parentheses: the distinct aten operators the run used on MPS.",
        "",
        "Limits: the torch code above the operators is the installed torch's "
        f"({torch.__version__.split('+')[0]}): an older release's own Python code (its "
        "optimizers, `nn.MultiheadAttention`'s mask handling, `torch.distributions`) may "
        "call other operators. Optimizers take their CPU code path (`foreach` is off for "
        "CPU tensors; on a real MPS device it is on, and its `_foreach_*` operators are "
        "not measured here). A composite operator runs as MPS runs it in that release "
        "(its own kernel, or its decomposition).",
        "",
    ]
    if failing:
        lines += ["| missing operator | models | MPS kernel from |", "|---|---|---|"]
        for op in sorted(failing):
            fixed = first_release(op, TARGETS[0])
            shown = format_target(fixed) if fixed else f"not yet ({targets[-1]})"
            lines.append(f"| `aten::{op}` | {', '.join(sorted(failing[op]))} | {shown} |")
        lines.append("")
    return lines


def fixture_section() -> list[str]:
    target = format_target(FIXTURE_TARGET)
    lines = [
        "## Operators tracked in pytorch/pytorch#77764 and #141287, found both ways",
        "",
        f"Each program of `fixtures/DEV019/` at torch {target} (the default `target-torch`): "
        "**static** is `devlint check --select DEV019` (the line of the call), **dynamic** "
        f"is `devlint run --device mps --report --target-torch {target}` (the first call "
        "site; the run goes on past each missing operator). *missing*: "
        "`NotImplementedError` on a Mac; *falls back*: runs on the CPU with a warning.",
        "",
        "| operator | program | static (DEV019) | dynamic (devlint run) | MPS kernel from |",
        "|---|---|---|---|---|",
    ]
    found: set[str] = set()
    for program in sorted(FIXTURES.glob("bad_*.py")):
        command = [sys.executable, "-m", "devlint", "run", "--device", "mps", "--report"]
        command += ["--report-format", "json", "--target-torch", target, str(program)]
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
        report = json.loads(done.stdout)
        for row in report["unavailable"]:
            if not row["static_lines"] or row["operator"].endswith("_backward"):
                continue  # found by the run only, or a backward operator (of a call above)
            found.add(row["operator"])
            status = "missing" if row["status"] == "missing" else "falls back"
            line = row["first_call"].rsplit(":", 1)[1]
            fixed = row["mps_kernel_from"] or f"not yet ({format_target(TARGETS[-1])})"
            static = ", ".join(str(n) for n in row["static_lines"])
            lines.append(
                f"| `{row['operator']}` | `{program.name}` | line {static} | "
                f"{status} at {target}, line {line} ({_calls(row['calls'])}) | {fixed} |"
            )
    lines += [
        "",
        f"{len(found)} operators found both ways. `tests/verify/test_verify_tracked_ops.py` "
        "checks each: both ways at torch 2.0, neither way from the release that gave it a "
        "kernel.",
        "",
    ]
    return lines


def document() -> str:
    lines = [
        "# Will it run on a Mac? Measured MPS readiness",
        "",
        "Generated by `python scripts/mps_readiness_table.py` (do not edit by hand; "
        "`--check` tells whether it is stale) from devlint's MPS coverage table "
        "(`devlint/analysis/mps_coverage.json`: the first torch release with an MPS kernel "
        "for each aten operator, read from torch's macOS wheels) and devlint's virtual MPS, "
        "on the CPU. Check a script of your own with "
        "`devlint run --device mps --report script.py` (exit 0: every operator runs on "
        "MPS at the project's `target-torch`, 1: one is missing).",
        "",
        *model_section(),
        *fixture_section(),
    ]
    return "\n".join(lines).rstrip() + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the doc is stale")
    parser.add_argument("--output", type=Path, default=DOC)
    options = parser.parse_args()
    text = document()
    if options.check:
        current = options.output.read_text("utf-8") if options.output.exists() else ""
        if current != text:
            print(f"{options.output} is stale: run python scripts/mps_readiness_table.py")
            return 1
        return 0
    options.output.write_text(text, "utf-8")
    print(f"wrote {options.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
