"""Star imports of the project's own modules (``from utils import *``) on real files.

A module next to the file (or in its package) is summarised and its top-level names are
bound as it defines them; an unresolvable one leaves the file as it is analysed without
it.
"""

from __future__ import annotations

import os
import textwrap
from dataclasses import replace
from pathlib import Path

import libcst as cst
import pytest

from devlint.analysis import analyze, project_imports
from devlint.api import LintRequest, lint, lint_text, load_settings
from devlint.engine import CheckOptions, check_text
from devlint.fixing import fix_text
from devlint.rule import all_rules

ALL = CheckOptions(frozenset(code for code, rule in all_rules().items() if rule.default))
SELECTION = "torch.device('cuda' if torch.cuda.is_available() else 'cpu')"

UTILS = """
    import torch
    from torch import nn
    from torch.utils.data import Dataset

    placement = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_gpu = torch.cuda.is_available()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 1)

        def forward(self, x):
            return self.fc(x)

    class OnDevice(Dataset):
        def __init__(self, x):
            self.x = x.to(placement)

        def __len__(self):
            return len(self.x)

        def __getitem__(self, i):
            return self.x[i]

    def make_batch():
        return torch.randn(4, 3)

    def _hidden():
        return torch.randn(4, 3).to(placement)
"""

TRAIN = """
    from utils import *
    from torch.utils.data import DataLoader

    model = Net().to(placement)
    out = model(make_batch())
    for xb in DataLoader(OnDevice(torch.randn(8, 3))):
        print(model(xb).detach().numpy())
    if use_gpu:
        extra = torch.ones(3).cuda()
"""


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    return path


def codes(path: Path, origin: Path | None = None, text: str | None = None) -> list[str]:
    text = path.read_text(encoding="utf-8") if text is None else text
    found = check_text(text, str(path), replace(ALL, origin=origin))
    return [f"{d.start.row}:{d.code}" for d in found if d.code != "DEV004"]


def test_a_siblings_names_are_bound_as_it_defines_them(tmp_path: Path) -> None:
    write(tmp_path, "utils.py", UTILS)
    train = write(tmp_path, "train.py", TRAIN)
    # Net is a module on the CPU, moved to a device; make_batch() is a CPU tensor (DEV006);
    # the loader's batches are on the device (no DEV002); use_gpu guards .cuda() (no DEV003).
    assert codes(train, origin=train) == ["5:DEV006", "7:DEV001"]
    # Without the sibling the names are unknown: the .cuda() is unguarded.
    assert codes(train) == ["9:DEV003"]


def test_a_sibling_the_file_cannot_use_leaves_it_as_before(tmp_path: Path) -> None:
    train = write(tmp_path, "train.py", TRAIN)
    without = codes(train)
    assert codes(train, origin=train) == without  # missing
    write(tmp_path, "utils.py", "def broken(:\n")
    assert codes(train, origin=train) == without  # does not parse
    (tmp_path / "utils.py").write_bytes(b"device = '\xff'\n")
    assert codes(train, origin=train) == without  # not UTF-8


def test_relative_and_package_imports(tmp_path: Path) -> None:
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/common.py", UTILS)
    write(tmp_path, "pkg/sub/__init__.py", "")
    relative = write(tmp_path, "pkg/sub/a.py", TRAIN.replace("from utils", "from ..common"))
    absolute = write(tmp_path, "pkg/sub/b.py", TRAIN.replace("from utils", "from pkg.common"))
    assert codes(relative, origin=relative) == ["5:DEV006", "7:DEV001"]
    assert codes(absolute, origin=absolute) == ["5:DEV006", "7:DEV001"]


def test_only_exported_names_and_no_nodes_of_the_sibling(tmp_path: Path) -> None:
    write(
        tmp_path,
        "config.py",
        """
        import torch
        __all__ = ["device", "pick", "torch"]
        device = "cuda"
        hidden = "cuda"
        def pick():
            return torch.device("cuda")
        """,
    )
    main = write(
        tmp_path,
        "main.py",
        """
        from config import *
        x = torch.ones(2).to(device)
        y = torch.ones(2).to(pick())
        print(x.numpy(), y.numpy(), x + torch.ones(2))
        z = torch.ones(2).to(hidden)
        """,
    )
    # The literals are the sibling's own DEV003 (reported there), never in main.py.
    assert codes(main, origin=main) == ["4:DEV001", "4:DEV001", "4:DEV006"]


