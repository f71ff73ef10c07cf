"""Run devlint's check and its fixes over real PyTorch code and prove the fixes break nothing.

For each corpus (a PyPI package: libraries and user-style code), the script

1. fetches its wheel or sdist once with ``pip download --no-deps`` (cached in
   ``bench/.cache/wheels/`` when the benchmark's cache exists, else ``.sweep_cache/wheels/``;
   both git-ignored) and unpacks its ``.py`` and ``.ipynb`` files into a scratch copy, made
   its own project (an empty ``.git/`` and a ``devlint.toml``) so that this repository's
   settings and ``.gitignore`` do not apply;
2. runs ``devlint check --output-format json`` on the copy, then
   ``devlint --fix --unsafe-fixes --show-fixes`` (``-j`` = cores, ``--select ALL`` unless
   told otherwise), then the fix once more;
3. verifies: every file the fix changed re-parses (notebooks: every code cell) and keeps
   the indentation of every line no fix wrote (``devlint.layout``), ``python -m
   compileall -q`` fails on no file where it passed on the original, the second fix run
   changed no byte, no DEV902 (internal error) diagnostic, no traceback or error on stderr.

It prints a table per corpus and one per rule, and exits 1 if anything in the columns
crashes, broken, non-idem or dev902 is not 0 (2 when a corpus could not be fetched).

    .venv/bin/python scripts/corpus_sweep.py                       # all nine corpora
    .venv/bin/python scripts/corpus_sweep.py --corpus timm --keep /tmp/sweep
    .venv/bin/python scripts/corpus_sweep.py --folder eval --folder examples   # local code
    diff -ru /tmp/sweep/timm/original /tmp/sweep/timm/fixed        # read the fixes
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from devlint.layout import layout_problems
from devlint.source import decode

ROOT = Path(__file__).resolve().parents[1]
CORPORA = {
    # name -> pip requirement
    "transformers": "transformers",
    "timm": "timm",
    "accelerate": "accelerate",
    "lightning": "lightning",
    "torchmetrics": "torchmetrics",
    "d2l": "d2l",
    "labml-nn": "labml-nn",
    "yolov5": "yolov5",
    "pytorch-tabnet": "pytorch-tabnet",
}
SUFFIXES = (".py", ".ipynb")
PROJECT_MARKER = "# corpus_sweep: the corpus is its own project, with devlint's defaults\n"
_PROBLEM = re.compile(r"Traceback \(most recent call last\)|^Error|^error|internal error", re.M)


def cache_dir() -> Path:
    bench = ROOT / "bench" / ".cache"
    return bench / "wheels" if bench.is_dir() else ROOT / ".sweep_cache" / "wheels"


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def fetch(name: str, requirement: str) -> Path:
    """The cached wheel or sdist of ``requirement``, downloaded the first time."""
    wheels = cache_dir()
    wheels.mkdir(parents=True, exist_ok=True)

    def cached() -> list[Path]:
        return sorted(
            path
            for path in wheels.iterdir()
            if path.name.endswith((".whl", ".tar.gz", ".zip"))
            and _normal(re.split(r"-\d", path.name, maxsplit=1)[0]) == _normal(requirement)
        )

    if not cached():
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet"]
        command += ["--disable-pip-version-check", "--dest", str(wheels), requirement]
        done = subprocess.run(command, capture_output=True, text=True, timeout=900)
        if done.returncode != 0 or not cached():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
            raise RuntimeError(f"pip download {requirement} failed: {' '.join(tail)}")
    return cached()[-1]


def unpack(archive: Path, destination: Path) -> int:
    """The archive's .py and .ipynb files under ``destination``; returns how many."""
    count = 0

    def place(member: str, data: bytes) -> None:
        nonlocal count
        relative = PurePosixPath(member)
        if relative.is_absolute() or ".." in relative.parts:
            return
        target = destination.joinpath(*relative.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        count += 1

    if archive.name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as opened:
            for info in opened.infolist():
                if not info.is_dir() and info.filename.endswith(SUFFIXES):
                    place(info.filename, opened.read(info))
    else:
        with tarfile.open(archive) as opened:
            for member in opened.getmembers():
                if member.isfile() and member.name.endswith(SUFFIXES):
                    handle = opened.extractfile(member)
                    if handle is not None:
                        place(member.name, handle.read())
    _own_project(destination)
    return count


def copy_folder(folder: Path, destination: Path) -> int:
    """A local folder's .py and .ipynb files under ``destination``; returns how many."""
    files = [path for path in sorted(folder.rglob("*")) if path.suffix in SUFFIXES]
    for path in files:
        target = destination / path.relative_to(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    _own_project(destination)
    return len(files)


def _own_project(destination: Path) -> None:
    (destination / ".git").mkdir(exist_ok=True)
    (destination / "devlint.toml").write_text(PROJECT_MARKER, encoding="utf-8")


def snapshot(tree: Path) -> dict[str, bytes]:
    return {
        path.relative_to(tree).as_posix(): path.read_bytes()
        for path in sorted(tree.rglob("*"))
        if path.suffix in SUFFIXES and path.is_file() and ".git" not in path.parts
    }


# -- checks of one file


def _cells(data: bytes) -> list[str] | None:
    """A notebook's code cells, magics commented out; None if it is not a notebook."""
    try:
        notebook = json.loads(data)
        cells = notebook["cells"]
    except (ValueError, KeyError, TypeError):
        return None
    found = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        if text.lstrip().startswith("%%"):
            continue
        lines = [
            "#" + line
            if line.lstrip().startswith(("%", "!")) or line.rstrip().endswith("?")
            else line
            for line in text.splitlines()
        ]
        found.append("\n".join(lines) + "\n")
    return found


def _parses(data: bytes | str) -> bool:
    try:
        ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def broken(relative: str, before: bytes, after: bytes) -> str | None:
    """Why the fix of one file broke it, or None."""
    if relative.endswith(".ipynb"):
        old, new = _cells(before), _cells(after)
        if new is None:
            return "the fixed notebook is not JSON" if old is not None else None
        if old is None or len(old) != len(new):
            return "the fixed notebook has other code cells"
        for number, (was, now) in enumerate(zip(old, new, strict=True)):
            if _parses(was) and not _parses(now):
                return f"code cell {number} no longer parses"
            moved = layout_problems(was, now)
            if moved:
                return f"code cell {number}: {moved[0]}"
        return None
    if not _parses(before):
        return "a file that did not parse was changed"
    if not _parses(after):
        return "the fixed file does not parse"
    moved = layout_problems(decode(before).text, decode(after).text)
    return moved[0] if moved else None


# -- running devlint


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def devlint(tree: Path, jobs: int, select: str, *args: str) -> Run:
    command = [sys.executable, "-m", "devlint", "check", ".", "--no-cache", "--exit-zero"]
    command += ["-j", str(jobs), "--select", select, "--no-color", *args]
    started = time.perf_counter()
    done = subprocess.run(
        command,
        cwd=tree,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=3600,
    )
    return Run(done.returncode, done.stdout, done.stderr, time.perf_counter() - started)


def _applied(stdout: str) -> Counter[str]:
    """Fixes per rule from the ``--fix --show-fixes`` listing."""
    counts: Counter[str] = Counter()
    for found in re.finditer(r"^ +(\d+) x (DEV\d+)", stdout, re.M):
        counts[found[2]] += int(found[1])
    return counts


def _compile_failures(tree: Path, cache: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-x", r"[/\\]\.git[/\\]", "."],
        cwd=tree,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPYCACHEPREFIX": str(cache)},
        timeout=3600,
    )
    return set(re.findall(r"^\*\*\* Error compiling '(.*?)'", done.stdout, re.M))


@dataclass
class Outcome:
    name: str
    archive: str = ""
    files: int = 0
    before: Counter[str] = field(default_factory=Counter)
    fixed: Counter[str] = field(default_factory=Counter)
    after: Counter[str] = field(default_factory=Counter)
    changed: int = 0
    crashes: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    non_idempotent: list[str] = field(default_factory=list)
    internal: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def bad(self) -> int:
        return len(self.crashes) + len(self.broken) + len(self.non_idempotent) + len(self.internal)


def _diagnostics(run: Run, outcome: Outcome, step: str) -> list[dict[str, object]]:
    _crashed(run, outcome, step)
    try:
        found = json.loads(run.stdout)
    except ValueError:
        outcome.crashes.append(f"{step}: output is not JSON")
        return []
    return found if isinstance(found, list) else []


def _crashed(run: Run, outcome: Outcome, step: str) -> None:
    if run.returncode not in (0, 1):
        outcome.crashes.append(f"{step}: exit {run.returncode}: {run.stderr.strip()[-300:]}")
    elif _PROBLEM.search(run.stderr):
        outcome.crashes.append(f"{step}: {run.stderr.strip()[-300:]}")


def sweep(name: str, work: Path, jobs: int, select: str, folder: Path | None = None) -> Outcome:
    """Check and fix one corpus (``folder``: a local folder instead of a PyPI package)."""
    outcome = Outcome(name)
    started = time.perf_counter()
    original, fixed = work / name / "original", work / name / "fixed"
    for tree in (original, fixed):
        shutil.rmtree(tree, ignore_errors=True)
    if folder is None:
        archive = fetch(name, CORPORA[name])
        outcome.archive = archive.name
        outcome.files = unpack(archive, original)
    else:
        outcome.archive = "(folder)"
        outcome.files = copy_folder(folder, original)
    shutil.copytree(original, fixed)
    before = snapshot(original)

    checked = _diagnostics(
        devlint(fixed, jobs, select, "--output-format", "json"), outcome, "check"
    )
    outcome.before.update(str(d.get("code")) for d in checked)
    first = devlint(fixed, jobs, select, "--fix", "--unsafe-fixes", "--show-fixes")
    _crashed(first, outcome, "fix")
    outcome.fixed = _applied(first.stdout)
    once = snapshot(fixed)
    second = devlint(fixed, jobs, select, "--fix", "--unsafe-fixes", "--show-fixes")
    _crashed(second, outcome, "second fix")
    twice = snapshot(fixed)
    outcome.non_idempotent = sorted(p for p in once if twice.get(p) != once[p])
    if _applied(second.stdout):
        outcome.non_idempotent.append(f"second run fixed {dict(_applied(second.stdout))}")
    left = _diagnostics(devlint(fixed, jobs, select, "--output-format", "json"), outcome, "recheck")
    outcome.after.update(str(d.get("code")) for d in left)
    for diagnostic in checked + left:
        if diagnostic.get("code") == "DEV902":
            outcome.internal.append(f"{diagnostic.get('filename')}: {diagnostic.get('message')}")

    changed = [path for path in before if once.get(path) != before[path]]
    outcome.changed = len(changed)
    for path in changed:
        why = broken(path, before[path], once.get(path, b""))
        if why:
            outcome.broken.append(f"{path}: {why}")
    with tempfile.TemporaryDirectory() as pycache:
        failing = _compile_failures(fixed, Path(pycache) / "fixed")
        if failing:
            failing -= _compile_failures(original, Path(pycache) / "original")
    outcome.broken += [f"{path}: compileall fails only after the fix" for path in sorted(failing)]
    outcome.seconds = time.perf_counter() - started
    return outcome


# -- report


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = []
    for row in [header, *rows]:
        cells = [
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def report(outcomes: list[Outcome]) -> str:
    header = [
        "corpus",
        "archive",
        "files",
        "diags",
        "changed",
        "fixes",
        "left",
        "crashes",
        "broken",
        "non-idem",
        "dev902",
        "seconds",
    ]
    rows = [
        [
            o.name,
            o.archive,
            str(o.files),
            str(sum(o.before.values())),
            str(o.changed),
            str(sum(o.fixed.values())),
            str(sum(o.after.values())),
            str(len(o.crashes)),
            str(len(o.broken)),
            str(len(o.non_idempotent)),
            str(len(o.internal)),
            f"{o.seconds:.0f}",
        ]
        for o in outcomes
    ]
    parts = [_table(header, rows)]
    codes = sorted({code for o in outcomes for code in [*o.before, *o.fixed]})
    if codes:
        rule_rows = [
            [code, *(f"{o.before[code]}/{o.fixed[code]}" for o in outcomes)] for code in codes
        ]
        parts.append(
            "diagnostics before / fixes applied, per rule:\n"
            + _table(["rule", *(o.name for o in outcomes)], rule_rows)
        )
    for o in outcomes:
        for title, items in (
            ("crash", o.crashes),
            ("broken", o.broken),
            ("non-idempotent", o.non_idempotent),
            ("DEV902", o.internal),
        ):
            parts += [f"{o.name}: {title}: {item}" for item in items[:20]]
    return "\n\n".join(parts)


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus",
        action="append",
        choices=sorted(CORPORA),
        help="a corpus to sweep (repeatable; default: all)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="keep the original and fixed copies in DIR/<corpus>/",
    )
    parser.add_argument(
        "--folder",
        action="append",
        type=Path,
        default=[],
        help="a local folder to sweep as well (repeatable; e.g. eval examples)",
    )
    parser.add_argument("-j", "--jobs", type=int, default=default_jobs())
    parser.add_argument("--select", default="ALL", help="rules to check and fix (default ALL)")
    args = parser.parse_args(argv)
    folders = {f"{path.resolve().name}-folder": path.resolve() for path in args.folder}
    names = args.corpus or ([] if folders else list(CORPORA))
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="devlint-sweep-") as scratch:
        work = args.keep.resolve() if args.keep else Path(scratch)
        for name in [*names, *folders]:
            print(f"sweeping {name} ...", file=sys.stderr, flush=True)
            try:
                outcomes.append(sweep(name, work, args.jobs, args.select, folders.get(name)))
            except (RuntimeError, OSError, subprocess.SubprocessError) as error:
                print(f"{name}: {error}", file=sys.stderr)
                return 2
            print(report(outcomes[-1:]).split("\n\n")[0], file=sys.stderr, flush=True)
    print(report(outcomes))
    return 1 if any(o.bad for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
