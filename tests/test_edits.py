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
