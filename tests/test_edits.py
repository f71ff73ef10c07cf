"""Where fixes put their edits, which device they use, and how long the lines they write are."""

from __future__ import annotations

import libcst as cst

from devlint.engine import CheckOptions
from devlint.fixing import fix_text
from devlint.layout import layout_problems
from devlint.rule import DEVICE, Replace, all_rules

ALL = CheckOptions(frozenset(all_rules()))


def fixed(text: str, codes: str = "") -> str:
    options = CheckOptions(frozenset(codes.split(","))) if codes else ALL
    return fix_text(text, "example.py", options, unsafe=True).text


LOOP = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(8, 4)))
for images, masks, labels in loader:
    # to the device
    images = images.to(device)
    masks = masks.to(device, non_blocking=True)
    out = model(images) * masks
    loss = (out - labels).sum()
"""


def test_a_batch_move_goes_after_the_moves_the_loop_already_makes() -> None:
    lines = fixed(LOOP, "DEV002").splitlines()
    at = lines.index("    images = images.to(device)")
    assert lines[at : at + 4] == [
        "    images = images.to(device)",
        "    masks = masks.to(device, non_blocking=True)",
        "    labels = labels.to(device)",
        "    out = model(images) * masks",
    ]


def test_a_batch_move_goes_first_when_the_loop_moves_nothing_yet() -> None:
    text = LOOP.replace("    images = images.to(device)\n", "").replace(
        "    masks = masks.to(device, non_blocking=True)\n", ""
    )
    text = text.replace("model(images) * masks", "model(images.to(device)) * masks.to(device)")
    lines = fixed(text, "DEV002").splitlines()
    assert lines[lines.index("    # to the device") + 1] == "    labels = labels.to(device)"


SCRIPT = "import torch\n\nx = torch.zeros(3).cuda()\n"
ONE_LINE = (
    'device = torch.device("cuda" if torch.cuda.is_available() '
    'else "mps" if torch.backends.mps.is_available() else "cpu")\n'
)
WRAPPED = """\
device = torch.device(
    "cuda"
    if torch.cuda.is_available()
    else "mps"
    if torch.backends.mps.is_available()
    else "cpu"
)
"""


def test_a_device_selection_longer_than_the_line_length_is_wrapped() -> None:
    assert WRAPPED in fixed(SCRIPT, "DEV003")
    wide = CheckOptions(frozenset({"DEV003"}), line_length=120)
    assert ONE_LINE in fix_text(SCRIPT, "example.py", wide, unsafe=True).text


def test_the_torch_accelerator_selection_is_wrapped_too() -> None:
    options = CheckOptions(frozenset({"DEV003"}), accelerator_api="torch.accelerator")
    assert (
        "device = (\n    torch.accelerator.current_accelerator()\n"
        "    if torch.accelerator.is_available()\n"
        '    else torch.device("cpu")\n)\n'
    ) in fix_text(SCRIPT, "example.py", options, unsafe=True).text


FLAGS = """\
import argparse

import torch


def train(model, loader, epochs):
    \"\"\"One pass.\"\"\"
    for images in loader:
        out = model(images.cuda())


