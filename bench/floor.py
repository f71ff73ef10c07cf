"""The floor of the peer benchmark: bare ``libcst.parse_module`` of every ``.py`` file.

Run by ``bench/run.py`` with the project virtualenv's python, on as many worker
processes as devlint gets (``-j``), so that what devlint costs beyond parsing is the
difference between its row and this one. Files are read and decoded as UTF-8 (what
devlint does for almost every file), sorted, and handed to the workers in chunks of 16
(devlint's chunk size), biggest files first. The cycle collector is handled as devlint's
runner handles it (paused while a file is parsed, then one young-generation collection;
what the workers inherit frozen), which saves about 5 % of the CPU time: the floor is
the cheapest libcst parse, not a naive one. Prints one line: files parsed, files that
failed, lines.

    python bench/floor.py [-j N] PATH...
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor

import libcst

CHUNK_SIZE = 16
SKIP_DIRS = {".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules"}


def python_files(paths: Sequence[str]) -> Iterator[str]:
    for path in paths:
        if os.path.isfile(path):
            yield path
            continue
        for directory, subdirs, files in os.walk(path):
            subdirs[:] = sorted(d for d in subdirs if d not in SKIP_DIRS)
            for name in sorted(files):
                if name.endswith(".py"):
                    yield os.path.join(directory, name)


def parse_chunk(paths: Sequence[str]) -> tuple[int, int, int]:
    """Parse each file; returns (parsed, failed, lines)."""
    parsed = failed = lines = 0
    for path in paths:
        gc.disable()
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as handle:
                text = handle.read()
            lines += text.count("\n")
            libcst.parse_module(text)
            parsed += 1
        except (OSError, libcst.ParserSyntaxError, RecursionError, ValueError, MemoryError):
            failed += 1
        finally:
            gc.enable()
            gc.collect(0)
    return parsed, failed, lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args(argv)
    files = sorted(python_files(args.paths), key=os.path.getsize, reverse=True)
    chunks = [files[i : i + CHUNK_SIZE] for i in range(0, len(files), CHUNK_SIZE)]
    if args.jobs <= 1 or len(chunks) <= 1:
        gc.freeze()
        results = list(map(parse_chunk, chunks))
    else:
        with ProcessPoolExecutor(max_workers=args.jobs, initializer=gc.freeze) as pool:
            results = list(pool.map(parse_chunk, chunks))
    parsed = sum(r[0] for r in results)
    failed = sum(r[1] for r in results)
    lines = sum(r[2] for r in results)
    print(f"parsed {parsed} files, {failed} failed, {lines} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
