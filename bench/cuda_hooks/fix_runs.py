"""Do fixed programs run here? Programs copied, fixed by each command, then run.

    python bench/cuda_hooks/fix_runs.py PROGRAM... \\
        --fixer devlint='devlint check --no-cache --select DEV003,DEV011,DEV017 \\
            --target-torch 2.10 --fix --unsafe-fixes {dir}' \\
        --fixer other='python path/to/other_tool.py --fix {dir}'

Each fixer gets its own copy of the programs (``{dir}``); ``original`` (no fixer) is
always run too. A program runs clean when it exits 0 within the time limit (a program
that needs arguments is given ``--local_rank 0`` when it fails without). On a machine
without an accelerator this shows which fixes make CUDA-only programs portable.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def run_clean(program: Path, timeout: float) -> bool:
    for extra in ([], ["--local_rank", "0"]):
        try:
            done = subprocess.run(
                [sys.executable, str(program), *extra],
                cwd=program.parent,
                capture_output=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return False
        if done.returncode == 0:
            return True
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("programs", nargs="+", type=Path)
    parser.add_argument("--fixer", action="append", default=[], metavar="NAME=COMMAND")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    fixers = dict(entry.split("=", 1) for entry in args.fixer)
    with tempfile.TemporaryDirectory() as scratch:
        print("| programs fixed by | run clean | fail | do not compile |\n|---|---|---|---|")
        for name, command in {"original": "", **fixers}.items():
            folder = Path(scratch) / name
            folder.mkdir()
            for program in args.programs:
                shutil.copy(program, folder / f"{program.parent.name}_{program.name}")
            if command:
                subprocess.run(shlex.split(command.format(dir=folder)), capture_output=True)
            copies = sorted(folder.glob("*.py"))
            broken = [p for p in copies if _does_not_compile(p)]
            clean = [p for p in copies if p not in broken and run_clean(p, args.timeout)]
            failed = len(copies) - len(clean) - len(broken)
            print(f"| {name} | {len(clean)} | {failed} | {len(broken)} |")


def _does_not_compile(program: Path) -> bool:
    try:
        compile(program.read_text(encoding="utf-8"), str(program), "exec")
    except SyntaxError:
        return True
    return False


if __name__ == "__main__":
    main()
