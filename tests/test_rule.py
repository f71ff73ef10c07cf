"""Rules as self-testing units: each rule's documented examples (and VALID / INVALID) hold."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest

from devlint import engine
from devlint.analysis.facts import FileFacts
from devlint.rule import Example, Finding, Rule, all_rules
from devlint.testing import example_diagnostics, example_problems

RULES = list(all_rules().values())
EXAMPLES = [(rule, example) for rule in RULES for example in rule.examples()]


@pytest.mark.parametrize(
    ("rule", "example"), EXAMPLES, ids=[f"{rule.code}-{ex.origin}" for rule, ex in EXAMPLES]
)
def test_example_is_reported_exactly_when_it_should_be(rule: type[Rule], example: Example) -> None:
    found = example_diagnostics(rule, example)
    if example.flagged:
        assert found, f"{rule.code} does not report its own example:\n{example.code}"
    else:
        assert not found, f"{rule.code} reports code it recommends: {found}\n{example.code}"


def test_every_rule_documents_code_it_reports_and_code_it_accepts() -> None:
    """Rules whose Example is prose (an unreadable file, a devlint failure) are the exceptions."""
    prose_only = {"DEV900", "DEV902"}
    for code, rule in all_rules().items():
        kinds = {example.flagged for example in rule.examples()}
        if code in prose_only:
            assert not kinds, f"{code} now has code examples: remove it from prose_only"
        else:
            assert True in kinds, f"{code}: no ```python block under ## Example"


def _no_detection(self: Rule, facts: FileFacts) -> Iterator[Finding]:
    return iter(())


@pytest.mark.parametrize("rule", [r for r in RULES if not r.engine_only], ids=lambda r: r.code)
def test_a_rule_without_its_detection_fails_its_examples(
    rule: type[Rule], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The harness is no formality: take a rule's detection away and its examples fail."""
    if rule.code == "DEV015":  # unused noqa directives are judged by the noqa module
        real = engine.suppress
        monkeypatch.setattr(engine, "suppress", functools.partial(real, judge_unused=False))
    else:
        monkeypatch.setattr(rule, "check", _no_detection)
    problems = example_problems(rule)
    assert problems, f"{rule.code}: its examples still pass without its detection"
    assert all("not reported" in problem for problem in problems)


def test_valid_and_invalid_attributes_are_examples_too() -> None:
    dev003 = all_rules()["DEV003"]

    class WithExamples(dev003):  # type: ignore[valid-type,misc]
        INVALID = ("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n",)
        VALID = (
            "import torch\nif torch.cuda.is_available():\n    x = torch.zeros(1).cuda()\n",
            "import torch\ny = torch.zeros(1).cuda()\n",  # wrong on purpose: DEV003 reports it
        )

    origins = [(example.origin, example.flagged) for example in WithExamples.examples()]
    assert origins[-3:] == [("INVALID[0]", True), ("VALID[0]", False), ("VALID[1]", False)]
    assert example_problems(WithExamples) == [
        "DEV003 VALID[1]: reported: 2:5 `.cuda()` without a CUDA availability check"
    ]


@pytest.mark.parametrize("rule", list(all_rules().values()), ids=list(all_rules()))
def test_a_diagnostic_without_a_fix_says_why_in_one_line(rule: type[Rule]) -> None:
    """The full output's help line: a rule that never fixes gives its reason, the first
    paragraph of its Fix safety section; a rule that fixes some cases points there."""
    text = rule.no_fix_help()
    assert "\n" not in text and len(text) <= 100, text
    if rule.fix is None:
        assert text.startswith(("No fix: ", "No automatic fix: ")), text
        assert len(text.split(": ", 1)[1]) > 10, text  # a reason, not just "No fix."
    else:
        assert text == (
            f"No automatic fix in this case (see Fix safety in `devlint rule {rule.code}`)"
        )