def evaluate(net, data, dev):
    return net(data.cuda())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-cuda", action="store_true")
    args = parser.parse_args()
    device = torch.device("cuda" if not args.no_cuda and torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(2, 2).to(device)
    train(model, [torch.zeros(2)], 3)
    evaluate(model, torch.zeros(2), device)
    x = torch.zeros(3).cuda()
"""


def test_fixes_reuse_the_device_main_built_from_flags() -> None:
    text = fixed(FLAGS, "DEV003")
    assert "device = torch.device(\n" not in text  # no second, module-level selection
    assert '    """One pass."""\n    device = next(model.parameters()).device\n' in text
    assert "        out = model(images.to(device))\n" in text
    assert "    return net(data.to(dev))\n" in text  # the device passed in
    assert "    x = torch.zeros(3).to(device)\n" in text  # main's own device
    assert fixed(text, "DEV003") == text


def test_a_device_selection_is_added_when_no_function_owns_one() -> None:
    text = FLAGS.replace("device = torch.device(", "chosen = torch.device(")
    text = text.replace(".to(device)", ".to(chosen)").replace(", device)", ", chosen)")
    text = text.replace("    x = torch.zeros(3).cuda()\n", "")
    result = fixed(text, "DEV003")
    assert result.startswith("import argparse\n\nimport torch\n\ndevice = torch.device(\n")
    assert "parameters()" not in result
    assert "        out = model(images.to(device))\n" in result


def test_a_local_device_that_is_not_plainly_a_device_blocks_the_fix() -> None:
    text = "import torch\n\n\ndef f(device):\n    pass\n\n\ndef g(x):\n    device = x\n"
    text += "    return torch.zeros(3).cuda()\n"
    assert ".cuda()" in fixed(text, "DEV003")


def test_a_call_a_fix_makes_too_long_gets_its_arguments_on_a_line_of_their_own() -> None:
    text = "import torch\nfrom torch.utils.data import DataLoader\n\n"
    text += "loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, pin_memory=True)\n"
    assert fixed(text, "DEV005").endswith(
        "loader = DataLoader(\n"
        "    dataset, batch_size=batch_size, shuffle=True, pin_memory=torch.cuda.is_available()\n"
        ")\n"
    )


def test_then_one_argument_a_line_then_a_conditional_one_part_a_line() -> None:
    text = "import argparse\n\nimport torch\n\nparser = argparse.ArgumentParser()\n"
    text += (
        'parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")\n'
    )
    assert fixed(text, "DEV004").endswith(
        "parser.add_argument(\n"
        '    "--device",\n'
        '    default="cuda"\n'
        "    if torch.cuda.is_available()\n"
        '    else "mps"\n'
        "    if torch.backends.mps.is_available()\n"
        '    else "cpu",\n'
        ")\n"
    )


def test_a_pinned_copy_is_split_inside_its_parentheses() -> None:
    text = "import torch\n\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n\n\n"
    text += "def stage(s):\n"
    text += "    return torch.from_numpy(s).float().pin_memory().to(device, non_blocking=True)\n"
    assert fixed(text, "DEV005").endswith(
        "    return (\n"
        "        torch.from_numpy(s).float().pin_memory()\n"
        "        if torch.cuda.is_available()\n"
        "        else torch.from_numpy(s).float()\n"
        "    ).to(device, non_blocking=True)\n"
    )


def test_a_trailing_comment_counts_and_a_wider_line_length_leaves_the_line_alone() -> None:
    text = "import torch\nfrom torch.utils.data import DataLoader\n\n"
    text += "loader = DataLoader(data, batch_size=64, pin_memory=True)  # the training batches\n"
    assert fixed(text, "DEV005").endswith(
        "loader = DataLoader(\n    data, batch_size=64, pin_memory=torch.cuda.is_available()\n"
        ")  # the training batches\n"
    )
    long = text.replace("DataLoader(data,", "DataLoader(dataset_for_training, shuffle=True,")
    wide = CheckOptions(frozenset({"DEV005"}), line_length=140)
    result = fix_text(long, "example.py", wide, unsafe=True).text
    assert (
        "DataLoader(dataset_for_training, shuffle=True, batch_size=64, pin_memory=torch" in result
    )


def test_a_call_inside_a_call_is_wrapped_one_level_deeper() -> None:
    text = "import argparse\n\nimport torch\n\nparser = argparse.ArgumentParser()\n"
    text += 'parser.add_argument("--data-device", default=torch.device("cuda"))\n'
    assert fixed(text, "DEV003").endswith(
        "parser.add_argument(\n"
        '    "--data-device",\n'
        "    default=torch.device(\n"
        '        "cuda"\n'
        "        if torch.cuda.is_available()\n"
        '        else "mps"\n'
        "        if torch.backends.mps.is_available()\n"
        '        else "cpu"\n'
        "    ),\n"
        ")\n"
    )


def test_a_def_whose_default_a_fix_makes_too_long_gets_one_parameter_a_line() -> None:
    text = "import torch\n\n\n"
    text += (
        'def load(name: str, device="cuda" if torch.cuda.is_available() else "cpu", jit=False):\n'
    )
    text += "    return name\n"
    result = fixed(text, "DEV004")
    assert result.startswith(
        "import torch\n\n\ndef load(\n    name: str,\n"
        '    device="cuda"\n    if torch.cuda.is_available()\n    else "mps"\n'
        '    if torch.backends.mps.is_available()\n    else "cpu",\n    jit=False,\n):\n'
    )


def test_parameters_already_one_a_line_keep_their_place() -> None:
    text = "import torch\n\n\ndef erase(\n        probability=0.5,\n        device='cuda',\n):\n"
    text += "    return torch.zeros(3, device=device) * probability\n"
    result = fixed(text, "DEV003")
    assert result.startswith("import torch\n\n\ndef erase(\n        probability=0.5,\n")
    assert '        device=(\n            "cuda"\n' in result
    assert "        ),\n):\n" in result
    assert layout_problems(text, result) == []


def test_a_typed_replacement_is_written_as_its_code_with_the_device_in_its_slot() -> None:
    node = cst.parse_expression('x.to(__devlint_device__)["{key}"]')
    assert Replace(node, node).template == 'x.to({device})["{{key}}"]'
    assert Replace(node, cst.Call(cst.Name("f"), [cst.Arg(DEVICE)])).template == "f({device})"


def test_dev003_builds_its_move_as_a_node() -> None:
    text = "import torch\n\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
    text += "x = torch.zeros(1).cuda(\n"
    text += "    non_blocking=True,\n)\ny = {'a': torch.zeros(1).cuda(0)}\n"
    result = fixed(text, "DEV003")
    assert "x = torch.zeros(1).to(\n    device, non_blocking=True,\n)\n" in result
    assert "y = {'a': torch.zeros(1).to(device)}\n" in result
