"""Start-up: `devlint --version`, `--help` and a one-file check, next to their floor.

Every row is a whole process, timed as `bench/run.py` times its rows (wall from the fork
to the reaping, CPU of the process tree); the rows run round-robin, so that a slow spell
of a shared machine hits them all. The floor is `python -c "import libcst, click"`, what
any devlint run that checks code imports first; `python -c pass` is the interpreter alone.

    python bench/startup.py [--repeat N] [--python PY] [--source DIR]
                            [--compare PY] [--compare-source DIR] [--json FILE]

devlint runs as its console script: the one beside ``--python`` (what a user runs), or,
with ``--source DIR``, a script written as pip writes it, calling the entry point that
DIR/pyproject.toml names, with DIR on PYTHONPATH (a checkout whose script is not
installed: a worktree, or ``git archive`` of the commit before a change). `--compare PY`
or `--compare-source DIR` adds the same devlint rows run by another interpreter or from
another source tree, measured in the same rounds: before/after figures from one run. See
bench/README.md ("Start-up").
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from devlint_bench.common import BenchError, measured_env  # bench/ is on sys.path
from devlint_bench.measure import Measurement, measure

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

# The one-file case: a project with its configuration and torch requirement (what a
# pre-commit run in a user's repository reads), and one training script with two bugs.
PYPROJECT = '[project]\nname = "demo"\ndependencies = ["torch>=2.4"]\n\n[tool.devlint]\n'
SCRIPT = """\
import torch
from torch import nn

model = nn.Linear(8, 2).cuda()
for step in range(10):
    x = torch.randn(4, 8).cuda()
    loss = model(x).sum()
    loss.backward()
