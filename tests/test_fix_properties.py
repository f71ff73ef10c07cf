"""Properties every fix keeps: the indentation of the lines it carries along."""

from __future__ import annotations

from pathlib import Path

import pytest

from devlint.engine import CheckOptions
from devlint.fixing import fix_text
from devlint.layout import layout_problems
from devlint.rule import all_rules

ROOT = Path(__file__).resolve().parents[1]
FIXED = sorted((ROOT / "fixtures").glob("DEV*/bad_*.fixed.py"))
ALL = CheckOptions(frozenset(all_rules()))


def _fix(source: str) -> str:
    return fix_text(source, "example.py", ALL, unsafe=True).text


@pytest.mark.parametrize("fixed", FIXED, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_fixture_fixes_keep_every_carried_line_in_place(fixed: Path) -> None:
    bad = fixed.with_name(fixed.name.replace(".fixed.py", ".py"))
    assert layout_problems(bad.read_text(), fixed.read_text()) == []


def test_the_fixtures_have_fixes_to_check() -> None:
    assert len(FIXED) > 20


METHOD = """\
import torch


class Trainer:
    def build(self):
        m = make_model(
            self.owner(),
            # the size
            size=3,
        ).cuda()
        return m
"""


def test_a_multi_line_call_keeps_its_continuation_lines_indented() -> None:
    fixed = _fix(METHOD)
    assert "        m = make_model(\n            self.owner(),\n            # the size\n" in fixed
    assert "            size=3,\n        ).to(device)\n" in fixed
    assert layout_problems(METHOD, fixed) == []


FOLD = """\
import torch

cuda = torch.cuda.is_available()


def run(x, y):
    if cuda:
        x = x.cuda(
            non_blocking=True,
        )
    return x
"""


def test_a_statement_moved_out_of_its_block_takes_its_continuation_lines_along() -> None:
    options = CheckOptions(frozenset({"DEV016"}))
    fixed = fix_text(FOLD, "example.py", options, unsafe=True).text
    assert "    x = x.to(\n        device, non_blocking=True,\n    )\n    return x\n" in fixed
    assert layout_problems(FOLD, fixed) == []


@pytest.mark.parametrize(
    ("after", "problem"),
    [
        (METHOD.replace("            self.owner(),", "    self.owner(),"), "line 7"),
        (METHOD.replace("        ).cuda()", ").to(device)"), "line 10: written left"),
        ('def f():\n    """A\n        b\n    """\n', "multi-line string"),
    ],
)
def test_layout_problems_names_the_lines_a_fix_moved(after: str, problem: str) -> None:
    before = METHOD if "Trainer" in after else 'def f():\n    """A\n    b\n    """\n'
    problems = layout_problems(before, after)
    assert problems and problem in problems[0]


def test_layout_problems_accepts_a_block_moved_as_a_whole() -> None:
    before = "if ok:\n    x = f(\n        1,\n    )\n"
    after = "x = f(\n    1,\n)\n"
    assert layout_problems(before, after) == []


def test_layout_problems_does_not_take_an_inserted_line_for_a_moved_one() -> None:
    """A fix inserts a device selection ending in ``)`` after an import whose own ``)`` is
    indented: the inserted ``)`` is no re-indented old line (DomainBed, the eval sweep)."""
    before = "from m import (\n    a,\n    )\n\n\nNAMES = [\n    'x',\n]\n"
    after = before.replace("    )\n\n\n", '    )\n\ndevice = torch.device(\n    "cuda"\n)\n\n\n')
    assert layout_problems(before, after) == []


def test_layout_problems_accepts_a_statement_the_fix_wrapped_anew() -> None:
    """A fix rewrites a call whose first line changes and lays it out again, one argument a
    line, deeper than the statement (KAIR's DataLoader after DEV005, the eval sweep); a
    line of a statement whose first line stayed may not move."""
    before = (
        "if x:\n    loader = DataLoader(data,\n                        batch_size=4,\n"
        "                        pin_memory=True)\n"
    )
    after = (
        "if x:\n    loader = DataLoader(\n        data,\n        batch_size=4,\n"
        "        pin_memory=torch.cuda.is_available(),\n    )\n"
    )
    assert layout_problems(before, after) == []
    carried = before.replace("                        batch_size", "        batch_size")
    assert layout_problems(before, carried)
