"""Static vs dynamic agreement: per rule, what the linter finds and what a run shows.

For each rule's fixture programs:

- *static found*: a bad program carries an ``# expect: CODE`` marker of its own rule
  (``tests/test_fixtures.py`` holds the linter to exactly those lines), a good program none;
- *run found*, per accelerator column that ran (real or virtual), out of the programs run
  there: a bad program whose declared outcome there is a failure or a warning, and the run
  showed it; a good program that ran as declared.

A bad program whose bug does not fail there (declared ``"ok"``, such as DEV007's
checkpoints written and read on one machine, or only a different ``prints``, such as
DEV004's device choice on MPS) counts as run but not shown: the bug is real, the run
does not fail on it. Pure data: works on a finished ``VerifyReport``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from devlint.verify.plan import EXPECT_COMMENT, PROGRAM

if TYPE_CHECKING:
    from pathlib import Path

    from devlint.verify.runner import VerifyReport


def marked(path: Path, code: str) -> bool:
    """Whether ``path`` has an ``# expect:`` marker naming ``code``."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return False
    return any(
        code in re.split(r"\s*,\s*", match.group("codes"))
        for match in EXPECT_COMMENT.finditer(text)
    )


def agreement(report: VerifyReport) -> dict[str, Any]:
    """rule -> counts of bad and good programs, found statically and by each column."""
    columns = [c.name for c in report.columns if c.runs and c.device != "cpu"]
    results = {
        (r.run.rule, r.run.name, r.run.column.name): r
        for r in report.results
        if r.run.kind == PROGRAM
    }
    table: dict[str, Any] = {}
    for rule in report.plan.rules:
        bad = [path for path in rule.programs if path.name.startswith("bad_")]
        good = [path for path in rule.programs if path.name.startswith("good_")]
        row: dict[str, Any] = {
            "bad": len(bad),
            "bad_static_found": sum(marked(path, rule.code) for path in bad),
            "good": len(good),
            "good_static_quiet": sum(not marked(path, rule.code) for path in good),
        }
        for column in columns:
            cell = dict.fromkeys(("bad_run", "bad_shown", "good_run", "good_clean"), 0)
            for path in rule.programs:
                result = results.get((rule.code, path.name, column))
                if result is None:
                    continue
                kind = "bad" if path.name.startswith("bad_") else "good"
                cell[f"{kind}_run"] += 1
                expected = result.run.expectation
                if kind == "bad":
                    cell["bad_shown"] += result.passed and bool(expected.raises or expected.warns)
                else:
                    cell["good_clean"] += result.passed
            row[column] = cell
        table[rule.code] = row
    return {"columns": columns, "rules": table}
