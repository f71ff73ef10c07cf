"""The report: tables against the floor, scaling across corpora, targets, and the JSON."""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path
from typing import Any

from devlint_bench.common import shown
from devlint_bench.corpora import Corpus
from devlint_bench.rows import Row
from devlint_bench.tools import PEER_LABELS, PEERS


def _ratio(value: float, reference: float | None) -> str:
    if reference is None or reference <= 0:
        return "-"
    return f"{value / reference:.1f}x" if value / reference >= 10 else f"{value / reference:.2f}x"


def _reference(rows: list[Row], key: str) -> Row | None:
    found = [row for row in rows if row.key == key and row.runs]
    return found[0] if found else None


def _cells(row: Row, reference: Row | None, devlint: Row | None, with_peer: bool) -> list[str]:
    tree = [run.tree_mb for run in row.runs if run.tree_mb is not None]
    others = [run.others for run in row.runs if run.others is not None]
    wall, cpu = row.median("wall"), row.median("cpu")
    cells = [
        row.label,
        str(len(row.runs)),
        f"{min(run.wall for run in row.runs):.2f}",
        f"{wall:.2f}",
        f"{cpu:.2f}",
        f"{max(run.maxrss_mb for run in row.runs):.0f}",
        f"{max(tree):.0f}" if tree else "-",
        _ratio(wall, reference.median("wall") if reference else None),
        _ratio(cpu, reference.median("cpu") if reference else None),
    ]
    if with_peer:
        if row.key in PEERS and devlint is not None:
            cells += [_ratio(wall, devlint.median("wall")), _ratio(cpu, devlint.median("cpu"))]
        else:
            cells += ["", ""]
    return [*cells, str(row.runs[-1].out_lines), f"{max(others):.1f}" if others else "-"]


def _render(header: list[str], table: list[list[str]]) -> list[str]:
    """Aligned columns; a short row (label, runs, status) lets its status run on."""
    full = [cells for cells in table if len(cells) == len(header)]
    widths = [max(len(cells[i]) for cells in [header, *full]) for i in range(len(header))]
    lines = []
    for cells in [header, *table]:
        parts = [cells[0].ljust(widths[0])]
        if len(cells) == len(header):
            parts += [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)]
        else:
            parts += [cells[1].rjust(widths[1]), *cells[2:]]
        lines.append("  ".join(parts).rstrip())
    return lines


def format_table(rows: list[Row], group: str) -> str:
    """The table of one group of rows: "corpus" against the floor, "file" against the
    bare import of libcst and click."""
    ref_key, ref_name = ("floor", "floor") if group == "corpus" else ("import", "import")
    with_peer = group == "corpus"
    header = ["tool", "runs", "wall min", "wall med", "CPU-s", "peak RSS MB", "tree MB"]
    header += [f"x {ref_name} wall", f"x {ref_name} CPU"]
    header += ["x devlint wall", "x devlint CPU"] if with_peer else []
    header += ["out lines", "others CPU-s"]
    reference, devlint = _reference(rows, ref_key), _reference(rows, "devlint-cold")
    table, notes = [], []
    for row in rows:
        if row.group != group:
            continue
        if row.runs:
            table.append(_cells(row, reference, devlint, with_peer))
            if row.status:
                notes.append(f"  {row.label}: {len(row.runs)} good run(s), then {row.status}")
        else:
            status = row.status or "not run"
            if status.startswith("timeout") and devlint is not None and row.key in PEERS:
                bound = row.timeout / devlint.median("wall")
                status += f", > {bound:.1f}x devlint cold wall"
            table.append([row.label, "0", status])
    return "\n".join(_render(header, table) + notes)


def print_corpus_report(corpus: Corpus, rows: list[Row], jobs: int, repeat: int) -> None:
    print()
    rel = os.path.relpath(corpus.path, Path.cwd())
    print(f"== {corpus.wheel.name}: {corpus.files} files, {corpus.lines:,} lines ({rel})")
    print(f"   -j {jobs}, {repeat} repetition(s); times in seconds, ratios of medians")
    print()
    print(format_table(rows, "corpus"))
    print()
    small = os.path.relpath(corpus.small_file, corpus.path)
    print(f"one file, the pre-commit case: {small} ({corpus.small_file_lines} lines)")
    print(format_table(rows, "file"))
    print(f"torch modules imported by `devlint check` on that file: {corpus.torch_imports}")


def _cpu_per_kline(corpus: Corpus, rows: list[Row], key: str) -> float | None:
    row = _reference(rows, key)
    return row.median("cpu") * 1e6 / corpus.lines if row else None


