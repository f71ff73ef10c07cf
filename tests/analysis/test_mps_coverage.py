"""The MPS coverage table against the installed torch's own native_functions.yaml."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from devlint.analysis import mps_coverage
from devlint.analysis.mps_coverage import RELEASES, classify, lookup, status
from devlint.torch_target import parse_target


def _installed_yaml() -> tuple[list[dict], tuple[int, int]]:
    torch = pytest.importorskip("torch")
    torchgen = pytest.importorskip("torchgen")
    yaml = pytest.importorskip("yaml")
    release = parse_target(torch.__version__.split("+")[0])
    if release not in RELEASES:
        pytest.skip(f"torch {torch.__version__} is not a column of the table")
    path = Path(torchgen.__file__).parent / "packaged/ATen/native/native_functions.yaml"
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(path.read_text(encoding="utf-8"), Loader=loader), release


def test_the_installed_torch_column_is_what_its_yaml_says() -> None:
    functions, release = _installed_yaml()
    derived = classify(
        functions, mps_coverage.outside_yaml(release), mps_coverage.falls_back(release)
    )
    without = {name for name, letter in derived.items() if letter in ("M", "F")}
    assert len(without) > 200
    for name in without:  # every operator without a kernel is in the table, as it is
        entry = lookup(name)
        assert entry is not None, name
        assert entry.status(release) == derived[name], name
    for name, entry in mps_coverage.operators().items():  # and nothing else is
        assert entry.status(release) == derived.get(name, "-"), name


def test_the_table_has_one_letter_per_release() -> None:
    data = json.loads(
        resources.files("devlint.analysis").joinpath("mps_coverage.json").read_text("utf-8")
    )
    assert [parse_target(text) for text in data["releases"]] == list(RELEASES)
    assert all(len(letters) == len(RELEASES) for letters in data["operators"].values())
    assert all(set(letters) <= set("KCFM-") for letters in data["operators"].values())


@pytest.mark.parametrize(
    ("name", "since"),
    [
        ("_linalg_solve_ex", (2, 7)),
        ("upsample_bicubic2d", (2, 6)),
        ("_embedding_bag", (2, 10)),
        ("linalg_qr", (2, 12)),
        ("_fft_r2c", (2, 3)),
        ("_amp_foreach_non_finite_check_and_unscale_", (2, 8)),
        ("col2im", (2, 8)),
        ("take", None),
        ("linalg_eig", None),
        ("rrelu_with_noise", None),
    ],
)
def test_the_release_that_brought_a_kernel(name: str, since: tuple[int, int] | None) -> None:
    entry = lookup(name)
    assert entry is not None
    assert entry.since == since


def test_lookup_reads_every_spelling_of_an_operator() -> None:
    assert lookup("aten::take") is lookup("aten.take.default") is lookup("take.default")
    assert lookup("linalg_svd.U") is not None
    assert lookup("add.Tensor") is None  # runs on MPS everywhere: not listed


def test_status_by_release() -> None:
    assert status("_linalg_solve_ex", (2, 6)) == "M"
    assert status("_linalg_solve_ex", (2, 7)) == "K"
    assert status("embedding_renorm_", (2, 13)) == "F"
    assert status("col2im", (2, 0)) == "F"
    assert status("add.Tensor", (2, 0)) == "K"
    assert status("take", (1, 13)) == "M"  # older than the table: its oldest column
    assert status("take", (2, 99)) == "M"  # newer: its newest


def test_counts_and_messages() -> None:
    counts = mps_coverage.counts()
    assert counts[(2, 13)]["M"] < counts[(2, 0)]["M"]
    assert counts[(2, 13)]["F"] == 3
    old, new = mps_coverage.messages((2, 0)), mps_coverage.messages((2, 13))
    assert "issues/77764" in old["error"] and "issues/141287" in new["error"]
    assert "{commit}" in new["error"] and "{op}" in new["warning"]


def test_classify_resolves_delegates_composites_and_fallbacks() -> None:
    functions = [
        {"func": "f.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
         "dispatch": {"CPU, CUDA, MPS": "f_out"}},
        {"func": "f(Tensor self) -> Tensor", "structured_delegate": "f.out"},
        {"func": "g(Tensor self) -> Tensor"},
        {"func": "h(Tensor self) -> Tensor", "dispatch": {"CompositeExplicitAutograd": "h"}},
        {"func": "i(Tensor self) -> Tensor", "dispatch": {"CPU": "i", "CUDA": "i"}},
        {"func": "j(Tensor self) -> Tensor", "dispatch": {"SparseCPU": "j"}},
        {"func": "k(Tensor self) -> Tensor", "dispatch": {"CPU": "k"}},
        {"func": "l(Tensor self) -> Tensor", "dispatch": {"CPU": "l"}},
    ]  # fmt: skip
    found = classify(functions, outside={"l"}, fallback={"k"})
    assert found == {
        "f.out": "K", "f": "K", "g": "C", "h": "C", "i": "M", "j": "-", "k": "F", "l": "K",
    }  # fmt: skip
