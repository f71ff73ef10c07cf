"""Lines that fixes write stay within ``line-length``, trailing comments counted as ruff's
E501 counts them (pragma comments such as ``# noqa`` excepted)."""

from __future__ import annotations

import pytest

from devlint.engine import CheckOptions
from devlint.fixing import fix_text

OPTIONS = CheckOptions(frozenset({"DEV001", "DEV004", "DEV007"}), line_length=88)


def longest(text: str) -> int:
    return max(map(len, text.splitlines()))


@pytest.mark.parametrize(
    "line",
    [
        # within the limit before the fix, over it after, because of the comment
        'state = torch.load("checkpoint_for_the_model.pt", weights_only=True)  # the weights',
        # over the limit before: the fix still writes lines within it where a layout fits
        'parser.add_argument("--device", type=str, default="cuda" if torch.cuda.is_available() else "cpu")  # device',
    ],
)
def test_fixed_lines_fit_the_line_length(line: str) -> None:
    source = f"import argparse\n\nimport torch\n\nparser = argparse.ArgumentParser()\n{line}\n"
    fixed = fix_text(source, "x.py", OPTIONS, unsafe=True).text
    assert fixed != source
    assert longest(fixed) <= 88, fixed


def test_a_pragma_comment_does_not_count() -> None:
    source = 'import torch\n\nstate = torch.load("checkpoint_for_the_model.pt", weights_only=True)  # noqa: E501\n'
    fixed = fix_text(source, "x.py", OPTIONS, unsafe=True).text
    assert 'weights_only=True, map_location="cpu")  # noqa: E501' in fixed