def test_one_level_and_no_self_import(tmp_path: Path) -> None:
    write(tmp_path, "base.py", "import torch\ndevice = torch.device('cuda')\n")
    write(tmp_path, "utils.py", "from base import *\n")
    main = write(
        tmp_path, "main.py", "from utils import *\nfrom main import *\nx = torch.ones(2)\n"
    )
    origin = main.resolve()
    assert project_imports.module_path(origin, 0, "utils") == (tmp_path / "utils.py").resolve()
    assert project_imports.module_path(origin, 0, "main") is None
    assert project_imports.module_path(origin, 0, "torch.nn") is None
    facts = analyze(cst.parse_module(main.read_text()), origin=origin)
    assert "torch" not in facts.module_names  # base's names are not followed from utils


def test_each_sibling_is_summarised_once_per_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    utils = write(tmp_path, "utils.py", UTILS)
    train = write(tmp_path, "train.py", TRAIN)
    seen: list[int] = []
    original = project_imports.ProjectModules.parse

    def counting(self: project_imports.ProjectModules, path: Path, size: int) -> object:
        seen.append(size)
        return original(self, path, size)

    monkeypatch.setattr(project_imports.ProjectModules, "parse", counting)
    codes(train, origin=train)
    codes(train, origin=train)
    assert len(seen) == 1
    utils.write_text(utils.read_text() + "\nextra = 1\n", encoding="utf-8")  # a new size
    codes(train, origin=train)
    assert len(seen) == 2


def test_fixes_reuse_the_star_imported_device_and_torch(tmp_path: Path) -> None:
    write(
        tmp_path, "utils.py", "import torch\ndevice = SELECTION\n".replace("SELECTION", SELECTION)
    )
    main = write(tmp_path, "main.py", "from utils import *\nx = torch.ones(2).cuda()\n")
    options = replace(ALL, origin=main)
    fixed = fix_text(main.read_text(), str(main), options, unsafe=True).text
    assert fixed == "from utils import *\nx = torch.ones(2).to(device)\n"


def test_stdin_resolves_next_to_its_filename_only(tmp_path: Path) -> None:
    write(tmp_path, "utils.py", UTILS)
    data = textwrap.dedent(TRAIN).lstrip().encode()
    named = lint_text(data, "train.py", replace(ALL, origin=tmp_path / "train.py"))
    anonymous = lint_text(data, "-", ALL)
    assert "DEV003" not in {d.code for d in named.diagnostics}
    assert "DEV003" in {d.code for d in anonymous.diagnostics}


def test_settings_give_each_file_its_origin(tmp_path: Path) -> None:
    """What ``devlint check`` and the language server check a file with."""
    path = tmp_path / "train.py"
    assert load_settings(None).options_for(path).origin == path


def test_a_file_that_only_reexports_never_reads_its_siblings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "pkg/__init__.py", "from .utils import *\nfrom .models import *\n")
    write(tmp_path, "pkg/utils.py", UTILS)
    write(tmp_path, "pkg/models.py", "import torch\nnet = torch.nn.Linear(2, 2)\n")
    seen: list[Path] = []
    original = project_imports.ProjectModules.parse

    def counting(self: project_imports.ProjectModules, path: Path, size: int) -> object:
        seen.append(path)
        return original(self, path, size)

    monkeypatch.setattr(project_imports.ProjectModules, "parse", counting)
    init = tmp_path / "pkg" / "__init__.py"
    assert codes(init, origin=init) == []
    assert seen == []  # resolved lazily: no name of theirs was ever needed


def test_a_fix_resolves_the_star_imports_the_analysis_left_alone(tmp_path: Path) -> None:
    # Every name main.py reads is its own, so only the fix asks what ``utils`` binds.
    write(
        tmp_path, "utils.py", "import torch\ndevice = SELECTION\n".replace("SELECTION", SELECTION)
    )
    source = "import torch\nfrom utils import *\nx = torch.ones(2).cuda()\n"
    main = write(tmp_path, "main.py", source)
    fixed = fix_text(source, str(main), replace(ALL, origin=main), unsafe=True).text
    assert fixed == "import torch\nfrom utils import *\nx = torch.ones(2).to(device)\n"


