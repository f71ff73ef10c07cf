"""Score devlint against the hand-labelled realistic scripts in ``eval/`` (eval/README.md).

Every script marks the diagnostics it should get with a trailing comment on the line
where the diagnostic starts: ``# expect: DEV002`` (several: ``# expect: DEV001, DEV006``).
Unmarked lines must get nothing. The script runs ``devlint check --output-format json``
with the default rules on the scripts, matches diagnostics to labels by (file, line, code), and prints
every mismatch, then true/false positives and false negatives with precision and recall
per rule and overall.

    .venv/bin/python scripts/evaluate.py                    # the whole suite
    .venv/bin/python scripts/evaluate.py eval/scripts/trainer_*.py
    .venv/bin/python scripts/evaluate.py --json scores.json

Exit status: 0 when devlint matches every label, 1 otherwise.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
import tokenize
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "eval"
_EXPECT = re.compile(r"#\s*expect:\s*(DEV\d{3}(?:\s*,\s*DEV\d{3})*)")

Key = tuple[str, int, str]  # (display path, line, code)


def labels_of(path: Path, display: str) -> set[Key]:
    """The ``# expect:`` labels of one script (read from comment tokens only)."""
    found: set[Key] = set()
    text = path.read_text(encoding="utf-8")
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT and (match := _EXPECT.search(token.string)):
            for code in match[1].split(","):
                found.add((display, token.start[0], code.strip()))
    return found


def diagnostics_of(paths: list[Path]) -> dict[Key, str]:
    """devlint's diagnostics on ``paths``, by (path, line, code), with their messages."""
    command = [sys.executable, "-m", "devlint", "check", "--output-format", "json"]
    command += ["--exit-zero", "--no-cache", *map(str, paths)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"devlint failed (exit {done.returncode}):\n{done.stderr}")
    found: dict[Key, str] = {}
    for item in json.loads(done.stdout):
        display = Path(item["filename"]).resolve().relative_to(ROOT).as_posix()
        found[(display, item["location"]["row"], item["code"])] = item["message"]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="scripts (default: the suite)")
    parser.add_argument("--json", type=Path, help="also write the scores to this file")
    args = parser.parse_args()
    paths = [p.resolve() for p in args.paths] or sorted(SUITE.rglob("*.py"))
    expected: set[Key] = set()
    for path in paths:
        expected |= labels_of(path, path.relative_to(ROOT).as_posix())
    reported = diagnostics_of(paths)
    true_positives = expected & reported.keys()
    false_positives = sorted(reported.keys() - expected)
    false_negatives = sorted(expected - reported.keys())
    for display, line, code in false_positives:
        print(f"{display}:{line}: FP {code} {reported[(display, line, code)]}")
    for display, line, code in false_negatives:
        print(f"{display}:{line}: FN {code}")
    tp = Counter(code for _, _, code in true_positives)
    fp = Counter(code for _, _, code in false_positives)
    fn = Counter(code for _, _, code in false_negatives)
    scores = {}
    print(f"\n{len(paths)} scripts, {len(expected)} labels\n")
    print(f"{'rule':8} {'TP':>4} {'FP':>4} {'FN':>4} {'precision':>10} {'recall':>8}")
    for code in [*sorted(tp.keys() | fp.keys() | fn.keys()), "all"]:
        if code == "all":
            t, f, n = sum(tp.values()), sum(fp.values()), sum(fn.values())
        else:
            t, f, n = tp[code], fp[code], fn[code]
        precision = t / (t + f) if t + f else 1.0
        recall = t / (t + n) if t + n else 1.0
        scores[code] = {"tp": t, "fp": f, "fn": n, "precision": precision, "recall": recall}
        print(f"{code:8} {t:4} {f:4} {n:4} {precision:10.3f} {recall:8.3f}")
    if args.json:
        args.json.write_text(json.dumps(scores, indent=2) + "\n")
    return 1 if false_positives or false_negatives else 0


if __name__ == "__main__":
    sys.exit(main())
