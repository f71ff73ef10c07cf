"""Run the runnable corpus on every device and write the table to its RESULTS.md.

Every program of ``tests/data/runnable/`` (see its ``MANIFEST.toml``) runs in each variant
(``original``, ``fixed`` = after ``devlint --fix``, ``unsafe`` = after ``devlint --fix
--unsafe-fixes``, each on its own copy) on each device:

- by default: ``cpu`` (this machine, which has no CUDA) and ``cuda`` / ``mps`` under
  ``devlint run --device cuda|mps`` (a virtual device on the CPU);
- with ``--real-cuda`` (on a CUDA machine): ``cpu`` (``CUDA_VISIBLE_DEVICES=""``) and
  ``cuda``, both with plain ``python``, one process per step.

A cell is ``ok`` or the first failing step's ``Type: first line`` (``devlint run`` says
``device bug (DEVnnn)`` where it stopped at a device bug). The cpu column is marked ✗
where it contradicts the manifest's expectation (what ``tests/test_runnable_corpus.py``
asserts).

    .venv/bin/python scripts/run_corpus.py                     # writes RESULTS.md
    .venv/bin/python scripts/run_corpus.py --real-cuda --jobs 8 --output RESULTS-cuda.md
    .venv/bin/python scripts/run_corpus.py --program nanogpt_train --output -  # stdout
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from runnable_corpus import (  # noqa: E402  # tests/ is not a package
    CORPUS,
    CUDA_ABSENT,
    CUDA_USE_RULES,
    VARIANTS,
    ForkServer,
    Outcome,
    Program,
    copy_program,
    diagnostics,
    fix_copy,
    load_programs,
    run_steps,
    run_subprocess,
)


def devlint_in_process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``devlint ARGS`` in ``cwd``, in this process (click's runner: libcst imported once)."""
    from click.testing import CliRunner

    from devlint.cli import main

    previous = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner(env={"NO_COLOR": "1"}).invoke(main, list(args), prog_name="devlint")
    finally:
        os.chdir(previous)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(
        ["devlint", *args], result.exit_code, result.stdout, result.stderr
    )


@dataclass
class Row:
    program: Program
    variant: str
    devlint: str  # what devlint reported (original) or what the fix did
    cells: dict[str, Outcome]
    cuda_use_reported: bool = True  # (original) devlint reports CUDA use


def fix_summary(output: str) -> str:
    found = re.search(r"\((\d+) fixed, (\d+) remaining\)", output)
    if found:
        return f"{found.group(1)} fixed, {found.group(2)} left"
    found = re.search(r"Found (\d+) errors?\.", output)
    if found:
        return f"0 fixed, {found.group(1)} left"
    return "nothing to fix" if "All checks passed" in output else output.strip()[-60:]


def runner_for(device: str, real_cuda: bool, server: ForkServer | None) -> Callable:
    if real_cuda:
        hidden = {"CUDA_VISIBLE_DEVICES": ""} if device == "cpu" else {}
        return lambda work, step: run_subprocess(work, step, env=hidden)
    assert server is not None
    mode = "python" if device == "cpu" else f"virtual:{device}"
    return lambda work, step: server.run(work, step, mode=mode)


