"""devlint (DEV011, DEV017) against a project's own torch.cuda hook, on the project's tree.

    python bench/cuda_hooks/compare.py --tree SRC --target 2.9 --hook-sites SITES \\
        [--allow REGEX] [--escape '#ignore-cuda'] [--json OUT]

``SITES`` lists what the hook's patterns match, one ``path:line`` per line (paths relative
to ``SRC``), *before* the hook's allow-list and escape comment are applied: run the hook
(or its grep) over every file and keep its output. ``--allow`` is the hook's allow-list
(a regular expression on the relative path), ``--escape`` its per-line escape comment.

For each site it prints what the hook does (flags / allowed file / escaped line) and what
devlint does (the codes it reports there, or why it reports nothing: guarded, CUDA-specific
code, not in the target torch, no device-generic equivalent, not a call...), and for the
sites only devlint reports, what they are. Then it applies ``--fix --unsafe-fixes`` to a
copy of every file devlint reports, checks that each compiles, and that every
``torch.accelerator`` name the fixes wrote exists in the target torch (the table) and in
the installed torch, when there is one.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from devlint.analysis import accelerator_api
from devlint.analysis.analyzer import analyze
from devlint.analysis.facts import CallRecord, FileFacts
from devlint.analysis.torch_api import CUDA_ONLY_CALLS as RAISING
from devlint.api import lint_path
from devlint.engine import CheckOptions
from devlint.fixing import fix_text
from devlint.positions import positions_of
from devlint.torch_target import TorchVersion, format_target, parse_target

CODES = frozenset({"DEV011", "DEV017"})
SITE = re.compile(r"^(?:\x1b\[[0-9;]*m)?(?P<path>[^\s:]+\.py):(?P<line>\d+)")
WRITTEN = re.compile(r"torch\.accelerator(?:\.memory)?\.(\w+)")


@dataclass
class FileReport:
    path: str
    lines: list[str]
    facts: FileFacts | None
    rows: dict[int, list[CallRecord]] = field(default_factory=dict)
    found: dict[int, set[str]] = field(default_factory=dict)  # row -> devlint codes


def load(tree: Path, relative: str, options: CheckOptions, analyse: bool) -> FileReport:
    """devlint's diagnostics for one file, and its analysis where ``analyse``."""
    path = tree / relative
    text = path.read_text(encoding="utf-8", errors="replace")
    report = FileReport(relative, text.splitlines(), None)
    for diagnostic in lint_path(path, relative, options).diagnostics:
        report.found.setdefault(diagnostic.start.row, set()).add(diagnostic.code)
    if not analyse:
        return report
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError:
        return report
    report.facts = analyze(module)
    positions = positions_of(module)
    for call in report.facts.calls:
        report.rows.setdefault(positions[call.node].start.line, []).append(call)
    return report


def why_not(report: FileReport, row: int, target: TorchVersion) -> str:
    """Why devlint reports nothing at a site the hook's pattern matches."""
    line = report.lines[row - 1] if row <= len(report.lines) else ""
    calls = [c for c in report.rows.get(row, []) if (c.callee or "").startswith("torch.cuda")]
    if report.facts is None:
        return "file does not parse"
    if not calls:
        code = line.split("#", 1)[0]
        if "torch.cuda" not in code and "torch.cuda" in line:
            return "in a comment"
        if re.search(r"torch\.cuda\.(is_available|is_initialized)\b", code):
            return "availability test (never reported)"
        if re.search(r"^\s*(from|import)\s", code):
            return "import"
        if re.search(r"torch\.cuda\.amp\b", code):
            return "torch.cuda.amp (DEV009's)"
        return "not a call (reference, string, annotation, decorator argument)"
    reasons = []
    for call in calls:
        api = accelerator_api.lookup(call.callee)
        if call.site.cuda_required:
            reasons.append("CUDA-specific code (analysis)")
        elif report.facts.in_torch_version_branch(call.site):
            reasons.append("torch-version branch")
        elif api is None or api.equivalent is None:
            guarded = call.site.guarded or call.callee not in RAISING
            reasons.append("no equivalent, " + ("guarded" if guarded else "harmless"))
        elif not api.reported:
            reasons.append("availability test (never reported)")
        elif accelerator_api.equivalent_in(api, target) is None:
            since = format_target(api.since) if api.since else "-"
            reasons.append(f"equivalent newer than the target (torch {since})")
        else:
            reasons.append("reported on another line of the call")
    return sorted(reasons)[0]


