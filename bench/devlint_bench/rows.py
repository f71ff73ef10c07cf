"""The rows of one corpus's table: the commands to time, run round-robin."""

from __future__ import annotations

import contextlib
import shutil
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from devlint_bench.common import DEVLINT_CACHE, FLOOR_SCRIPT, BenchError, measured_env
from devlint_bench.corpora import Corpus
from devlint_bench.measure import Measurement, measure
from devlint_bench.tools import PEER_LABELS, PEERS, DevlintCli


@dataclass
class Row:
    key: str
    label: str
    group: str  # "corpus": the whole corpus; "file": the one-file (pre-commit) case
    command: list[str] | None
    timeout: float
    ok_codes: tuple[int, ...] = (0,)
    env: dict[str, str] = field(default_factory=measured_env)
    before: Callable[[], None] | None = None
    status: str | None = None  # why there are no (more) runs
    runs: list[Measurement] = field(default_factory=list)
    depends_on: str | None = None  # run only while that row succeeds

    @property
    def active(self) -> bool:
        return self.command is not None and self.status is None

    def median(self, attribute: str) -> float:
        return float(statistics.median(getattr(run, attribute) for run in self.runs))


def _clear(*directories: Path) -> Callable[[], None]:
    def clear() -> None:
        for directory in directories:
            shutil.rmtree(directory, ignore_errors=True)

    return clear


def build_rows(
    corpus: Corpus,
    *,
    python: str,
    devlint: DevlintCli,
    ruff: str | None,
    peers: dict[str, tuple[str | None, str]] | str,
    jobs: int,
    timeout: float,
    peer_timeout: float,
) -> list[Row]:
    target = str(corpus.path)
    common: list[str] = []
    if devlint.has("--jobs"):
        common += ["--jobs", str(jobs)]
    common += ["--exit-zero"] if devlint.has("--exit-zero") else []
    common += ["--quiet"] if devlint.has("--quiet") else []
    devlint_ok = (0,) if devlint.has("--exit-zero") else (0, 1)
    cold = ["--no-cache"] if devlint.has("--no-cache") else []
    floor = [python, str(FLOOR_SCRIPT), "-j", str(jobs), target]
    cold_label = "devlint cold" + (" (--no-cache)" if cold else "")
    rows = [
        Row("floor", "floor: libcst.parse_module", "corpus", floor, timeout),
        Row("devlint-cold", cold_label, "corpus", devlint.command(*cold, *common, target), timeout),
    ]
    rows[1].ok_codes = devlint_ok
    if devlint.has("--no-cache"):
        cache_dir = DEVLINT_CACHE / corpus.name
        where = ["--cache-dir", str(cache_dir)] if devlint.has("--cache-dir") else []
        warm = devlint.command(*where, *common, target)
        clear = _clear(cache_dir, corpus.path / ".devlint_cache")
        rows.append(Row("devlint-fill", "devlint cache fill", "corpus", warm, timeout, devlint_ok))
        rows[-1].before = clear
        rows.append(Row("devlint-warm", "devlint warm (cached)", "corpus", warm, timeout))
        rows[-1].ok_codes, rows[-1].depends_on = devlint_ok, "devlint-fill"
    else:
        rows.append(Row("devlint-warm", "devlint warm", "corpus", None, timeout))
        rows[-1].status = "n/a (no cache yet)"
    ruff_row = Row("ruff", "ruff --select ALL", "corpus", None, timeout)
    if ruff is None:
        ruff_row.status = "unavailable: ruff not found in .venv or on PATH"
    else:
        ruff_row.command = [ruff, "check", "--isolated", "--select", "ALL", "--no-cache"]
        ruff_row.command += ["--exit-zero", "--quiet", "--output-format", "concise", target]
        ruff_row.env = measured_env({"RAYON_NUM_THREADS": str(jobs)})
    rows.append(ruff_row)
    for name, (_, _, args, ok_codes) in PEERS.items():
        label = " ".join((PEER_LABELS[name], *args))
        row = Row(name, label, "corpus", None, peer_timeout, ok_codes)
        if isinstance(peers, str):  # why they do not run on this corpus
            row.status = peers
        elif peers[name][0] is None:
            row.status = f"unavailable: {peers[name][1]}"
        else:
            jobs_args = ["--jobs", str(jobs)] if name == "torchfix" else []
            row.command = [str(peers[name][0]), *args, *jobs_args, target]
        rows.append(row)
    import_code = "import libcst, click"
    rows.append(
        Row("import", f"python -c '{import_code}'", "file", [python, "-c", import_code], timeout)
    )
    one_file = devlint.command(*cold, *common, str(corpus.small_file))
    rows.append(Row("devlint-file", "devlint one file", "file", one_file, timeout, devlint_ok))
    return rows


def run_rows(rows: list[Row], corpus: Corpus, repeat: int) -> None:
    """Round-robin: every row once per repetition, so slow spells of a shared machine
    spread over all tools instead of hitting one."""
    by_key = {row.key: row for row in rows}
    for repetition in range(1, repeat + 1):
        for row in rows:
            dependency = by_key.get(row.depends_on) if row.depends_on else None
            if not row.active or (dependency is not None and dependency.status is not None):
                if dependency is not None and dependency.status and row.status is None:
                    row.status = f"skipped: {dependency.label} failed"
                continue
            if row.before is not None:
                row.before()
            prefix = f"[{corpus.name} {repetition}/{repeat}] {row.label:<34}"
            print(prefix, end=" ", file=sys.stderr, flush=True)
            assert row.command is not None
            try:
                run = measure(row.command, timeout=row.timeout, env=row.env)
            except BenchError as error:
                row.status = f"unavailable: {error}"
                print(row.status, file=sys.stderr)
                continue
            if run.timed_out:
                row.status = f"timeout (> {row.timeout:.0f} s)"
            elif run.rc not in row.ok_codes:
                reason = run.stderr_tail.splitlines()[-1] if run.stderr_tail else "no stderr"
                row.status = f"failed: exit {run.rc}: {reason}"
            else:
                row.runs.append(run)
            others = f", others {run.others:.1f} CPU-s" if run.others else ""
            note = f"  -> {row.status}" if row.status else ""
            print(f"{run.wall:8.2f} s wall {run.cpu:8.2f} CPU-s{others}{note}", file=sys.stderr)


def warm_up(rows: list[Row], corpus: Corpus) -> None:
    """One untimed run of every tool on one file: fills the OS caches and compiles .pyc."""
    for row in rows:
        if row.group != "corpus" or not row.active or row.key in ("floor", "devlint-fill"):
            continue
        if row.key == "devlint-warm" or row.command is None:
            continue
        command = [*row.command[:-1], str(corpus.small_file)]
        with contextlib.suppress(BenchError):  # the timed runs report it
            measure(command, timeout=row.timeout, env=row.env)
