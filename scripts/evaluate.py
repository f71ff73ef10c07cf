"""Score devlint against the hand-labelled scripts in ``eval/`` (protocol: eval/README.md).

Every script marks the diagnostics it should get with a trailing comment on the line
where the diagnostic starts: ``# expect: DEV002`` (several: ``# expect: DEV001, DEV006``).
Unmarked lines must get nothing. Each folder of ``eval/`` is one set, checked with the
rules ``eval/sets.toml`` names for it (default: the default rules). The report prints
every mismatch, then precision and recall per set and per rule.

    .venv/bin/python scripts/evaluate.py                    # every set
    .venv/bin/python scripts/evaluate.py blind5 blind6      # some sets
    .venv/bin/python scripts/evaluate.py --json scores.json

This is a report, not a test: it exits 0 whatever the score (``--strict``: 1 on any
mismatch). ``eval/known_gaps.toml`` lists the misses already understood; they are marked.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tokenize
from collections import Counter
from pathlib import Path

import tomllib

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


def upstream_layout(folder: Path, paths: list[Path], scratch: Path) -> dict[Path, Path]:
    """Copies of a blind set's files at their upstream paths (``MANIFEST.toml``), by
    original: a set keeps ``repo__dir__file.py`` flat, but code meets its siblings by their
    own names (``from utils import *`` next to ``utils.py``), and each repository's folder
    has an empty ``.git`` as a checkout's root has. Sets without a manifest, and files it
    does not name, stay where they are."""
    manifest = folder / "MANIFEST.toml"
    if not manifest.exists():
        return {}
    entries = tomllib.loads(manifest.read_text(encoding="utf-8")).get("file", [])
    staged: dict[Path, Path] = {}
    by_name = {entry["path"]: entry for entry in entries}
    for path in paths:
        entry = by_name.get(path.relative_to(folder).as_posix())
        if entry is None or not entry["source_path"].endswith(".py"):
            continue  # a notebook kept as its exported script stays a script
        project = scratch / entry["repo"].replace("/", "__")
        (project / ".git").mkdir(parents=True, exist_ok=True)  # a checkout's root, as upstream
        target = project / entry["source_path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        staged[path] = target
    return staged


def diagnostics_of(paths: list[Path], rules: dict[str, list[str]]) -> dict[Key, str]:
    """devlint's diagnostics on ``paths``, by (path, line, code), with their messages."""
    folder = paths[0].parent if paths else SUITE
    with tempfile.TemporaryDirectory(prefix="devlint-eval-") as scratch:
        staged = upstream_layout(folder, paths, Path(scratch))
        original = {copy.resolve(): path for path, copy in staged.items()}
        found = _diagnostics([staged.get(path, path) for path in paths], rules)
    return {
        (original.get(Path(display), ROOT / display).relative_to(ROOT).as_posix(), row, code): text
        for (display, row, code), text in found.items()
    }


def _diagnostics(paths: list[Path], rules: dict[str, list[str]]) -> dict[Key, str]:
    command = [sys.executable, "-m", "devlint", "check", "--output-format", "json"]
    if rules.get("select"):
        command += ["--select", ",".join(rules["select"])]
    ignored = tuple(rules.get("ignore", ()))  # dropped here: a code may be newer than devlint
    command += ["--exit-zero", "--no-cache", *map(str, paths)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"devlint failed (exit {done.returncode}):\n{done.stderr}")
    found: dict[Key, str] = {}
    for item in json.loads(done.stdout):
        if item["code"].startswith(ignored):
            continue
        display = Path(item["filename"]).resolve().as_posix()
        found[(display, item["location"]["row"], item["code"])] = item["message"]
    return found


def score(tp: int, fp: int, fn: int) -> dict[str, float | int]:
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return {"tp": tp, "fp": fp, "fn": fn, "precision": precision, "recall": recall}


def evaluate_set(name: str, rules: dict[str, list[str]], gaps: set[str]) -> dict[str, Counter[str]]:
    """Print one set's mismatches; return its TP/FP/FN counts per rule."""
    paths = sorted((SUITE / name).rglob("*.py"))
    expected: set[Key] = set()
    for path in paths:
        expected |= labels_of(path, path.relative_to(ROOT).as_posix())
    reported = diagnostics_of(paths, rules)
    counts: dict[str, Counter[str]] = {"tp": Counter(), "fp": Counter(), "fn": Counter()}
    for key in sorted(reported.keys() | expected):
        display, line, code = key
        kind = "tp" if key in expected and key in reported else "fp" if key in reported else "fn"
        counts[kind][code] += 1
        if kind == "fp":
            print(f"{display}:{line}: FP {code} {reported[key]}")
        elif kind == "fn":
            known = " (known gap)" if f"{display}:{line}" in gaps else ""
            print(f"{display}:{line}: FN {code}{known}")
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="*", help="folders of eval/ (default: all)")
    parser.add_argument("--json", type=Path, help="also write the scores to this file")
    parser.add_argument("--strict", action="store_true", help="exit 1 on any mismatch")
    args = parser.parse_args()
    config = tomllib.loads((SUITE / "sets.toml").read_text(encoding="utf-8"))
    names = args.sets or sorted(p.name for p in SUITE.iterdir() if p.is_dir())
    known = tomllib.loads((SUITE / "known_gaps.toml").read_text(encoding="utf-8"))
    gaps = {gap["where"] for gap in known.get("gap", [])}
    totals: dict[str, Counter[str]] = {"tp": Counter(), "fp": Counter(), "fn": Counter()}
    per_set = {}
    for name in names:
        counts = evaluate_set(name, config.get(name, {}), gaps)
        per_set[name] = score(*(sum(counts[k].values()) for k in ("tp", "fp", "fn")))
        for kind in totals:
            totals[kind].update(counts[kind])
    print(f"\n{'set':10} {'TP':>4} {'FP':>4} {'FN':>4} {'precision':>10} {'recall':>8}  rules")
    for name, s in per_set.items():
        rules = " ".join(f"--{k} {','.join(v)}" for k, v in config.get(name, {}).items())
        print(
            f"{name:10} {s['tp']:4} {s['fp']:4} {s['fn']:4} {s['precision']:10.3f} {s['recall']:8.3f}  {rules or 'default'}"
        )
    print(f"\n{'rule':10} {'TP':>4} {'FP':>4} {'FN':>4} {'precision':>10} {'recall':>8}")
    per_rule = {}
    for code in sorted(set().union(*totals.values())):
        per_rule[code] = score(*(totals[k][code] for k in ("tp", "fp", "fn")))
    per_rule["all"] = score(*(sum(totals[k].values()) for k in ("tp", "fp", "fn")))
    for code, s in per_rule.items():
        print(
            f"{code:10} {s['tp']:4} {s['fp']:4} {s['fn']:4} {s['precision']:10.3f} {s['recall']:8.3f}"
        )
    if args.json:
        args.json.write_text(json.dumps({"sets": per_set, "rules": per_rule}, indent=2) + "\n")
    mismatched = per_rule["all"]["fp"] or per_rule["all"]["fn"]
    return 1 if args.strict and mismatched else 0


if __name__ == "__main__":
    sys.exit(main())
