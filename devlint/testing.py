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
from dataclasses import replace
from pathlib import Path

from devlint.api import Overrides, lint_source, project_settings
from devlint.engine import CheckOptions
from devlint.fixing import fix_text
from devlint.rule import Example, Rule, all_rules
from devlint.source import Source
from devlint.torch_target import DEFAULT_TARGET_TORCH, parse_target

PRELUDE = "import numpy as np\nimport torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader\n\n"


def fix_fixture(source: str, path: Path) -> str:
    """What ``devlint --fix --unsafe-fixes`` writes for a rule fixture (``fixtures/DEVnnn/``).

    The default rules plus the fixture's own rule run: golden ``bad_*.fixed.py`` files and
    ``devlint verify``'s live fixes are made this way.
    """
    return fix_text(source, path.name, fixture_options(path), unsafe=True).text


def fixture_options(path: Path) -> CheckOptions:
    """How a rule fixture is checked: the default rules plus the fixture's own, at the
    ``target-torch`` of a ``devlint.toml`` beside it (default: ``DEFAULT_TARGET_TORCH``).

    The settings resolve as any project's do (``api.project_settings``), with the folder's
    ``devlint.toml`` as the configuration file, or none (isolated: the repository's own
    configuration and dependencies do not apply to the fixtures)."""
    rules = all_rules()
    own = (path.parent.name,) if path.parent.name in rules else ()
    config = path.parent / "devlint.toml"
    settings = project_settings(
        path.parent,
        config if config.is_file() else None,
        Overrides(extend_select=own),
        isolated=not config.is_file(),
    )
    # Only the rules and target-torch: the fixtures are checked alike wherever they lie (the
    # repository's ruff line length, star-imported neighbours and the like do not apply).
    options = settings.options_for(path)
    return CheckOptions(options.codes, target_torch=options.target_torch)


def example_diagnostics(rule: type[Rule], example: Example) -> list[str]:
    """The rule's own diagnostics on ``example`` as ``row:column message`` lines."""
    fixtures = Path(str(importlib.import_module("devlint.fixtures").__file__)).parent
    options = fixture_options(fixtures / rule.code / "example.py")
    # The settings the rule's page states, not its fixtures folder's.
    stated = rule.example_target_torch
    target = parse_target(stated) if stated is not None else None
    options = replace(options, target_torch=target or DEFAULT_TARGET_TORCH)
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