def test_a_star_imported_cpu_device_is_not_written_for_cuda(tmp_path: Path) -> None:
    # ``device`` is the CPU in utils: writing it into ``.cuda()`` would move the tensor to the
    # CPU on a GPU machine, and a new ``device`` here would shadow the imported one.
    write(tmp_path, "utils.py", "import torch\ndevice = torch.device('cpu')\n")
    source = "from utils import *\nx = torch.ones(2).cuda()\n"
    main = write(tmp_path, "main.py", source)
    options = replace(ALL, origin=main)
    [finding] = check_text(source, str(main), options)
    assert finding.code == "DEV003" and finding.fix is None
    assert fix_text(source, str(main), options, unsafe=True).text == source


ARGUMENTS = """
    import argparse

    import torch

    def get_args():
        parser = argparse.ArgumentParser()
        parser.add_argument("--no-cuda", action="store_true")
        args = parser.parse_args()
        args.cuda = not args.no_cuda and torch.cuda.is_available()
        return args
"""

DISTRIBUTED = """
    import torch
    import torch.distributed as dist

    def reduce_dict(losses):
        if not dist.is_initialized():
            return losses
        names = sorted(losses)
        stacked = torch.stack([losses[name] for name in names])
        dist.all_reduce(stacked)
        return {name: value for name, value in zip(names, stacked)}
"""

MAIN = """
    import torch
    from torch import nn, optim
    from arguments import get_args
    from distributed import reduce_dict

    args = get_args()
    device = torch.device("cuda" if args.cuda else "cpu")
    model = nn.Linear(4, 1)
    if args.cuda:
        model = model.cuda()
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        losses = {}
        losses["mse"] = model(torch.randn(2, 4, device=device)).pow(2).mean()
        optimizer.zero_grad()
        losses["mse"].backward()
        optimizer.step()
        print(reduce_dict(losses)["mse"].item())
"""


def test_explicit_imports_of_project_functions(tmp_path: Path) -> None:
    """``args = get_args()`` carries the flags the sibling set on what it returns; a
    sibling's helper given device tensors returns them on the device."""
    write(tmp_path, "arguments.py", ARGUMENTS)
    write(tmp_path, "distributed.py", DISTRIBUTED)
    main = write(tmp_path, "main.py", MAIN)
    options = replace(ALL, codes=ALL.codes | {"DEV012"}, origin=main)
    found = {(d.start.row, d.code) for d in check_text(main.read_text(), str(main), options)}
    assert found == {(7, "DEV004"), (18, "DEV012")}
    # Without the sibling, ``args.cuda`` is the user's option: its "cuda" is unguarded
    # (DEV003), and a choice by an option alone tries no CUDA (no DEV004); the unseen
    # ``reduce_dict`` given device tensors is inferred to compute there (DEV012 only).
    alone = check_text(main.read_text(), str(main), replace(options, origin=None))
    expected = {(7, "DEV003"), (10, "DEV003"), (18, "DEV012")}
    assert {(d.start.row, d.code) for d in alone} == expected


def test_a_module_imported_from_its_package(tmp_path: Path) -> None:
    """``from tools import distributed`` (a module of a package, or ``from . import
    distributed``), then ``distributed.reduce_dict(losses)``: the function is the
    project's, as when its name is imported."""
    write(tmp_path, "tools/__init__.py", "")
    write(tmp_path, "tools/distributed.py", DISTRIBUTED)
    write(tmp_path, "arguments.py", ARGUMENTS)
    text = MAIN.replace("from distributed import reduce_dict", "from tools import distributed")
    main = write(
        tmp_path, "main.py", text.replace("reduce_dict(losses)", "distributed.reduce_dict(losses)")
    )
    options = replace(ALL, codes=ALL.codes | {"DEV012"}, origin=main)
    found = {(d.start.row, d.code) for d in check_text(main.read_text(), str(main), options)}
    assert found == {(7, "DEV004"), (18, "DEV012")}
    write(tmp_path, "tools/distributed.py", "")  # no such function: nothing known
    found = {(d.start.row, d.code) for d in check_text(main.read_text(), str(main), options)}
    assert found == {(7, "DEV004")}