def run_all(
    programs: list[Program], devices: list[str], real_cuda: bool, jobs: int = 1
) -> list[Row]:
    """Fix every variant's copy (in this process, one at a time), then run each on each
    device: in the fork server one at a time, or (``real_cuda``) ``jobs`` processes at once."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="run-corpus-") as scratch:
        fixed_copies = []
        for program in programs:
            for variant in VARIANTS:
                fixed_copy = copy_program(program, Path(scratch) / program.name / variant)
                fix = fix_copy(program, variant, fixed_copy, devlint_in_process)
                summary, reported = fix_summary(fix.output), True
                if variant == "original":
                    codes = [
                        d["code"] for d in diagnostics(program, fixed_copy, devlint_in_process)
                    ]
                    cuda = [code for code in codes if code in CUDA_USE_RULES]
                    summary = f"{len(codes)} reported ({len(cuda)} CUDA use)"
                    reported = bool(cuda)
                rows.append(Row(program, variant, summary, {}, reported))
                fixed_copies.append(fixed_copy)
        server = None if real_cuda else ForkServer(Path(scratch) / "server")

        def run_one(task: tuple[int, str]) -> None:
            index, device = task
            row, fixed_copy = rows[index], fixed_copies[index]
            work = fixed_copy.parent / device / row.program.folder
            shutil.copytree(fixed_copy, work)
            outcome, _ = run_steps(runner_for(device, real_cuda, server), work, row.program.steps)
            error = outcome.error.replace(str(work.resolve()), ".")  # no machine paths
            row.cells[device] = replace(outcome, error=error.replace(scratch, "…"))
            print(
                f"{row.program.name:28} {row.variant:8} {device:5} "
                f"{row.cells[device].summary()[:90]}",
                file=sys.stderr,
                flush=True,
            )

        tasks = [(index, device) for index in range(len(rows)) for device in devices]
        try:
            if real_cuda and jobs > 1:
                with ThreadPoolExecutor(max_workers=jobs) as pool:
                    list(pool.map(run_one, tasks))
            else:
                for task in tasks:
                    run_one(task)
        finally:
            if server is not None:
                server.close()
    return rows


def cell(outcome: Outcome, limit: int = 110) -> str:
    if outcome.ok:
        return "ok"
    text = outcome.summary()
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    where = f" ({outcome.where})" if outcome.where else ""
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`" + where.replace("|", "\\|")


def contradicts(row: Row) -> bool:
    """The cpu outcome is not what the manifest expects (what the test asserts)."""
    outcome = row.cells["cpu"]
    expected = row.program.expect[row.variant]
    if expected == "ok":
        return not outcome.ok
    if expected == "gap":  # a named gap: it fails, reported or not
        return outcome.ok
    absent = CUDA_ABSENT.search(outcome.error) or CUDA_ABSENT.search(outcome.log[-1500:])
    return outcome.ok or not absent or not row.cuda_use_reported


def render(rows: list[Row], devices: list[str], real_cuda: bool, seconds: float) -> str:
    import torch

    import devlint

    labels = {
        "cpu": "cpu",
        "cuda": "cuda" if real_cuda else "cuda (virtual)",
        "mps": "mps (virtual)",
    }
    how = (
        'plain `python`, one process per step; cpu = `CUDA_VISIBLE_DEVICES=""`, cuda = the '
        "real device"
        if real_cuda
        else "cpu = plain Python on this machine (no CUDA); cuda, mps = `devlint run --device "
        "cuda|mps` (a virtual device on the CPU)"
    )
    lines = [
        "# Runnable corpus: results",
        "",
        "Written by `scripts/run_corpus.py`"
        + (" --real-cuda" if real_cuda else "")
        + (f" on {torch.cuda.get_device_name(0)}" if real_cuda else "")
        + f" (torch {torch.__version__}, devlint {devlint.__version__}, Python "
        f"{platform.python_version()}, {seconds:.0f} s). The programs, their provenance and "
        "expectations: `MANIFEST.toml`.",
        "",
        f"Devices: {how}. Variants: `original`; `fixed` = after `devlint --fix`; `unsafe` = "
        "after `devlint --fix --unsafe-fixes`. A cell is `ok` or the failing step's "
        "`script: Type: first line` (where). fix: for `original`, what `devlint check` "
        "reports (CUDA use: DEV003/007/011/016/017); else what the fix did. ✗ marks a cpu "
        "outcome that contradicts the manifest's expectation, or a cuda-only original whose "
        "CUDA use devlint does not report (each a failure of `tests/test_runnable_corpus.py`).",
        "",
        "| program | variant | fix | expected (cpu) | "
        + " | ".join(labels[d] for d in devices)
        + " |",
        "|---|---|---|---|" + "---|" * len(devices),
    ]
    for row in rows:
        cells = []
        for device in devices:
            text = cell(row.cells[device])
            if device == "cpu" and contradicts(row):
                text = "✗ " + text
            cells.append(text)
        lines.append(
            f"| {row.program.name} | {row.variant} | {row.devlint} | "
            f"{row.program.expect[row.variant]} | " + " | ".join(cells) + " |"
        )
    bad = [row for row in rows if contradicts(row)]
    lines += ["", "## Summary", ""]
    for device in devices:
        ran = sum(row.cells[device].ok for row in rows)
        lines.append(f"- {labels[device]}: {ran} of {len(rows)} runs ok.")
    lines.append(
        f"- cpu against the manifest: {len(rows) - len(bad)} as expected, {len(bad)} not"
        + (": " + ", ".join(f"{r.program.name} [{r.variant}]" for r in bad) if bad else ".")
    )
    if not real_cuda:
        lines += [
            "",
            "## Failures under `devlint run` that are not device bugs",
            "",
            "A virtual device stands for a machine that has it: there the programs (and their "
            "fixed variants) should run, or stop at a device bug. Each failure of another kind "
            "is either the fix's (the cpu run of that variant fails the same way where it "
            "should run) or the virtual device's own (`devlint run` only).",
            "",
        ]
        for row in rows:
            for device in devices[1:]:
                outcome = row.cells[device]
                if outcome.ok or outcome.error.startswith("device bug"):
                    continue
                cpu = row.cells["cpu"]
                same = not cpu.ok and cpu.error == outcome.error
                whose = (
                    "as on the cpu (the fix, or what it left)"
                    if same and row.program.expect[row.variant] == "ok"
                    else "`devlint run` only"
                )
                lines.append(
                    f"- {row.program.name} [{row.variant}] on {labels[device]}: {cell(outcome)}"
                    f" — {whose}"
                )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--real-cuda",
        action="store_true",
        help="real devices (a CUDA machine): cpu with CUDA hidden, and cuda; plain python",
    )
    parser.add_argument("--program", action="append", help="only this program (repeatable)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="with --real-cuda: runs at once (each its own process); default 1",
    )
    parser.add_argument(
        "--output",
        default=str(CORPUS / "RESULTS.md"),
        help="where to write the table ('-': stdout); default tests/data/runnable/RESULTS.md",
    )
    options = parser.parse_args()
    programs = load_programs()
    if options.program:
        unknown = set(options.program) - {p.name for p in programs}
        if unknown:
            parser.error(f"unknown program(s): {', '.join(sorted(unknown))}")
        programs = [p for p in programs if p.name in options.program]
    devices = ["cpu", "cuda"] if options.real_cuda else ["cpu", "cuda", "mps"]
    if options.real_cuda:
        import torch

        if not torch.cuda.is_available():
            parser.error("--real-cuda: no CUDA device here")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    started = time.perf_counter()
    rows = run_all(programs, devices, options.real_cuda, options.jobs)
    text = render(rows, devices, options.real_cuda, time.perf_counter() - started)
    if options.output == "-":
        sys.stdout.write(text)
    else:
        Path(options.output).write_text(text, encoding="utf-8")
        print(f"wrote {options.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
