"""The peer benchmark: devlint against its floor, its libcst peers and ruff, on real code.

Downloads the ``timm`` and ``transformers`` wheels (cached in ``bench/.cache/``), and
times, as whole processes and several times each: bare ``libcst.parse_module`` of every
file on the same number of processes (the floor), devlint cold and warm, devlint on one
file next to ``python -c "import libcst, click"``, TorchFix and Fixit (each in its own
throwaway virtualenv) and ruff with every rule. See ``bench/README.md``.

    python bench/run.py [--corpus timm|transformers|all] [--repeat N] [--jobs N]
                        [--no-peers] [--peers-on timm|transformers|all] [--quick]
                        [--peer-timeout S] [--timeout S] [--json FILE]

Layout: measuring one process tree (``measure``), setup (wheels, corpora, peer
virtualenvs), the rows of one corpus (``build_rows``, ``run_rows``), the report
(tables, scaling, targets) and ``main``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
CACHE = BENCH / ".cache"
WHEELS = CACHE / "wheels"
CORPORA_DIR = CACHE / "corpora"
VENVS = CACHE / "venvs"
DEVLINT_CACHE = CACHE / "devlint-cache"
PYCACHE = CACHE / "pycache"
FLOOR_SCRIPT = BENCH / "floor.py"

CORPORA = ("timm", "transformers")
# name -> (pip requirement, console script, arguments before the corpus, accepted exit codes)
PEERS: dict[str, tuple[str, str, tuple[str, ...], tuple[int, ...]]] = {
    "torchfix": ("torchfix", "torchfix", (), (0, 1)),
    "fixit": ("fixit", "fixit", ("lint",), (0, 1)),
}
PEER_LABELS = {"torchfix": "TorchFix", "fixit": "Fixit"}
SETUP_TIMEOUT = 900.0
SAMPLE_INTERVAL = 0.1
COMPLETE = ".bench-complete"
# The corpus directory is made its own project: `.git` stops the gitignore-aware tools
# (devlint, Fixit, ruff) from applying this repository's .gitignore, which ignores
# bench/.cache/ (Fixit then checks nothing at all); the two files stop the configuration
# search of devlint and Fixit from reaching this repository's pyproject.toml.
MARKERS = {
    "devlint.toml": "# bench: the corpus is its own project, with devlint's defaults\n",
    "fixit.toml": "# bench: the corpus is its own project, with Fixit's defaults\n"
    "[tool.fixit]\nroot = true\n",
}


class BenchError(Exception):
    """An expected failure: printed as one line, without a traceback."""


def shown(path: Path | str) -> str:
    """A path as printed and saved: relative to the repository when inside it."""
    text = str(path)
    root = str(REPO) + os.sep
    return text[len(root) :] if text.startswith(root) else text


def measured_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every measured command: as a user's, with bytecode caching on.

    A development shell may set PYTHONDONTWRITEBYTECODE, and an editable install has no
    ``.pyc`` files: every run would then compile devlint from source (about 40 ms, a
    quarter of the one-file case). The ``.pyc`` files go to ``bench/.cache/pycache``
    rather than into the source tree.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return {**env, **(extra or {})}


# --------------------------------------------------------------------------- measuring


@dataclass
class Measurement:
    wall: float  # seconds, from just before the fork to the reaping of the process
    cpu: float  # user + system seconds of the process and every child it reaped
    maxrss_mb: float  # ru_maxrss: the largest single process of the tree
    tree_mb: float | None  # sampled peak of the summed PSS of the whole process tree
    others: float | None  # CPU-s the rest of the machine used meanwhile (a noise gauge)
    rc: int
    out_lines: int  # lines the tool wrote to stdout (diagnostics, mostly)
    stderr_tail: str
    timed_out: bool

    def as_json(self) -> dict[str, Any]:
        return {
            "wall_s": round(self.wall, 4),
            "cpu_s": round(self.cpu, 4),
            "maxrss_mb": round(self.maxrss_mb, 1),
            "tree_pss_mb": None if self.tree_mb is None else round(self.tree_mb, 1),
            "others_cpu_s": None if self.others is None else round(self.others, 2),
            "exit_code": self.rc,
            "stdout_lines": self.out_lines,
        }


def _machine_busy() -> float | None:
    """CPU seconds the whole machine has been busy so far, all cores, including the
    time the hypervisor gave to other guests (steal); None where /proc/stat is missing."""
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            fields = handle.readline().split()
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[1:9])
        return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None


def _session_members(session: int) -> list[int]:
    """The processes whose session is ``session`` (the measured command's own tree)."""
    members: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return members
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 3 and fields[3] == str(session):
            members.append(int(entry))
    return members


def _memory_kb(pid: int) -> int:
    """PSS of one process (its fair share of pages shared with its siblings), else RSS."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except (OSError, ValueError, IndexError):
        return 0


class TreeSampler(threading.Thread):
    """Samples the summed memory of a process tree (one session) until stopped."""

    def __init__(self, session: int) -> None:
        super().__init__(name="tree-sampler", daemon=True)
        self.session = session
        self.peak_kb: int | None = None
        self._halt = threading.Event()

    def run(self) -> None:
        if not os.path.isdir("/proc"):
            return
        while not self._halt.wait(SAMPLE_INTERVAL):
            total = sum(_memory_kb(pid) for pid in _session_members(self.session))
            if total:
                self.peak_kb = max(self.peak_kb or 0, total)

    def stop(self) -> None:
        self._halt.set()
        self.join()


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _count_lines(handle: Any) -> int:
    handle.seek(0)
    count = 0
    last = b"\n"
    while chunk := handle.read(1 << 20):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (last != b"\n")


def _tail(handle: Any, lines: int = 6) -> str:
    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    handle.seek(max(0, size - 8192))
    text = handle.read().decode("utf-8", "replace")
    kept = [line for line in text.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def measure(command: Sequence[str], *, timeout: float, env: dict[str, str]) -> Measurement:
    """Run ``command`` once as a whole process (its own session) and measure it."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        busy_before = _machine_busy()
        start = time.perf_counter()
        try:
            process = subprocess.Popen(
                list(command),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                cwd=REPO,
                start_new_session=True,
            )
        except OSError as error:
            raise BenchError(f"cannot start {command[0]}: {error.strerror}") from None
        timed_out = threading.Event()

        def on_timeout() -> None:
            timed_out.set()
            _kill_group(process.pid)

        timer = threading.Timer(timeout, on_timeout)
        timer.daemon = True
        sampler = TreeSampler(process.pid)
        timer.start()
        sampler.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        except BaseException:  # Ctrl-C: take the measured tree down with us
            _kill_group(process.pid)
            process.wait()
            raise
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
        busy_after = _machine_busy()
        sampler.stop()
        _kill_group(process.pid)  # anything the tool left behind in its session
        process.returncode = os.waitstatus_to_exitcode(status)
        tree_kb = sampler.peak_kb
        cpu = usage.ru_utime + usage.ru_stime
        others = None
        if busy_before is not None and busy_after is not None:
            others = max(0.0, busy_after - busy_before - cpu)
        return Measurement(
            wall=wall,
            cpu=cpu,
            maxrss_mb=usage.ru_maxrss / 1024,  # kilobytes on Linux
            tree_mb=None if tree_kb is None else tree_kb / 1024,
            others=others,
            rc=process.returncode,
            out_lines=_count_lines(out),
            stderr_tail=_tail(err),
            timed_out=timed_out.is_set(),
        )


# ------------------------------------------------------------------------------ setup


def _run_quiet(command: Sequence[str], timeout: float = SETUP_TIMEOUT) -> tuple[int, str]:
    """Run a setup command; returns its exit code and its stdout and stderr together."""
    try:
        done = subprocess.run(
            list(command),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout:.0f} s"
    except OSError as error:
        return 127, f"cannot start {command[0]}: {error.strerror}"
    return done.returncode, done.stdout + done.stderr


def _reason(output: str) -> str:
    """The most telling line of a failed command's output."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    lines = [line for line in lines if "is ignored: it is neither a file" not in line]
    for line in reversed(lines):
        if line.startswith("ERROR"):
            return line
    return lines[-1] if lines else "no output"


def _version(command: Sequence[str]) -> str:
    code, output = _run_quiet(command, timeout=120)
    return output.strip().splitlines()[0] if code == 0 and output.strip() else "?"


def _libcst_version(python: Path | str) -> str:
    code = "import importlib.metadata as m; print(m.version('libcst'))"
    return _version([str(python), "-c", code])


def project_python() -> str:
    candidate = REPO / ".venv" / "bin" / "python"
    python = str(candidate) if candidate.exists() else sys.executable
    code, output = _run_quiet([python, "-c", "import libcst, click"], timeout=120)
    if code != 0:
        raise BenchError(f"{python} cannot import libcst and click: {_reason(output)}")
    return python


def find_tool(name: str) -> str | None:
    candidate = REPO / ".venv" / "bin" / name
    if candidate.exists():
        return str(candidate)
    return shutil.which(name)


@dataclass(frozen=True)
class DevlintCli:
    executable: str
    subcommand: bool  # `devlint check ...` rather than `devlint ...`
    options: frozenset[str]

    def has(self, option: str) -> bool:
        return option in self.options

    def command(self, *args: str) -> list[str]:
        return [self.executable, *(["check"] if self.subcommand else []), *args]


def detect_devlint() -> DevlintCli:
    executable = find_tool("devlint")
    if executable is None:
        raise BenchError("devlint not found: run `pip install -e .` in .venv (or put it on PATH)")
    code, output = _run_quiet([executable, "check", "--help"], timeout=120)
    subcommand = code == 0
    if not subcommand:
        code, output = _run_quiet([executable, "--help"], timeout=120)
        if code != 0:
            raise BenchError(f"`devlint --help` failed: {_reason(output)}")
    wanted = ("--no-cache", "--cache-dir", "--jobs", "--exit-zero", "--quiet")
    found = {opt for opt in wanted if re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", output)}
    return DevlintCli(executable, subcommand, frozenset(found))


def _cached_wheel(package: str) -> Path | None:
    pattern = re.compile(rf"{re.escape(package)}-\d[^-]*-.*\.whl", re.IGNORECASE)
    wheels = [path for path in WHEELS.glob("*.whl") if pattern.fullmatch(path.name)]
    return max(wheels, key=lambda path: path.stat().st_mtime) if wheels else None


def fetch_wheel(package: str, python: str) -> Path:
    """The package's wheel, downloaded once with `pip download --no-deps`."""
    cached = _cached_wheel(package)
    if cached is not None:
        return cached
    WHEELS.mkdir(parents=True, exist_ok=True)
    print(f"downloading the {package} wheel ...", file=sys.stderr, flush=True)
    command = [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    command += ["--disable-pip-version-check", "--dest", str(WHEELS), package]
    code, output = _run_quiet(command)
    wheel = _cached_wheel(package)
    if code != 0 or wheel is None:
        raise BenchError(f"cannot download the {package} wheel: {_reason(output)}")
    return wheel


def extract_corpus(wheel: Path) -> Path:
    """The wheel's .py files (not its .dist-info), unzipped once."""
    target = CORPORA_DIR / wheel.name.removesuffix(".whl")
    if (target / COMPLETE).exists():
        return target
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(target, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                name = PurePosixPath(info.filename)
                if (
                    info.is_dir()
                    or name.suffix != ".py"
                    or name.is_absolute()
                    or ".." in name.parts
                    or name.parts[0].endswith(".dist-info")
                ):
                    continue
                destination = partial.joinpath(*name.parts)
                destination.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as source, open(destination, "wb") as sink:
                    shutil.copyfileobj(source, sink)
    except (zipfile.BadZipFile, OSError) as error:
        shutil.rmtree(partial, ignore_errors=True)
        raise BenchError(f"cannot unzip {wheel.name}: {error} (delete it and rerun)") from None
    (partial / ".git").mkdir()
    for marker, text in MARKERS.items():
        (partial / marker).write_text(text, encoding="utf-8")
    (partial / COMPLETE).write_text(wheel.name + "\n", encoding="utf-8")
    partial.rename(target)
    return target


@dataclass
class Corpus:
    name: str
    wheel: Path
    path: Path
    files: int
    lines: int
    small_file: Path
    small_file_lines: int
    torch_imports: str = "not checked"  # what `devlint check small_file` imports of torch


def prepare_corpus(name: str, python: str) -> Corpus:
    wheel = fetch_wheel(name, python)
    path = extract_corpus(wheel)
    sizes: list[tuple[int, str]] = []
    for directory, subdirs, files in os.walk(path):
        subdirs[:] = sorted(d for d in subdirs if d != ".git")
        for file in sorted(files):
            if file.endswith(".py"):
                full = os.path.join(directory, file)
                with open(full, "rb") as handle:
                    data = handle.read()
                unterminated = bool(data) and not data.endswith(b"\n")
                sizes.append((data.count(b"\n") + unterminated, full))
    if not sizes:
        raise BenchError(f"{wheel.name} holds no .py files")
    by_size = sorted(sizes)
    small_lines, small = by_size[len(by_size) // 2]  # a typical file: the median size
    return Corpus(
        name=name,
        wheel=wheel,
        path=path,
        files=len(sizes),
        lines=sum(size for size, _ in sizes),
        small_file=Path(small),
        small_file_lines=small_lines,
    )


def ensure_peer(name: str, python: str) -> tuple[str | None, str]:
    """(console script, "") for a peer installed in its own virtualenv, else (None, reason)."""
    requirement, script, _, _ = PEERS[name]
    venv = VENVS / name
    executable = venv / "bin" / script
    stamp = venv / COMPLETE
    if stamp.exists() and executable.exists():
        return str(executable), ""
    shutil.rmtree(venv, ignore_errors=True)
    VENVS.mkdir(parents=True, exist_ok=True)
    print(f"installing {requirement} into {shown(venv)} ...", file=sys.stderr, flush=True)
    code, output = _run_quiet([python, "-m", "venv", str(venv)])
    if code != 0:
        return None, f"cannot create a virtualenv: {_reason(output)}"
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check"]
    code, output = _run_quiet([*pip, "-q", requirement])
    if code != 0 or not executable.exists():
        return None, f"pip install {requirement} failed: {_reason(output)}"
    stamp.write_text(requirement + "\n", encoding="utf-8")
    return str(executable), ""


# ------------------------------------------------------------------------------- rows


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


# ---------------------------------------------------------------------------- report


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


def torch_imports(devlint: DevlintCli, file: Path) -> str:
    """The torch modules ``devlint check FILE`` imports ("none"), from Python's own
    import log (PYTHONPROFILEIMPORTTIME)."""
    command = devlint.command("--no-cache", "--jobs", "1", "--exit-zero", str(file))
    env = measured_env({"PYTHONPROFILEIMPORTTIME": "1"})
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"unknown ({error})"
    modules = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()]
    found = sorted({m for m in modules if m == "torch" or m.startswith("torch.")})
    if "import time:" not in done.stderr:
        return "unknown (no import log)"
    return ", ".join(found[:5]) + (" ..." if len(found) > 5 else "") if found else "none"


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


# ------------------------------------------------------------------------------- main


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
        "devlint": _version([devlint.executable, "--version"]),
        "libcst": f"libcst {_libcst_version(python)}",
        "ruff": _version([ruff, "--version"]) if ruff else "ruff unavailable",
    }
    for name, (script, reason) in peers.items():
        label = PEER_LABELS[name]
        if script is None:
            versions[name] = f"{label} unavailable: {reason}"
            continue
        venv_python = Path(script).parent / "python"
        version = _version([script, "--version"]).rsplit(" ", 1)[-1]
        versions[name] = f"{label} {version} (libcst {_libcst_version(venv_python)})"
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


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as error:
        print(f"bench: {error}", file=sys.stderr)
        sys.exit(2)