def what_only(report: FileReport, row: int, code: str) -> str:
    """What a site only devlint reports is."""
    line = report.lines[row - 1] if row <= len(report.lines) else ""
    if code == "DEV017" and re.search(r"[\"']cuda(:\d+)?[\"']", line) and "torch.cuda" not in line:
        return 'hard-coded "cuda" device type or placement'
    if "torch.cuda" not in line:
        return "torch.cuda through an alias (from torch import cuda, ...)"
    return f"{code}: API outside the hook's patterns"


def check_fixes(tree: Path, files: list[str], target: TorchVersion) -> dict[str, object]:
    """``--fix --unsafe-fixes`` on a copy: does it compile, does it use only target APIs?"""
    options = CheckOptions(CODES, target_torch=target)
    allowed = {
        (api.equivalent or "").rsplit(".", 1)[-1]
        for api in accelerator_api.TABLE
        if accelerator_api.equivalent_in(api, target)
    } | {"is_available"}
    try:
        import torch  # the installed torch, when there is one
    except ImportError:
        torch = None  # type: ignore[assignment]
    changed, broken, names = 0, [], Counter[str]()
    for relative in files:
        text = (tree / relative).read_text(encoding="utf-8", errors="replace")
        fixed = fix_text(text, relative, options, unsafe=True).text
        if fixed == text:
            continue
        changed += 1
        try:
            compile(fixed, relative, "exec")
        except SyntaxError as error:
            broken.append(f"{relative}: {error}")
        written = Counter(WRITTEN.findall(fixed)) - Counter(WRITTEN.findall(text))
        names.update(written)
    missing = [name for name in names if name not in allowed]
    if torch is not None:
        missing += [
            name
            for name in names
            if not hasattr(torch.accelerator, name) and not hasattr(torch.accelerator.memory, name)
        ]
    return {"files changed": changed, "do not compile": broken, "written": dict(names),
            "not in target": sorted(set(missing))}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, required=True)
    parser.add_argument("--target", required=True, help="target-torch, e.g. 2.9")
    parser.add_argument("--hook-sites", type=Path, required=True)
    parser.add_argument("--allow", default=None, help="the hook's allow-list (regex)")
    parser.add_argument("--escape", default=None, help="the hook's escape comment")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    target = parse_target(args.target)
    assert target is not None, "--target: a release such as 2.9"
    options = CheckOptions(CODES, target_torch=target)
    allow = re.compile(args.allow) if args.allow else None

    sites = set()
    for line in args.hook_sites.read_text(encoding="utf-8").splitlines():
        match = SITE.match(line.removeprefix("./"))
        if match:
            sites.add((match["path"].removeprefix("./"), int(match["line"])))
    files = sorted({p.relative_to(args.tree).as_posix() for p in args.tree.rglob("*.py")})
    with_sites = {path for path, _ in sites}
    reports = {
        relative: load(args.tree, relative, options, relative in with_sites) for relative in files
    }

    rows: Counter[tuple[str, str]] = Counter()
    details: list[dict[str, object]] = []
    for path, row in sorted(sites):
        report = reports[path]
        line = report.lines[row - 1] if row <= len(report.lines) else ""
        if allow is not None and allow.search(path):
            hook = "allowed file"
        elif args.escape and args.escape in line:
            hook = "escaped line"
        else:
            hook = "flags"
        codes = report.found.get(row)
        devlint = ", ".join(sorted(codes)) if codes else why_not(report, row, target)
        rows[(hook, devlint)] += 1
        details.append({"path": path, "line": row, "hook": hook, "devlint": devlint})
    for path, report in reports.items():
        for row, codes in sorted(report.found.items()):
            if (path, row) not in sites:
                what = what_only(report, row, min(codes))
                rows[("silent", what)] += 1
                details.append({"path": path, "line": row, "hook": "silent", "devlint": what})

    print(f"| hook | devlint (target torch {args.target}) | sites |\n|---|---|---|")
    for (hook, devlint), count in sorted(rows.items()):
        print(f"| {hook} | {devlint} | {count} |")
    reported = sorted(path for path, report in reports.items() if report.found)
    fixes = check_fixes(args.tree, reported, target)
    print(f"\nfixes: {json.dumps(fixes)}")
    if args.json:
        args.json.write_text(json.dumps({"sites": details, "fixes": fixes}, indent=1))


if __name__ == "__main__":
    main()