def test_a_script_names_its_own_folder_as_its_package(tmp_path: Path) -> None:
    """``from tools import distributed`` in ``tools/main.py`` (run as ``python -m
    tools.main``, no ``__init__.py``): the module beside the script."""
    write(tmp_path, "tools/distributed.py", DISTRIBUTED)
    write(tmp_path, "tools/arguments.py", ARGUMENTS)
    text = MAIN.replace("from distributed import reduce_dict", "from tools import distributed")
    text = text.replace("reduce_dict(losses)", "distributed.reduce_dict(losses)")
    main = write(tmp_path, "tools/main.py", text)
    options = replace(ALL, codes=ALL.codes | {"DEV012"}, origin=main)
    found = {(d.start.row, d.code) for d in check_text(main.read_text(), str(main), options)}
    assert found == {(7, "DEV004"), (18, "DEV012")}


def test_scripts_beside_the_package_import_it_from_the_projects_root(tmp_path: Path) -> None:
    """``tools/main.py`` importing ``lib.distributed`` (``lib/`` beside ``tools/``, the root
    on the script's path: ``import _init_paths``), when the folder above is the project's
    root (``.git``); without a root, no folder above the file is searched (it may hold
    unrelated projects). Callers are not looked for there."""
    text = MAIN.replace("from distributed import", "from lib.distributed import")
    text = text.replace("from arguments", "from lib.arguments")
    found = {}
    for name, root in (("loose", False), ("checkout", True)):
        project = tmp_path / name
        if root:
            (project / ".git").mkdir(parents=True)
        write(project, "lib/distributed.py", DISTRIBUTED)
        write(project, "lib/arguments.py", ARGUMENTS)
        main = write(project, "tools/main.py", text)
        options = replace(ALL, codes=ALL.codes | {"DEV012"}, origin=main)
        diagnostics = check_text(main.read_text(), str(main), options)
        found[name] = {(d.start.row, d.code) for d in diagnostics}
        callee = write(project, "lib/train.py", CALLEE)
        flag = "not args.no_cuda and torch.cuda.is_available()"
        write(project, "tools/run.py", ENTRY.format(module="lib.train", flag=flag))
        assert importers(callee) == []
    # ``lib`` is not read: its ``reduce_dict`` is unseen (DEV012 inferred, as above)
    assert found["loose"] == {(7, "DEV003"), (10, "DEV003"), (18, "DEV012")}
    assert found["checkout"] == {(7, "DEV004"), (18, "DEV012")}


def test_the_result_cache_follows_the_project_modules_a_file_read(tmp_path: Path) -> None:
    write(tmp_path, "arguments.py", ARGUMENTS)
    write(tmp_path, "distributed.py", DISTRIBUTED)
    write(tmp_path, "unused.py", "import torch\n")
    main = write(tmp_path, "main.py", MAIN)
    analyze(cst.parse_module(main.read_text()), origin=main)
    read = project_imports.dependencies_of(main)
    assert [path.name for path in read] == ["arguments.py", "distributed.py"]
    assert project_imports.dependencies_of(main) == []  # asking forgets


def test_explicitly_imported_flags_and_devices(tmp_path: Path) -> None:
    """``from config import USE_CUDA, DEVICE``: what the sibling computed for them."""
    write(
        tmp_path,
        "config.py",
        """
        import torch

        USE_CUDA = torch.cuda.is_available()
        DEVICE = torch.device("cuda" if USE_CUDA else "cpu")
        BATCH = 32
        """,
    )
    main = write(
        tmp_path,
        "main.py",
        """
        import torch
        from config import BATCH, DEVICE, USE_CUDA

        model = torch.nn.Linear(4, 2)
        if USE_CUDA:
            model = model.cuda()
        x = torch.ones(BATCH, 4).to(DEVICE)
        print(x.numpy())
        """,
    )
    assert codes(main, origin=main) == ["8:DEV001"]
    assert codes(main) == ["6:DEV003", "8:DEV001"]  # nowhere: USE_CUDA is unknown


