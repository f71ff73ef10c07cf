"""Rules as self-testing units: every rule's examples run through the one pipeline.

A rule's documentation shows what it reports (*Example*) and what to write instead
(*Use instead*); its ``INVALID`` / ``VALID`` attributes add examples that only the tests
need. ``example_problems`` checks each example as the rule's fixtures are checked (the
default rules plus the rule itself, at the fixtures' ``target-torch``) and says what does
not hold.
Documentation examples are fragments, as in ruff's docs: an example that imports nothing
from torch is checked after ``PRELUDE``.
"""

from __future__ import annotations

import importlib
import textwrap
from pathlib import Path

from devlint.api import fixture_options, lint_source
from devlint.rule import Example, Rule
from devlint.source import Source

PRELUDE = "import numpy as np\nimport torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader\n\n"


def example_diagnostics(rule: type[Rule], example: Example) -> list[str]:
    """The rule's own diagnostics on ``example`` as ``row:column message`` lines."""
    fixtures = Path(str(importlib.import_module("devlint.fixtures").__file__)).parent
    options = fixture_options(fixtures / rule.code / "example.py")
    display = f"{rule.code}-{example.origin.replace(' ', '-')}.py"
    text = textwrap.dedent(example.code)
    if "import torch" not in text and "from torch" not in text:
        text = PRELUDE + text
    result = lint_source(Source(text), display, options)
    return [
        f"{d.start.row}:{d.start.column} {d.message}"
        for d in result.diagnostics
        if d.code == rule.code
    ]


def example_problems(rule: type[Rule]) -> list[str]:
    """One line per example of ``rule`` that its rule reports wrongly (empty: all hold)."""
    problems = []
    for example in rule.examples():
        found = example_diagnostics(rule, example)
        if example.flagged and not found:
            problems.append(f"{rule.code} {example.origin}: not reported by {rule.code}")
        elif not example.flagged and found:
            problems.append(f"{rule.code} {example.origin}: reported: {'; '.join(found)}")
    return problems