def print_scaling(results: list[tuple[Corpus, list[Row]]]) -> None:
    """CPU per line on each corpus, and the ratio between the last and the first: 1.00
    is perfectly linear."""
    if len(results) < 2:
        return
    keys = ["floor", "devlint-cold", "ruff", "torchfix", "fixit"]
    print()
    print("scaling: median CPU-ms per 1,000 lines")
    header = ["corpus", "files", "lines", *keys]
    table = []
    for corpus, rows in results:
        cells = [corpus.name, str(corpus.files), f"{corpus.lines:,}"]
        for key in keys:
            value = _cpu_per_kline(corpus, rows, key)
            cells.append("-" if value is None else f"{value:.0f}")
        table.append(cells)
    (first, first_rows), (last, last_rows) = results[0], results[-1]
    ratios = [f"{last.name} / {first.name}", "", ""]
    for key in keys:
        a, b = _cpu_per_kline(first, first_rows, key), _cpu_per_kline(last, last_rows, key)
        ratios.append("-" if a is None or b is None else f"{b / a:.2f}")
    print("\n".join(_render(header, [*table, ratios])))


def _check(
    label: str, value: float | None, limit: float, unit: str = "x", *, at_least: bool = False
) -> str:
    """One line of the target summary: the figure, the limit and whether it is met."""
    if value is None:
        return f"  {label}: not measured"
    digits = 0 if unit == " MB" else 2
    figure = f"{value:.0%}" if unit == "%" else f"{value:.{digits}f}{unit}"
    bound = f"{limit:.0%}" if unit == "%" else f"{limit:g}{unit}"
    met = value >= limit if at_least else value <= limit
    return f"  {label}: {figure} (target {'>=' if at_least else '<='} {bound}): " + (
        "met" if met else "NOT MET"
    )


def _ratio_of(rows: list[Row], key: str, reference: str, attribute: str) -> float | None:
    row, ref = _reference(rows, key), _reference(rows, reference)
    if row is None or ref is None or ref.median(attribute) <= 0:
        return None
    return row.median(attribute) / ref.median(attribute)


def print_targets(results: list[tuple[Corpus, list[Row]]]) -> None:
    """The targets of issue 7, judged on the medians above."""
    print()
    print("targets (medians of this run):")
    for corpus, rows in results:
        name = corpus.name
        for attribute, what in (("wall", "wall"), ("cpu", "CPU-s")):
            ratio = _ratio_of(rows, "devlint-cold", "floor", attribute)
            print(_check(f"{name}: devlint cold / floor, {what}", ratio, 1.3))
        for peer in PEERS:
            for attribute, what in (("wall", "wall"), ("cpu", "CPU-s")):
                ratio = _ratio_of(rows, peer, "devlint-cold", attribute)
                if ratio is not None:
                    label = f"{name}: {PEER_LABELS[peer]} / devlint cold, {what}"
                    print(_check(label, ratio, 10, at_least=True))
        ratio = _ratio_of(rows, "devlint-warm", "devlint-cold", "wall")
        print(_check(f"{name}: devlint warm / cold, wall", ratio, 0.1, "%"))
        ratio = _ratio_of(rows, "devlint-file", "import", "wall")
        print(_check(f"{name}: devlint one file / import libcst, click, wall", ratio, 2.0))
        cold = _reference(rows, "devlint-cold")
        peak = max(run.maxrss_mb for run in cold.runs) if cold else None
        print(_check(f"{name}: devlint cold, peak RSS of one process", peak, 300, " MB"))
        print(f"  {name}: torch imported by `devlint check`: {corpus.torch_imports}")
    if len(results) >= 2:
        (first, first_rows), (last, last_rows) = results[0], results[-1]
        a = _cpu_per_kline(first, first_rows, "devlint-cold")
        b = _cpu_per_kline(last, last_rows, "devlint-cold")
        label = f"devlint cold CPU per line, {last.name} / {first.name} (linear: 1)"
        print(_check(label, None if a is None or b is None else b / a, 1.25))


def machine_info(jobs: int) -> dict[str, Any]:
    model = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        load = os.getloadavg()
    except OSError:
        load = (0.0, 0.0, 0.0)
    return {
        "cores": os.cpu_count(),
        "cpu": model,
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "jobs": jobs,
        "loadavg_at_start": [round(x, 2) for x in load],
    }


def to_json(
    results: list[tuple[Corpus, list[Row]]],
    info: dict[str, Any],
    versions: dict[str, str],
    args: argparse.Namespace,
) -> dict[str, Any]:
    corpora = {}
    for corpus, rows in results:
        corpora[corpus.name] = {
            "wheel": corpus.wheel.name,
            "files": corpus.files,
            "lines": corpus.lines,
            "one_file": os.path.relpath(corpus.small_file, corpus.path),
            "one_file_lines": corpus.small_file_lines,
            "torch_imported_by_check": corpus.torch_imports,
            "rows": [
                {
                    "key": row.key,
                    "label": row.label,
                    "group": row.group,
                    "command": None if row.command is None else list(map(shown, row.command)),
                    "status": row.status,
                    "runs": [run.as_json() for run in row.runs],
                }
                for row in rows
            ],
        }
    return {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": info,
        "versions": versions,
        "options": {"repeat": args.repeat, "jobs": args.jobs, "peers_on": args.peers_on},
        "corpora": corpora,
    }