print(model(x).detach().numpy())
"""
FLOOR = "import libcst, click"
TARGETS = {  # row key -> (what the target says, limit, unit: "ms" or "x floor")
    "version": ("under 100 ms wall", 100.0, "ms"),
    "help": ("under 100 ms wall", 100.0, "ms"),
    "file": ("within 1.3x the floor, wall and CPU", 1.3, "x floor"),
}


@dataclass
class Row:
    key: str
    label: str
    command: list[str]
    env: dict[str, str] | None = None  # added to the measured environment
    runs: list[Measurement] = field(default_factory=list)

    def wall_ms(self, best: bool = False) -> float:
        walls = [run.wall * 1000 for run in self.runs]
        return min(walls) if best else statistics.median(walls)

    def cpu_ms(self, best: bool = False) -> float:
        cpus = [run.cpu * 1000 for run in self.runs]
        return min(cpus) if best else statistics.median(cpus)


def devlint_command(python: str) -> list[str]:
    """The console script beside ``python`` (what a user runs), else ``python -P -m devlint``
    (-P: never the devlint of the current directory, this checkout, for another python)."""
    script = Path(python).with_name("devlint")
    return [str(script)] if script.is_file() else [python, "-P", "-m", "devlint"]


def source_script(python: str, source: Path, where: Path) -> tuple[list[str], dict[str, str]]:
    """The console script of the source tree ``source`` as pip writes it (its entry point
    from its pyproject.toml), saved as ``where/devlint`` (the name the script has, which
    click shows), run by ``python`` with ``source`` on PYTHONPATH."""
    project = tomllib.loads((source / "pyproject.toml").read_text(encoding="utf-8"))
    module, function = project["project"]["scripts"]["devlint"].split(":")
    where.mkdir(parents=True)
    script = where / "devlint"
    script.write_text(
        f"import sys\nfrom {module} import {function}\nif __name__ == '__main__':\n"
        f"    sys.argv[0] = sys.argv[0].removesuffix('.exe')\n    sys.exit({function}())\n"
    )
    return [python, str(script)], {"PYTHONPATH": str(source.resolve())}


def rows_for(
    devlint: list[str], env: dict[str, str] | None, file: Path, tag: str = ""
) -> list[Row]:
    suffix = f" [{tag}]" if tag else ""
    return [
        Row(f"version{tag}", f"devlint --version{suffix}", [*devlint, "--version"], env),
        Row(f"help{tag}", f"devlint --help{suffix}", [*devlint, "--help"], env),
        Row(
            f"file{tag}",
            f"devlint check --no-cache FILE{suffix}",
            [*devlint, "check", "--no-cache", "--exit-zero", "--quiet", str(file)],
            env,
        ),
        Row(
            f"cached{tag}",
            f"devlint check FILE (cached){suffix}",
            [*devlint, "check", "--exit-zero", "--quiet", str(file)],
            env,
        ),
    ]


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="rounds (default 15)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter measured")
    parser.add_argument("--source", type=Path, help="run devlint from this source tree")
    parser.add_argument("--compare", metavar="PY", help="another interpreter's devlint too")
    parser.add_argument("--compare-source", type=Path, help="another source tree's too")
    parser.add_argument("--json", type=Path, help="save every run's numbers")
    options = parser.parse_args(argv)
    env = measured_env()
    with tempfile.TemporaryDirectory() as project:
        (Path(project) / "pyproject.toml").write_text(PYPROJECT)
        file = Path(project) / "train.py"
        file.write_text(SCRIPT)
        rows = [
            Row("pass", "python -c pass", [options.python, "-c", "pass"]),
            Row("floor", f"python -c '{FLOOR}'", [options.python, "-c", FLOOR]),
        ]
        scripts = Path(project) / "scripts"
        if options.source:
            rows += rows_for(*source_script(options.python, options.source, scripts / "a"), file)
        else:
            rows += rows_for(devlint_command(options.python), None, file)
        if options.compare_source:
            before = source_script(options.python, options.compare_source, scripts / "b")
            rows += rows_for(*before, file, "compare")
        elif options.compare:
            rows += rows_for(devlint_command(options.compare), None, file, "compare")
        for row in rows:  # untimed: .pyc files written, OS caches warm, the cache filled
            first = measure(row.command, timeout=120, env={**env, **(row.env or {})})
            if first.rc != 0:
                raise BenchError(f"{row.label} failed: {first.stderr_tail}")
        for _ in range(options.repeat):
            for row in rows:
                row.runs.append(measure(row.command, timeout=120, env={**env, **(row.env or {})}))
    report(rows, options)
    if options.json:
        data = {row.key: [m.as_json() for m in row.runs] for row in rows}
        options.json.write_text(json.dumps(data, indent=1) + "\n")
    return 0


def report(rows: list[Row], options: argparse.Namespace) -> None:
    """One line per row: best and median wall and CPU, and both as multiples of the
    floor's (best over best, median over median). On a shared machine the best runs are
    the ones least disturbed: the targets are read on them, the medians shown beside."""
    floor = next(row for row in rows if row.key == "floor")
    print(f"start-up, {options.repeat} rounds; python {sys.version.split()[0]}; ms")
    print(f"{'row':<42} {'wall best':>9} {'med':>6} {'CPU best':>9} {'med':>6}"
          f" {'x floor wall best/med':>22} {'x floor CPU best/med':>21}")  # fmt: skip
    for row in rows:
        wall = row.wall_ms(best=True) / floor.wall_ms(best=True), row.wall_ms() / floor.wall_ms()
        cpu = row.cpu_ms(best=True) / floor.cpu_ms(best=True), row.cpu_ms() / floor.cpu_ms()
        print(
            f"{row.label:<42} {row.wall_ms(best=True):>9.0f} {row.wall_ms():>6.0f}"
            f" {row.cpu_ms(best=True):>9.0f} {row.cpu_ms():>6.0f}"
            f" {wall[0]:>15.2f}x/{wall[1]:.2f}x {cpu[0]:>14.2f}x/{cpu[1]:.2f}x"
        )
    print("targets (best runs):")
    for row in rows:
        base = row.key.removesuffix("compare")
        if base not in TARGETS:
            continue
        text, limit, unit = TARGETS[base]
        if unit == "ms":
            figure = f"{row.wall_ms(best=True):.0f} ms"
            met = row.wall_ms(best=True) < limit
        else:
            wall = row.wall_ms(best=True) / floor.wall_ms(best=True)
            cpu = row.cpu_ms(best=True) / floor.cpu_ms(best=True)
            figure = f"{wall:.2f}x wall, {cpu:.2f}x CPU"
            met = wall <= limit and cpu <= limit
        print(f"  {'met    ' if met else 'NOT met'} {row.label}: {text}: {figure}")


if __name__ == "__main__":
    try:
        sys.exit(run())
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(1)
