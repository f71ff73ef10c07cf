"""``python bench/run.py``: parse the options, set up, run every corpus, report."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from devlint_bench.common import BenchError
from devlint_bench.corpora import CORPORA, Corpus, prepare_corpus
from devlint_bench.report import (
    machine_info,
    print_corpus_report,
    print_scaling,
    print_targets,
    to_json,
)
from devlint_bench.rows import Row, build_rows, run_rows, warm_up
from devlint_bench.tools import (
    PEER_LABELS,
    PEERS,
    detect_devlint,
    ensure_peer,
    find_tool,
    libcst_version,
    project_python,
    torch_imports,
    version_of,
)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/run.py",
        description="Time devlint against bare libcst parsing, TorchFix, Fixit and ruff.",
    )
    parser.add_argument("--corpus", choices=[*CORPORA, "all"], default="all")
    parser.add_argument("-j", "--jobs", type=int, default=default_jobs(), help="default: cores")
    parser.add_argument("--repeat", type=int, default=3, help="runs per tool (default 3)")
    parser.add_argument("--no-peers", action="store_true", help="skip TorchFix and Fixit")
    parser.add_argument(
        "--peers-on",
        choices=[*CORPORA, "all"],
        default="timm",
        help="the corpora TorchFix and Fixit run on (default timm: on transformers each "
        "run takes about 10 minutes)",
    )
    parser.add_argument("--quick", action="store_true", help="1 repetition, timm only")
    parser.add_argument(
        "--peer-timeout", type=float, default=600.0, help="seconds per peer run (default 600)"
    )
    parser.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds per other run (default 1800)"
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="save the raw numbers")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeat, args.corpus = 1, "timm"
    if args.repeat < 1 or args.jobs < 1:
        parser.error("--repeat and --jobs must be at least 1")
    if args.timeout <= 0 or args.peer_timeout <= 0:
        parser.error("timeouts must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    python = project_python()
    devlint = detect_devlint()
    ruff = find_tool("ruff")
    names = list(CORPORA) if args.corpus == "all" else [args.corpus]
    peers = {} if args.no_peers else {name: ensure_peer(name, python) for name in PEERS}
    skipped_peers = "skipped (--no-peers)" if args.no_peers else "skipped (see --peers-on)"
    if args.no_peers:
        args.peers_on = "none"
    versions = {
        "devlint": version_of([devlint.executable, "--version"]),
        "libcst": f"libcst {libcst_version(python)}",
        "ruff": version_of([ruff, "--version"]) if ruff else "ruff unavailable",
    }
    for name, (script, reason) in peers.items():
        label = PEER_LABELS[name]
        if script is None:
            versions[name] = f"{label} unavailable: {reason}"
            continue
        venv_python = Path(script).parent / "python"
        version = version_of([script, "--version"]).rsplit(" ", 1)[-1]
        versions[name] = f"{label} {version} (libcst {libcst_version(venv_python)})"
    info = machine_info(args.jobs)
    print(f"machine: {info['cores']} cores ({info['cpu']}), {info['system']}, -j {args.jobs}")
    print("versions: " + "; ".join(versions.values()), flush=True)
    results: list[tuple[Corpus, list[Row]]] = []
    failed = []
    try:
        for name in names:
            try:
                corpus = prepare_corpus(name, python)
            except BenchError as error:
                print(f"\n== {name}: skipped: {error}", flush=True)
                failed.append(name)
                continue
            rows = build_rows(
                corpus,
                python=python,
                devlint=devlint,
                ruff=ruff,
                peers=peers if args.peers_on in (name, "all") else skipped_peers,
                jobs=args.jobs,
                timeout=args.timeout,
                peer_timeout=args.peer_timeout,
            )
            warm_up(rows, corpus)
            results.append((corpus, rows))
            run_rows(rows, corpus, args.repeat)
            corpus.torch_imports = torch_imports(devlint, corpus.small_file)
            print_corpus_report(corpus, rows, args.jobs, args.repeat)
            sys.stdout.flush()
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    finally:
        if args.json is not None and results:
            data = to_json(results, info, versions, args)
            args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
            print(f"\nraw numbers: {args.json}", file=sys.stderr)
    print_scaling(results)
    print_targets(results)
    return 1 if failed else 0


def run() -> int:
    """``main`` with expected failures as one line on stderr (exit code 2)."""
    try:
        return main()
    except BenchError as error:
        print(f"bench: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(run())