def test_a_project_base_class_sets_the_flags_its_subclasses_test(tmp_path: Path) -> None:
    """``class SoftmaxEngine(Engine)`` with ``Engine.__init__`` (another module) setting
    ``self.use_gpu = torch.cuda.is_available() and use_gpu``: the subclass's
    ``if self.use_gpu:`` is a guard (deep-person-reid: eval/blind45)."""
    write(
        tmp_path,
        "pkg/engine.py",
        """
        import torch

        class Engine:
            def __init__(self, use_gpu=True):
                self.use_gpu = torch.cuda.is_available() and use_gpu
                self.epochs = 10
        """,
    )
    write(tmp_path, "pkg/__init__.py", "")
    softmax = write(
        tmp_path,
        "pkg/softmax.py",
        """
        from .engine import Engine

        class SoftmaxEngine(Engine):
            def forward_backward(self, imgs):
                if self.use_gpu:
                    imgs = imgs.cuda()
                if self.epochs:
                    imgs = imgs.cuda()
                return imgs
        """,
    )
    options = replace(ALL, codes=ALL.codes | {"DEV016"})
    text = softmax.read_text(encoding="utf-8")
    found = check_text(text, str(softmax), replace(options, origin=softmax))
    assert [f"{d.start.row}:{d.code}" for d in found] == ["5:DEV016"]
    assert check_text(text, str(softmax), options) == []  # nowhere: the base is unknown


def test_torch_passed_on_by_a_star_import_of_user_code(tmp_path: Path) -> None:
    """``from models import *`` hands on the ``import torch`` of ``models``: a file that
    never imports torch itself still calls ``torch.load`` (eval/blind15)."""
    evaluate = write(
        tmp_path,
        "eval.py",
        """
        from models import *

        net = build()
        net.load_state_dict(torch.load("snapshot.pth"))
        """,
    )
    assert codes(evaluate) == ["4:DEV007"]  # models cannot be read: torch is torch
    write(tmp_path, "models.py", "import torch\n\ndef build():\n    return torch.nn.Linear(2, 2)\n")
    assert codes(evaluate, origin=evaluate) == ["4:DEV007"]  # models read: its torch
    plain = write(tmp_path, "plain.py", "net.load_state_dict(torch.load('snapshot.pth'))\n")
    assert codes(plain) == []  # no star import: an unbound name stays unknown


CALLEE = """
    import torch
    import torch.nn.functional as F

    def train(model, loader, args):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            if args.cuda:
                x, y = x.cuda(), y.cuda()
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(loss.item())
"""

ENTRY = """
    import argparse
    import torch
    from torch import nn
    from torch.utils.data import DataLoader
    from {module} import train

    parser = argparse.ArgumentParser()
    parser.add_argument("--no-cuda", action="store_true")
    args = parser.parse_args()
    args.cuda = {flag}

    def main():
        device = torch.device("cuda" if args.cuda else "cpu")
        model = nn.Linear(4, 2).to(device)
        train(model, DataLoader(range(8)), args)

    if __name__ == "__main__":
        main()
"""


EVERY = CheckOptions(frozenset(all_rules()))


def importers(origin: Path) -> list[Path]:
    """The entry scripts that import the file at ``origin`` (their paths)."""
    return [path for path, _ in project_imports._importers(origin)]


def flow_codes(path: Path) -> list[str]:
    """DEV003 and DEV012 (not a default rule) of a file checked where it is."""
    found = check_text(path.read_text(encoding="utf-8"), str(path), replace(EVERY, origin=path))
    return [f"{d.start.row}:{d.code}" for d in found if d.code in ("DEV003", "DEV012")]


def test_an_entry_scripts_arguments_seed_the_callees_parameters(tmp_path: Path) -> None:
    callee = write(tmp_path, "train.py", CALLEE)
    alone = flow_codes(callee)
    # No caller seen: ``args.cuda`` is unknown, the moves are reported.
    assert alone == ["8:DEV003", "8:DEV003", "13:DEV012"]
    flag = "not args.no_cuda and torch.cuda.is_available()"
    main = write(tmp_path, "main.py", ENTRY.format(module="train", flag=flag))
    # main.py passes a namespace whose ``cuda`` flag tests availability, and a model on
    # the device: the moves are guarded, the per-step ``.item()`` syncs with the device.
    assert flow_codes(callee) == ["13:DEV012"]
    assert project_imports.dependencies_of(callee) == [main.resolve()]
    # A flag that is the user's option alone is no guard.
    write(tmp_path, "main.py", ENTRY.format(module="train", flag="not args.no_cuda"))
    assert flow_codes(callee) == ["8:DEV003", "8:DEV003", "13:DEV012"]


REPACKER = """
    class Repack:
        def __init__(self, size, if_cuda):
            self.size = size
            self.if_cuda = if_cuda

        def repack(self, feature):
            if self.if_cuda:
                return feature.cuda()
            return feature
"""

