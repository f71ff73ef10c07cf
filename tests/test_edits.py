"""Where fixes put their edits, which device they use, and how long the lines they write are."""

from __future__ import annotations

from devlint.engine import CheckOptions
from devlint.fixing import fix_text
from devlint.rule import all_rules

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
