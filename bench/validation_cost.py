"""What switching off libcst's per-node validation buys (``engine.unvalidated_nodes``).

Times, in CPU seconds (all threads, best of 3, alternating), ``libcst.parse_module`` and
devlint's whole ``check_text`` on every ``.py`` file under the given folders, with the
validation on and off::

    .venv/bin/python bench/validation_cost.py            # fixtures/ and eval/
    .venv/bin/python bench/validation_cost.py bench/.cache/corpora/timm-*
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable
from pathlib import Path

import libcst as cst

from devlint import engine
from devlint.engine import CheckOptions, check_text, unvalidated_nodes
from devlint.rule import all_rules


def cpu_seconds(work: Callable[[], None]) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path, default=[Path("fixtures"), Path("eval")])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    files = sorted(path for folder in args.folders for path in folder.rglob("*.py"))
    texts = [path.read_text(encoding="utf-8", errors="replace") for path in files]
    options = CheckOptions(frozenset(all_rules()))

    def parse_all() -> None:
        for text in texts:
            with contextlib.suppress(Exception):
                cst.parse_module(text)

    def check_all() -> None:
        for text in texts:
            check_text(text, "x.py", options)

    switch = engine.unvalidated_nodes
    check_all()  # imports and caches warm
    times: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        times.setdefault("parse, validated", []).append(cpu_seconds(parse_all))
        with unvalidated_nodes():
            times.setdefault("parse, unvalidated", []).append(cpu_seconds(parse_all))
        engine.unvalidated_nodes = contextlib.nullcontext  # type: ignore[assignment]
        times.setdefault("check, validated", []).append(cpu_seconds(check_all))
        engine.unvalidated_nodes = switch
        times.setdefault("check, unvalidated", []).append(cpu_seconds(check_all))
    size = sum(map(len, texts)) / 1e6
    print(f"{len(files)} files, {size:.1f} MB; CPU seconds, best of {args.repeat}")
    for what in ("parse", "check"):
        on, off = min(times[f"{what}, validated"]), min(times[f"{what}, unvalidated"])
        print(f"{what}: validated {on:.2f} s, unvalidated {off:.2f} s ({(on - off) / on:.0%} less)")


if __name__ == "__main__":
    main()