REPACKING_ENTRY = """
    import argparse
    from model.crf import {imported}

    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu", type=int, default=0)
    args = parser.parse_args()

    if __name__ == "__main__":
        if args.gpu >= 0:
            packer = Repack(3, True)
        else:
            packer = Repack(3, False)
"""


@pytest.mark.parametrize("imported", ["Repack", "*"])
def test_a_class_the_entry_script_builds_gets_its_constructor_arguments(
    tmp_path: Path, imported: str
) -> None:
    """LM-LSTM-CRF (eval/blind155): ``CRFRepack(n, True)`` under the user's ``--gpu``
    option, the class named or star-imported. Every call passes a literal, none an
    availability test: ``if self.if_cuda:`` is the user's choice, no guard."""
    write(tmp_path, "model/__init__.py", "")
    callee = write(tmp_path, "model/crf.py", REPACKER)
    assert flow_codes(callee) == []  # alone: ``if_cuda`` is the caller's, may test availability
    write(tmp_path, "train.py", REPACKING_ENTRY.format(imported=imported))
    assert flow_codes(callee) == ["8:DEV003"]


def test_only_entry_scripts_that_import_the_file_are_read(tmp_path: Path) -> None:
    callee = write(tmp_path, "train.py", CALLEE)
    # A count test, which only the callers' analysis reads as a guard (the scan of nearby
    # scripts, ``project_flags.py``, takes ``is_available()`` lines alone).
    flag = "not args.no_cuda and torch.cuda.device_count() > 0"
    library = ENTRY.format(module="train", flag=flag).replace('if __name__ == "__main__"', "if 1")
    write(tmp_path, "helper.py", library)  # not an entry script
    write(tmp_path, "other.py", ENTRY.format(module="trainer", flag=flag))  # another module
    assert flow_codes(callee) == ["8:DEV003", "8:DEV003", "13:DEV012"]
    write(tmp_path, "pkg/__init__.py", "")
    inner = write(tmp_path, "pkg/train.py", CALLEE)
    write(tmp_path, "run.py", ENTRY.format(module="pkg.train", flag=flag))  # above the package
    assert flow_codes(inner) == ["13:DEV012"]


