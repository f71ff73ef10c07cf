"""Record ``devlint/analysis/mps_op_map.json``: which aten operators public torch calls run.

Each call of ``SPECS`` runs on the CPU under a ``TorchDispatchMode`` that records the aten
operators it dispatches. Composite operators are opened up the way MPS would run them:

- a ``CompositeImplicitAutograd`` operator (on the CPU) that some release gives an MPS
  kernel or fallback of its own (``linalg_svd``, ``upsample_nearest3d.vec``) decomposes
  before any mode sees it: a Python kernel at ``AutogradCPU`` records it and
  runs its decomposition (``OpOverload.decompose``), whose operators are its children;
- a ``CompositeExplicitAutograd`` operator with no CPU kernel of its own, and that MPS
  runs by decomposition in some release, runs its composite kernel under the mode.

Only operators that matter to MPS are kept (those in ``mps_coverage``, and composites
holding one), and only calls that reach one: the others run on MPS in every release.
Operators the CPU picks for itself inside a call (``mkldnn_*``, ``slow_conv*``) are
skipped; multi-tensor ``_foreach_*`` operators, which torch's Python code calls only where
the device has them, stand for the operators they decompose into. The map is checked by ``tests/analysis/test_mps_op_map.py``, which runs a sample
of ``SPECS`` again.

    .venv/bin/python scripts/record_op_map.py            # write the map
    .venv/bin/python scripts/record_op_map.py --check    # exit 1 if it differs
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from devlint.analysis import mps_coverage  # noqa: E402

MAP = ROOT / "devlint" / "analysis" / "mps_op_map.json"
CPU_ONLY = ("mkldnn", "slow_conv", "_nnpack", "thnn_conv", "cudnn", "miopen", "_cpu")
# Multi-tensor operators: torch's Python code calls them only where it knows the device
# and release have them (``_has_foreach_support``), else one operator per tensor: they
# stand for what they decompose into.
FOREACH = "_foreach_"


@dataclass(frozen=True)
class Spec:
    """One public call: how the rule names it, and code that makes it on CPU tensors.

    ``setup`` runs first, unrecorded; ``code`` is recorded. Both see ``torch``, ``nn``,
    ``F`` and ``x`` (a 4x4 float matrix), ``v`` (a float vector of 8), ``i`` (an index
    vector), ``img`` (1x4x8x8), ``vol`` (1x2x4x4x4), ``seq`` (8x2x5 log-probabilities).
    """

    call: str
    code: str
    setup: str = ""
    when: dict[str, object] = field(default_factory=dict)
    positions: dict[str, int] = field(default_factory=dict)
    kind: str = ""

    @property
    def call_kind(self) -> str:
        if self.kind:
            return self.kind
        if self.call.startswith("Tensor."):
            return "method"
        leaf = self.call.rsplit(".", 1)[-1]
        return "module" if self.call.startswith("torch.nn.") and leaf[:1].isupper() else "function"


def _both(name: str, rest: str = "", first: str = "x", **options: Any) -> list[Spec]:
    """``torch.name(first, rest)`` and ``first.name(rest)``: the same operators."""
    function = f"torch.{name}({first}{', ' if rest else ''}{rest})"
    method = f"({first}).{name}({rest})"
    return [Spec(f"torch.{name}", function, **options), Spec(f"Tensor.{name}", method, **options)]


EMBED = "m = nn.Embedding(10, 4, max_norm=1.0)"
SPECS: list[Spec] = [
    # linear algebra
    Spec("torch.linalg.solve", "torch.linalg.solve(x, v[:4])"),
    Spec("torch.linalg.solve_ex", "torch.linalg.solve_ex(x, v[:4])"),
    Spec("torch.linalg.inv", "torch.linalg.inv(x)"),
    *_both("inverse"),
    Spec("torch.linalg.det", "torch.linalg.det(x)"),
    *_both("det"),
    *_both("logdet", "", "x @ x.T + torch.eye(4)"),
    Spec("torch.linalg.slogdet", "torch.linalg.slogdet(x)"),
    *_both("slogdet"),
    Spec("torch.linalg.cholesky", "torch.linalg.cholesky(x @ x.T + torch.eye(4))"),
    *_both("cholesky", "", "x @ x.T + torch.eye(4)"),
    *_both("cholesky_inverse", "", "torch.eye(4)"),
    *_both("cholesky_solve", "torch.eye(4)"),
    Spec("torch.linalg.lu_factor", "torch.linalg.lu_factor(x)"),
    Spec("torch.linalg.lu", "torch.linalg.lu(x)"),
    Spec("torch.linalg.lu_solve", "torch.linalg.lu_solve(*torch.linalg.lu_factor(x), x)"),
    Spec("torch.linalg.qr", "torch.linalg.qr(x)"),
    *_both("qr"),
    Spec("torch.linalg.eig", "torch.linalg.eig(x)"),
    Spec("torch.linalg.eigvals", "torch.linalg.eigvals(x)"),
    Spec("torch.linalg.eigh", "torch.linalg.eigh(x @ x.T)"),
    Spec("torch.linalg.eigvalsh", "torch.linalg.eigvalsh(x @ x.T)"),
    Spec("torch.linalg.svd", "torch.linalg.svd(x)"),
    Spec("torch.linalg.svdvals", "torch.linalg.svdvals(x)"),
    *_both("svd"),
    *_both("pinverse"),
    Spec("torch.linalg.pinv", "torch.linalg.pinv(x)"),
    Spec("torch.linalg.matrix_rank", "torch.linalg.matrix_rank(x)"),
    Spec("torch.linalg.matrix_norm", "torch.linalg.matrix_norm(x, ord=2)", when={"ord": 2}),
    Spec("torch.linalg.matrix_norm", "torch.linalg.matrix_norm(x, ord='nuc')", when={"ord": "nuc"}),
    Spec("torch.linalg.cond", "torch.linalg.cond(x)"),
    Spec("torch.linalg.matrix_exp", "torch.linalg.matrix_exp(x)"),
    *_both("matrix_exp"),
    Spec("torch.linalg.lstsq", "torch.linalg.lstsq(x, x)"),
    Spec("torch.linalg.householder_product", "torch.linalg.householder_product(x, v[:4])"),
    *_both("geqrf"),
    Spec("torch.linalg.ldl_factor", "torch.linalg.ldl_factor(x @ x.T)"),
    Spec("torch.lu_unpack", "torch.lu_unpack(*torch.linalg.lu_factor(x))"),
    *_both("vdot", "v", "v"),
    # indexing, sorting, statistics
    *_both("take", "i"),
    Spec("Tensor.put_", "x.clone().put_(i, v[:3])"),
    Spec("Tensor.put", "x.put(i, v[:3])"),
    *_both("mode", "1"),
    *_both("kthvalue", "2, 1"),
    *_both("nanmedian"),
    *_both("cummax", "1"),
    *_both("cummin", "1"),
    *_both("logcumsumexp", "1"),
    Spec("torch.unique", "torch.unique(x, dim=0)", when={"dim": "given"}),
    Spec("Tensor.unique", "x.unique(dim=0)", when={"dim": "given"}),
    *_both("unique_consecutive", "", "i"),
    Spec("torch.bucketize", "torch.bucketize(v, torch.arange(3.0))"),
    Spec("torch.searchsorted", "torch.searchsorted(torch.arange(3.0), v)"),
    Spec("torch.isin", "torch.isin(v, v[:2])"),
    *_both("index_reduce", "0, i[:2] % 4, x[:2], 'prod'"),
    Spec("Tensor.index_reduce_", "x.clone().index_reduce_(0, i[:2] % 4, x[:2], 'prod')"),
    *_both("index_copy", "0, i[:2] % 4, x[:2]"),
    *_both("scatter_reduce", "0, i % 8, v[:3], 'prod'", "v"),
    *_both("histc", "", "v"),
    Spec("torch.histogram", "torch.histogram(v)"),
    Spec("torch.tril_indices", "torch.tril_indices(4, 4)"),
    Spec("torch.triu_indices", "torch.triu_indices(4, 4)"),
    # elementwise and special functions
    *_both("heaviside", "x"),
    *_both("lcm", "i", "i"),
    *_both("gcd", "i", "i"),
    *_both("sinc"),
    *_both("angle"),
    *_both("erfc"),
    *_both("lgamma"),
    *_both("digamma"),
    Spec("torch.polygamma", "torch.polygamma(1, x)"),
    Spec("Tensor.polygamma", "x.polygamma(1)"),
    *_both("i0"),
    *_both("igamma", "x.abs()", "x.abs()"),
    *_both("igammac", "x.abs()", "x.abs()"),
    *_both("nextafter", "x"),
    *_both("hypot", "x"),
    *_both("xlogy", "x"),
    *_both("logit"),
    Spec("Tensor.logit_", "x.clone().logit_()"),
    Spec("torch.round", "torch.round(x, decimals=2)", when={"decimals": "given"}),
    Spec("Tensor.round", "x.round(decimals=2)", when={"decimals": "given"}),
    *_both("bitwise_left_shift", "i", "i"),
    Spec("torch.rsub", "torch.rsub(x, x)"),
    Spec("torch.special.erfcx", "torch.special.erfcx(x)"),
    Spec("torch.special.i0e", "torch.special.i0e(x)"),
    Spec("torch.special.i1", "torch.special.i1(x)"),
    Spec("torch.special.i1e", "torch.special.i1e(x)"),
    Spec("torch.special.xlog1py", "torch.special.xlog1py(x, x)"),
    Spec("torch.special.zeta", "torch.special.zeta(x, x)"),
    Spec("torch.special.entr", "torch.special.entr(x)"),
    Spec("torch.special.ndtri", "torch.special.ndtri(x.sigmoid())"),
    Spec("torch.special.log_ndtr", "torch.special.log_ndtr(x)"),
    Spec("torch.special.airy_ai", "torch.special.airy_ai(x)"),
    Spec("torch.special.bessel_j0", "torch.special.bessel_j0(x)"),
    Spec("torch.special.bessel_j1", "torch.special.bessel_j1(x)"),
    Spec("torch.special.modified_bessel_i0", "torch.special.modified_bessel_i0(x)"),
    Spec("torch.special.spherical_bessel_j0", "torch.special.spherical_bessel_j0(x)"),
    Spec("torch.special.legendre_polynomial_p", "torch.special.legendre_polynomial_p(x, 2)"),
    Spec("torch.special.laguerre_polynomial_l", "torch.special.laguerre_polynomial_l(x, 2)"),
    Spec("torch.special.chebyshev_polynomial_t", "torch.special.chebyshev_polynomial_t(x, 2)"),
    Spec("torch.special.hermite_polynomial_h", "torch.special.hermite_polynomial_h(x, 2)"),
    # random sampling
    Spec("torch.poisson", "torch.poisson(x.abs())"),
    Spec("torch.binomial", "torch.binomial(x.abs().round(), x.sigmoid())"),
    Spec("torch._standard_gamma", "torch._standard_gamma(x.abs())"),
    Spec("torch.distributions.Gamma", "torch.distributions.Gamma(x.abs(), x.abs()).sample()"),
    Spec("torch.distributions.Dirichlet", "torch.distributions.Dirichlet(v.abs()).sample()"),
    Spec("torch.distributions.Beta", "torch.distributions.Beta(v.abs(), v.abs()).sample()"),
    Spec("torch.distributions.Poisson", "torch.distributions.Poisson(v.abs()).sample()"),
    Spec("torch.distributions.Binomial", "torch.distributions.Binomial(3, v.sigmoid()).sample()"),
    Spec("Tensor.cauchy_", "x.clone().cauchy_()"),
    Spec("Tensor.log_normal_", "x.clone().log_normal_()"),
    Spec("Tensor.geometric_", "x.clone().geometric_(0.5)"),
    # signal processing
    Spec("torch.fft.fft", "torch.fft.fft(v)"),
    Spec("torch.fft.rfft", "torch.fft.rfft(v)"),
    Spec("torch.fft.irfft", "torch.fft.irfft(torch.fft.rfft(v))"),
    Spec("torch.fft.fft2", "torch.fft.fft2(x)"),
    Spec("torch.fft.rfft2", "torch.fft.rfft2(x)"),
    Spec("torch.fft.fftn", "torch.fft.fftn(x)"),
    Spec("torch.stft", "torch.stft(torch.randn(64), 16, return_complex=True)"),
    # nn.functional and the modules built on it
    Spec(
        "torch.nn.functional.embedding",
        "F.embedding(i, torch.randn(10, 4), max_norm=1.0)",
        when={"max_norm": "given"},
        positions={"max_norm": 3},
    ),
    Spec(
        "torch.nn.Embedding", "m(i)", EMBED, when={"max_norm": "given"}, positions={"max_norm": 3}
    ),
    Spec(
        "torch.nn.functional.embedding_bag",
        "F.embedding_bag(i, torch.randn(10, 4), torch.tensor([0]))",
    ),
    Spec("torch.nn.EmbeddingBag", "m(i, torch.tensor([0]))", "m = nn.EmbeddingBag(10, 4)"),
    # RReLU samples its slopes in training and uses their mean in evaluation, both through
    # rrelu_with_noise (first recorded in training only: virtual MPS showed the other).
    Spec("torch.nn.functional.rrelu", "F.rrelu(x, training=True); F.rrelu(x)"),
    Spec("torch.nn.RReLU", "m(x); m.eval(); m(x)", "m = nn.RReLU()"),
    Spec("torch.nn.functional.multi_margin_loss", "F.multi_margin_loss(x[:3], i % 4)"),
    Spec("torch.nn.MultiMarginLoss", "m(x[:3], i % 4)", "m = nn.MultiMarginLoss()"),
    Spec(
        "torch.nn.functional.multilabel_margin_loss",
        "F.multilabel_margin_loss(x, torch.zeros(4, 4, dtype=torch.long))",
    ),
    Spec(
        "torch.nn.MultiLabelMarginLoss",
        "m(x, torch.zeros(4, 4, dtype=torch.long))",
        "m = nn.MultiLabelMarginLoss()",
    ),
    Spec(
        "torch.nn.functional.ctc_loss",
        "F.ctc_loss(seq, torch.ones(2, 3, dtype=torch.long), [8, 8], [3, 3])",
    ),
    Spec(
        "torch.nn.CTCLoss",
        "m(seq, torch.ones(2, 3, dtype=torch.long), [8, 8], [3, 3])",
        "m = nn.CTCLoss()",
    ),
    Spec("torch.nn.functional.channel_shuffle", "F.channel_shuffle(img, 2)"),
    Spec("torch.nn.ChannelShuffle", "m(img)", "m = nn.ChannelShuffle(2)"),
    Spec("torch.nn.functional.pdist", "F.pdist(x)"),
    Spec("torch.nn.functional.adaptive_max_pool3d", "F.adaptive_max_pool3d(vol, 2)"),
    Spec("torch.nn.AdaptiveMaxPool3d", "m(vol)", "m = nn.AdaptiveMaxPool3d(2)"),
    Spec("torch.nn.functional.adaptive_avg_pool3d", "F.adaptive_avg_pool3d(vol, 3)"),
    Spec("torch.nn.AdaptiveAvgPool3d", "m(vol)", "m = nn.AdaptiveAvgPool3d(3)"),
    Spec("torch.nn.functional.max_pool3d", "F.max_pool3d(vol, 2)"),
    Spec("torch.nn.MaxPool3d", "m(vol)", "m = nn.MaxPool3d(2)"),
    Spec("torch.nn.functional.avg_pool3d", "F.avg_pool3d(vol, 2)"),
    Spec("torch.nn.AvgPool3d", "m(vol)", "m = nn.AvgPool3d(2)"),
    Spec(
        "torch.nn.functional.fractional_max_pool2d",
        "F.fractional_max_pool2d(img, 2, output_size=4)",
    ),
    Spec("torch.nn.FractionalMaxPool2d", "m(img)", "m = nn.FractionalMaxPool2d(2, output_size=4)"),
    Spec(
        "torch.nn.functional.fractional_max_pool3d",
        "F.fractional_max_pool3d(vol, 2, output_size=2)",
    ),
    Spec("torch.nn.FractionalMaxPool3d", "m(vol)", "m = nn.FractionalMaxPool3d(2, output_size=2)"),
    Spec(
        "torch.nn.functional.max_unpool2d",
        "F.max_unpool2d(*F.max_pool2d(img, 2, return_indices=True), 2)",
    ),
    Spec(
        "torch.nn.MaxUnpool2d",
        "m(*F.max_pool2d(img, 2, return_indices=True))",
        "m = nn.MaxUnpool2d(2)",
    ),
    Spec(
        "torch.nn.functional.interpolate",
        "F.interpolate(img, scale_factor=2, mode='bicubic')",
        when={"mode": "bicubic"},
        positions={"mode": 3},
    ),
    Spec(
        "torch.nn.functional.interpolate",
        "F.interpolate(img, scale_factor=2, mode='bicubic', antialias=True)",
        when={"mode": "bicubic", "antialias": True},
    ),
    Spec(
        "torch.nn.functional.interpolate",
        "F.interpolate(img, scale_factor=0.5, mode='bilinear', antialias=True)",
        when={"mode": "bilinear", "antialias": True},
    ),
    Spec(
        "torch.nn.functional.interpolate",
        "F.interpolate(vol, scale_factor=2, mode='trilinear')",
        when={"mode": "trilinear"},
        positions={"mode": 3},
    ),
    Spec(
        "torch.nn.functional.interpolate",
        "F.interpolate(v[None, None], scale_factor=2, mode='linear')",
        when={"mode": "linear"},
        positions={"mode": 3},
    ),
    Spec(
        "torch.nn.Upsample",
        "m(img)",
        "m = nn.Upsample(scale_factor=2, mode='bicubic')",
        when={"mode": "bicubic"},
        positions={"mode": 2},
    ),
    Spec(
        "torch.nn.Upsample",
        "m(vol)",
        "m = nn.Upsample(scale_factor=2, mode='trilinear')",
        when={"mode": "trilinear"},
        positions={"mode": 2},
    ),
    Spec(
        "torch.nn.functional.grid_sample",
        "F.grid_sample(vol, torch.zeros(1, 2, 2, 2, 3), align_corners=False)",
    ),
    Spec("torch.nn.functional.hardshrink", "F.hardshrink(x)"),
    Spec("torch.nn.Hardshrink", "m(x)", "m = nn.Hardshrink()"),
    Spec("torch.nn.functional.softshrink", "F.softshrink(x)"),
    Spec("torch.nn.Softshrink", "m(x)", "m = nn.Softshrink()"),
    Spec("torch.nn.functional.mish", "F.mish(x)"),
    Spec("torch.nn.Mish", "m(x)", "m = nn.Mish()"),
    Spec("torch.nn.functional.fold", "F.fold(torch.randn(1, 4, 9), (4, 4), 2)"),
    Spec("torch.nn.Fold", "m(torch.randn(1, 4, 9))", "m = nn.Fold((4, 4), 2)"),
    Spec("torch.nn.functional.unfold", "F.unfold(img, 2)"),
    Spec("torch.nn.Unfold", "m(img)", "m = nn.Unfold(2)"),
    Spec("torch.nn.functional.dropout", "F.dropout(x, training=True)"),
    Spec("torch.nn.functional.dropout3d", "F.dropout3d(vol, training=True)"),
    Spec("torch.cdist", "torch.cdist(x, x, compute_mode='donot_use_mm_for_euclid_dist')"),
    Spec(
        "torch.nn.utils.clip_grad_norm_",
        "torch.nn.utils.clip_grad_norm_(p, 1.0)",
        "p = [nn.Parameter(torch.randn(3))]; p[0].grad = torch.ones(3)",
    ),
    # training machinery that runs where its tensors are (fused optimizers are left out:
    # before their MPS kernels, torch's Python code refuses MPS with its own RuntimeError)
    Spec(
        "torch.amp.GradScaler",
        "s.scale(w.sum()).backward(); s.step(o); s.update()",
        "w = nn.Parameter(torch.randn(3)); o = torch.optim.SGD([w], lr=0.1); "
        "s = torch.amp.GradScaler('cpu')",
        when={"enabled": "absent or True"},
        positions={"enabled": 5},
        kind="object",
    ),
]


# -- recording


def _name(op: Any) -> str:
    """``aten.linalg_svd.U`` -> ``linalg_svd.U``; the default overload has no suffix."""
    base = op._schema.name.split("::", 1)[1]
    return base if op._overloadname == "default" else f"{base}.{op._overloadname}"


def _letters(name: str, current: dict[str, str]) -> str:
    entry = mps_coverage.lookup(name)
    return entry.statuses if entry is not None else current.get(name, "K")


class Recorder:
    """A ``TorchDispatchMode`` and the ``AutogradCPU`` kernels that open up composites."""

    def __init__(self) -> None:
        import torch
        import torchgen
        import yaml
        from torch.utils._python_dispatch import TorchDispatchMode

        path = Path(torchgen.__file__).parent / "packaged/ATen/native/native_functions.yaml"
        functions = yaml.load(
            path.read_text("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        )
        self.current = mps_coverage.classify(functions)  # the installed torch's column
        self.stack: list[list[Any]] = [[]]
        self.active: set[str] = set()
        recorder = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                return recorder.dispatch(self, func, args, kwargs or {})

        self.mode = Mode()
        self.library = torch.library.Library("aten", "IMPL")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Overriding a previously registered kernel"
            for name in self._implicit_composites():
                self._intercept(name)

    def _implicit_composites(self) -> list[str]:
        import torch

        found = []
        for name, entry in mps_coverage.operators().items():
            if any(letter in "KF" for letter in entry.statuses):
                qualified = f"aten::{name}"
                if torch._C._dispatch_has_kernel_for_dispatch_key(
                    qualified, "CompositeImplicitAutograd"
                ):
                    found.append(name)
        for name, letter in self.current.items():  # composite on the CPU, MPS kernel here
            if letter == "K" and name not in mps_coverage.operators():
                qualified = f"aten::{name}"
                if torch._C._dispatch_has_kernel_for_dispatch_key(
                    qualified, "CompositeImplicitAutograd"
                ):
                    found.append(name)
        return sorted(found)

    def _intercept(self, name: str) -> None:
        import torch

        base, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops.aten, base), overload or "default")
        recorder = self

        def kernel(*args: Any, **kwargs: Any) -> Any:
            node: list[Any] = [name, []]
            recorder.stack[-1].append(node)
            recorder.stack.append(node[1])
            try:
                return op.decompose(*args, **kwargs)
            finally:
                recorder.stack.pop()

        self.library.impl(name, kernel, "AutogradCPU")

    def dispatch(self, mode: Any, func: Any, args: tuple, kwargs: dict) -> Any:
        import torch
        from torch._C import DispatchKey

        name = _name(func)
        node: list[Any] = [name, []]
        self.stack[-1].append(node)
        letters = _letters(name, self.current)
        qualified = func.name()
        if (
            "C" in letters
            and name not in self.active
            and not torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "CPU")
        ):
            for key in ("CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional"):
                if torch._C._dispatch_has_kernel_for_dispatch_key(qualified, key):
                    self.stack.append(node[1])
                    self.active.add(name)
                    try:
                        with mode:
                            return func._op_dk(getattr(DispatchKey, key), *args, **kwargs)
                    finally:
                        self.stack.pop()
                        self.active.discard(name)
        try:
            return func(*args, **kwargs)
        except RuntimeError as error:
            if "Expected a value of type 'Tensor'" not in str(error):
                raise
            # A composite's wrapped number reaches Python as a number: wrap it again.
            return func(*_tensors_for_numbers(func, args), **kwargs)

    def record(self, spec: Spec) -> list[Any]:
        """The pruned operator trees ``spec.code`` dispatches."""
        import torch

        torch.manual_seed(0)
        scope = _scope()
        exec(spec.setup, scope)
        self.stack = [[]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with self.mode:
                exec(spec.code, scope)
        return _prune(self.stack[0])

    def close(self) -> None:
        self.library._destroy()


def _tensors_for_numbers(func: Any, args: tuple) -> list[Any]:
    import torch

    fixed = list(args)
    for index, argument in enumerate(func._schema.arguments[: len(args)]):
        if str(argument.type) == "Tensor" and isinstance(args[index], int | float | bool):
            fixed[index] = torch.tensor(args[index])
    return fixed


def _scope() -> dict[str, Any]:
    import torch

    return {
        "torch": torch,
        "nn": torch.nn,
        "F": torch.nn.functional,
        "x": torch.randn(4, 4),
        "v": torch.randn(8),
        "i": torch.tensor([0, 5, 3]),
        "img": torch.randn(1, 4, 8, 8),
        "vol": torch.randn(1, 2, 4, 4, 4),
        "seq": torch.randn(8, 2, 5).log_softmax(2),
    }


def _prune(nodes: list[Any]) -> list[Any]:
    """Keep operators of the coverage table and composites that hold one (as ``name`` or
    ``[name, children]``), once each per level, in first-seen order."""
    kept: list[Any] = []
    seen: set[str] = set()
    for name, children in nodes:
        if name.startswith(CPU_ONLY) or any(part in name for part in ("mkldnn", "slow_conv")):
            continue
        inner = _prune(children)
        if name.startswith(FOREACH):  # Python chose it for this device and release
            kept.extend(item for item in inner if json.dumps(item) not in seen)
            seen.update(json.dumps(item) for item in inner)
            continue
        listed = mps_coverage.lookup(name) is not None
        if not listed and not inner:
            continue
        item: Any = [name, inner] if inner else name
        key = json.dumps(item)
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


@contextmanager
def recorder() -> Iterator[Recorder]:
    made = Recorder()
    try:
        yield made
    finally:
        made.close()


def record_all(specs: list[Spec]) -> tuple[list[dict[str, Any]], list[str]]:
    found, dropped = [], []
    with recorder() as rec:
        for spec in specs:
            try:
                ops = rec.record(spec)
            except Exception as error:
                raise SystemExit(f"{spec.call}: {spec.code}: {error}") from error
            if not ops:
                dropped.append(spec.call)
                continue
            entry: dict[str, Any] = {"call": spec.call, "kind": spec.call_kind}
            if spec.when:
                entry["when"] = spec.when
            if spec.positions:
                entry["positions"] = spec.positions
            entry["ops"] = ops
            found.append(entry)
    return found, dropped


def dumps(calls: list[dict[str, Any]]) -> str:
    import torch

    lines = ",\n".join(f"  {json.dumps(call)}" for call in calls)
    head = json.dumps(
        {"source": "scripts/record_op_map.py", "torch": torch.__version__.split("+")[0]}
    )[:-1]
    return f'{head}, "calls": [\n{lines}\n]}}\n'


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    options = parser.parse_args()
    calls, dropped = record_all(SPECS)
    if dropped:
        print(f"run on MPS in every release (not kept): {', '.join(dropped)}", file=sys.stderr)
    text = dumps(calls)
    if options.check:
        same = MAP.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{MAP.relative_to(ROOT)} differs", file=sys.stderr)
        return 0 if same else 1
    MAP.write_text(text, encoding="utf-8")
    print(f"wrote {MAP.relative_to(ROOT)}: {len(calls)} calls", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