def test_a_run_lists_each_folder_once_and_sees_it_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within a run (``one_run``), the entry scripts of a folder are listed once per
    version of the folder, not once per file analysed there; a file added is seen (the
    folder's mtime changes), and an edit in place by the next run."""
    flag = "not args.no_cuda and torch.cuda.is_available()"
    modules = [write(tmp_path, f"mod{i}.py", CALLEE) for i in range(6)]
    write(tmp_path, "main.py", ENTRY.format(module="mod0", flag=flag))
    write(tmp_path, "library.py", "import mod1\n")  # no ``__main__``: no entry script
    listed: list[str] = []
    original = project_imports._list_entry_scripts

    def counting(folder: str) -> tuple[tuple[str, bytes], ...]:
        listed.append(folder)
        return original(folder)

    monkeypatch.setattr(project_imports, "_list_entry_scripts", counting)
    folder = os.path.realpath(tmp_path)
    main = os.path.join(folder, "main.py")
    with project_imports.one_run():
        found = [importers(module) for module in modules]
        assert found == [[Path(main)]] + [[]] * 5
        assert listed == [folder]  # six files, one listing
        assert [importers(m) for m in modules] == found
        assert listed == [folder]
        write(tmp_path, "run.py", ENTRY.format(module="mod2", flag=flag))  # a new file
        stamp = os.stat(folder).st_mtime_ns + 1_000_000_000
        os.utime(folder, ns=(stamp, stamp))  # a new version of the folder, whatever the clock
        assert importers(modules[2]) == [Path(folder, "run.py")]
        assert listed == [folder, folder]
        # An edit in place (the folder unchanged) is seen by the next run.
        (tmp_path / "library.py").write_text(ENTRY.format(module="mod1", flag=flag))
        os.utime(folder, ns=(stamp, stamp))
        assert importers(modules[1]) == []
    with project_imports.one_run():
        assert importers(modules[1]) == [Path(folder, "library.py")]
    assert listed == [folder, folder, folder]
    # Outside a run, as before: every call lists the folder.
    assert importers(modules[1]) == [Path(folder, "library.py")]
    assert len(listed) == 4


def test_the_runner_lists_each_folder_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A project run (``api.lint``, one process) lists a flat folder once, not per file."""
    flag = "not args.no_cuda and torch.cuda.is_available()"
    for i in range(8):
        write(tmp_path, f"mod{i}.py", CALLEE)
    write(tmp_path, "main.py", ENTRY.format(module="mod0", flag=flag))
    listed: list[str] = []
    original = project_imports._list_entry_scripts

    def counting(folder: str) -> tuple[tuple[str, bytes], ...]:
        listed.append(folder)
        return original(folder)

    monkeypatch.setattr(project_imports, "_list_entry_scripts", counting)
    request = LintRequest(paths=(tmp_path,), jobs=1, use_cache=False, isolated=True)
    outcome = lint(request)
    assert outcome.files_checked == 9
    assert listed == [os.path.realpath(tmp_path)]


def test_a_cuda_literal_handed_to_a_project_function_that_places_with_it(
    tmp_path: Path,
) -> None:
    """ControlNet's ``load_state_dict(path, location="cuda")``: the sibling loads with
    ``map_location=torch.device(location)``, so the literal is placed (DEV003, no fix: the
    parameter may expect a string); a parameter the sibling only prints, or places under
    an availability test, places nothing. A tensor parameter moved with the device one
    (``data.to(device)`` after ``isinstance(data, torch.Tensor)``) does not hide it."""
    write(
        tmp_path,
        "cldm/model.py",
        """
        import torch

        def load_state_dict(ckpt_path, location="cpu", tag="cuda"):
            print(tag)
            return torch.load(ckpt_path, map_location=torch.device(location))

        def warm(model, device):
            if torch.cuda.is_available():
                model.to(device)

        def to_device(batch, device):
            return batch.to(device=device)

        def move(data, device=None):
            if isinstance(data, torch.Tensor):
                return data.to(device)
            return data
        """,
    )
    write(tmp_path, "cldm/__init__.py", "")
    app = write(
        tmp_path,
        "app.py",
        """
        from cldm.model import load_state_dict, move, to_device, warm

        def main(model, batch, ngpu):
            model.load_state_dict(load_state_dict("a.ckpt", location="cuda"))
            model.load_state_dict(load_state_dict("a.ckpt", "cuda"))
            model.load_state_dict(load_state_dict("a.ckpt", tag="cuda"))
            warm(model, "cuda")
            batch = move(batch, "cuda" if ngpu > 0 else "cpu")
            return to_device(batch, "cuda")
        """,
    )
    found = check_text(app.read_text(), str(app), replace(ALL, origin=app))
    assert [(d.start.row, d.code, d.fix is None) for d in found] == [
        (4, "DEV003", True),
        (5, "DEV003", True),
        (8, "DEV003", True),  # FunCodec's ``to_device``: a tensor parameter, moved
        (9, "DEV003", True),
    ]
    assert codes(app) == []  # without the sibling nothing says the literal is placed


def test_an_entry_script_that_sets_the_default_tensor_type(tmp_path: Path) -> None:
    """NeuS: ``exp_runner.py`` sets a CUDA default tensor type and imports
    ``models.dataset`` from a namespace package (no ``__init__.py``); the dataset's
    factories without ``device=`` are then made there, not on the CPU."""
    (tmp_path / ".git").mkdir()  # the checkout's root holds the namespace package
    dataset = write(
        tmp_path,
        "models/dataset.py",
        """
        import torch

        class Dataset:
            def __init__(self):
                self.device = torch.device("cpu")
                self.poses = torch.eye(3).to(self.device)

            def rays(self, n):
                p = torch.ones(n, 3)
                return torch.matmul(self.poses[None], p[:, :, None])
        """,
    )
    runner = """
        import torch
        from models.dataset import Dataset

        if __name__ == "__main__":
            {setup}
            Dataset().rays(4)
        """
    write(tmp_path, "exp_runner.py", runner.format(setup="torch.manual_seed(0)"))
    assert codes(dataset, origin=dataset) == []  # on the CPU: nothing to report
    write(tmp_path, "models/dataset.py", dataset.read_text().replace('"cpu"', '"mps"'))
    assert codes(dataset, origin=dataset) == ["10:DEV006"]  # MPS poses, a CPU factory
    setup = 'torch.set_default_tensor_type("torch.cuda.FloatTensor")'
    write(tmp_path, "exp_runner.py", runner.format(setup=setup))
    assert codes(dataset, origin=dataset) == []  # the factory's device is not known
