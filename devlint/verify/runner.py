"""Running the plan: batches of programs in child processes, in parallel, with timeouts.

Importing torch costs a second or more per process, so programs share processes: one
bootstrap process (``bootstrap.py``) per batch imports torch once, then

- on Linux (``fork`` isolation) runs each program in a ``fork()`` of itself: every program
  gets a pristine interpreter for the price of a fork, a crash or a timeout (enforced in
  the bootstrap) ends only that program;
- elsewhere (``inline`` isolation) runs the programs one after the other in itself, each
  isolated as far as an interpreter allows. Programs whose check involves warnings
  (``warns``, or a clean run that must not emit the rule's own warning) are then placed
  *first* in their process, so that torch's warn-once state is pristine for them.

Runs declared ``isolated = true`` always get a process of their own without torch
preloaded. The bootstrap reports each program's start and end on a side channel; when a
batch process crashes or hangs, the programs that did not finish run again, each in its
own process ("fallback").
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devlint.verify import devices
from devlint.verify.devices import ChildSetup, Column, DeviceSet, child_setup, columns_for
from devlint.verify.expectations import DEVICES, Outcome, RaisedException, mismatch
from devlint.verify.fixture_set import load_rules, shipped_fixture_root
from devlint.verify.plan import Plan, Run, plan_runs

BOOTSTRAP = Path(__file__).with_name("bootstrap.py")
# Imported once per batch process. torch._dynamo is what torch.optim imports lazily on the
# first optimizer (2.4 s on torch 2.13): preloaded, forked programs start warm.
PRELOAD = ("torch", "numpy", "torch._dynamo")
MAX_BATCH = 16  # inline isolation: programs per process at most, bounds what a crash costs
MIN_BATCH = 4  # programs per process at least, where there are that many
POLL_SECONDS = 0.05
STARTUP_SECONDS = 180.0  # importing torch on a loaded machine; not counted in a run's timeout
FORK_GRACE_SECONDS = 15.0  # with fork isolation the bootstrap enforces the timeout itself
OUTPUT_LIMIT = 200_000  # characters kept of a program's stdout / stderr (the end)


@dataclass(slots=True)
class RunResult:
    run: Run
    outcome: Outcome
    mismatch: str | None  # None: the declared outcome happened
    process: str  # "batch", "solo" or "fallback"

    @property
    def passed(self) -> bool:
        return self.mismatch is None


@dataclass(slots=True)
class ExecutionStats:
    batches: int = 0  # processes that ran several programs
    solo: int = 0  # processes planned for one program
    fallback: int = 0  # processes re-running a program of a crashed or hung batch
    seconds: float = 0.0  # wall time of the whole execution

    @property
    def processes(self) -> int:
        return self.batches + self.solo + self.fallback


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def default_isolation() -> str:
    """``fork`` where forking a process that imported torch is safe, else ``inline``."""
    return "fork" if sys.platform.startswith("linux") and hasattr(os, "fork") else "inline"


def make_batches(
    runs: Sequence[Run], jobs: int, isolation: str = "inline", max_batch: int = MAX_BATCH
) -> list[list[Run]]:
    """Group runs that can share a process (one column per process); longest first.

    Each column gets its share of ``jobs`` processes, at least one, and no process for
    fewer than ``MIN_BATCH`` programs: starting one costs as much as many programs.
    """
    batches: list[list[Run]] = []
    by_column: dict[str, list[Run]] = {}
    for run in runs:
        alone = run.isolated or (isolation == "inline" and run.column.virtual)
        if alone:
            batches.append([run])
        else:
            by_column.setdefault(run.column.name, []).append(run)
    total = sum(len(shared) for shared in by_column.values())
    for shared in by_column.values():
        fresh = [run for run in shared if run.fresh and isolation == "inline"]
        plain = [run for run in shared if run not in fresh]
        share = max(1, round(jobs * len(shared) / total))
        count = max(1, min(share, math.ceil(len(shared) / MIN_BATCH)))
        if isolation == "inline":
            # A crash re-runs the rest of its batch one by one: keep batches small.
            count = max(count, len(fresh), math.ceil(len(shared) / max_batch))
        groups: list[list[Run]] = [[run] for run in fresh]
        groups += [[] for _ in range(count - len(groups))]
        # Longest-processing-time first, with the file size as the estimate.
        for run in sorted(plain, key=_cost, reverse=True):
            min(groups, key=lambda group: sum(map(_cost, group))).append(run)
        batches.extend(group for group in groups if group)
    batches.sort(key=lambda group: sum(map(_cost, group)), reverse=True)
    return batches


def _cost(run: Run) -> int:
    try:
        return 2_000 + run.program.stat().st_size  # + a constant: any program costs something
    except OSError:
        return 2_000


class _LiveProcesses:
    """Children still running, to be killed if verify itself is interrupted."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen[bytes]] = set()

    def add(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.add(proc)

    def discard(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.discard(proc)

    def kill_all(self) -> None:
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            _kill(proc)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)  # the program's own children too
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


class Executor:
    """Runs a plan's runs on this machine."""

    def __init__(
        self,
        found: DeviceSet,
        *,
        jobs: int,
        timeout: float,
        workdir: Path,
        on_result: Callable[[RunResult], None] | None = None,
        isolation: str | None = None,
    ) -> None:
        self.found = found
        self.isolation = isolation or default_isolation()
        self.jobs = max(1, jobs)
        self.timeout = timeout
        self.workdir = workdir
        self.on_result = on_result
        self.live = _LiveProcesses()
        self.stats = ExecutionStats()
        self._serial = iter(range(1, 1_000_000_000))
        self._lock = threading.Lock()

    def execute(self, runs: Sequence[Run]) -> list[RunResult]:
        started = time.perf_counter()
        results: list[RunResult] = []
        batches = make_batches(runs, self.jobs, self.isolation)
        with ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="devlint-verify") as pool:
            pending: set[Future[tuple[list[RunResult], list[Run]]]] = set()
            for batch in batches:
                pending.add(
                    pool.submit(self._process, batch, "batch" if len(batch) > 1 else "solo")
                )
            try:
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        finished, leftovers = future.result()
                        for result in finished:
                            results.append(result)
                            if self.on_result is not None:
                                self.on_result(result)
                        for run in leftovers:
                            pending.add(pool.submit(self._process, [run], "fallback"))
            except BaseException:
                for future in pending:
                    future.cancel()
                self.live.kill_all()
                raise
        self.stats.seconds = time.perf_counter() - started
        order = {run.id: index for index, run in enumerate(runs)}
        return sorted(results, key=lambda result: order[result.run.id])

    # -- one process ----------------------------------------------------------------------

    def _process(self, batch: list[Run], mode: str) -> tuple[list[RunResult], list[Run]]:
        """Run ``batch`` in one bootstrap process: the results, and the runs to retry alone."""
        folder = self._new_folder(mode)
        setup = child_setup(batch[0].column, self.found, batch[0].mechanism)
        folder.mkdir(parents=True)
        events = folder / "events.jsonl"
        log = folder / "bootstrap.log"
        outputs = {run.id: (folder / f"{run.id}.out", folder / f"{run.id}.err") for run in batch}
        fork = self.isolation == "fork" and mode != "fallback" and not batch[0].isolated
        spec = self._spec(batch, folder, setup, fork, events, outputs)
        (folder / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        proc = _launch_bootstrap(folder, setup, log)
        self.live.add(proc)
        limit = self.timeout + (FORK_GRACE_SECONDS if fork else 0.0)
        try:
            records, hung = self._watch(proc, events, limit)
        finally:
            _kill(proc)
            self.live.discard(proc)
        return self._collect(batch, mode, records, hung, proc.returncode, outputs, log)

    def _new_folder(self, mode: str) -> Path:
        """Count the process in the stats, and name its own folder (not yet created)."""
        with self._lock:
            if mode == "batch":
                self.stats.batches += 1
            elif mode == "solo":
                self.stats.solo += 1
            else:
                self.stats.fallback += 1
            return self.workdir / f"p{next(self._serial)}"

    def _spec(
        self,
        batch: list[Run],
        folder: Path,
        setup: ChildSetup,
        fork: bool,
        events: Path,
        outputs: dict[str, tuple[Path, Path]],
    ) -> dict[str, Any]:
        """What the bootstrap reads (``spec.json``); creates each run's working directory."""
        return {
            "events": str(events),
            "fork": fork,
            "timeout": self.timeout,
            "preload": _preload(batch[0], setup),
            **setup.to_json(),
            "runs": [
                {
                    "id": run.id,
                    "program": str(run.program),
                    "directory": str(run.directory),
                    "cwd": str(_mkdir(folder / f"{run.id}.cwd")),
                    "stdout": str(outputs[run.id][0]),
                    "stderr": str(outputs[run.id][1]),
                    "result": str(folder / f"{run.id}.json"),
                }
                for run in batch
            ],
        }

    def _watch(
        self, proc: subprocess.Popen[bytes], events: Path, limit: float
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Follow the events until the process ends; kill it when a program hangs."""
        records: list[dict[str, Any]] = []
        reader = _EventReader(events)
        launched = time.monotonic()
        current: str | None = None
        since = launched
        ready = False
        while True:
            finished = proc.poll() is not None
            for record in reader.read():
                records.append(record)
                if record.get("event") == "ready":
                    ready = True
                elif record.get("event") == "start":
                    current, since = record["id"], time.monotonic()
                elif record.get("event") == "done":
                    current = None
            if finished:
                return records, None
            now = time.monotonic()
            if current is not None and now - since > limit:
                _kill(proc)
                return records, current
            if not ready and now - launched > max(self.timeout, STARTUP_SECONDS):
                _kill(proc)
                return records, None
            time.sleep(POLL_SECONDS)

    def _collect(
        self,
        batch: list[Run],
        mode: str,
        records: list[dict[str, Any]],
        hung: str | None,
        returncode: int | None,
        outputs: dict[str, tuple[Path, Path]],
        log: Path,
    ) -> tuple[list[RunResult], list[Run]]:
        done = {r["id"]: r["outcome"] for r in records if r.get("event") == "done"}
        started = [r["id"] for r in records if r.get("event") == "start"]
        results: list[RunResult] = []
        leftovers: list[Run] = []
        for run in batch:
            stdout, stderr = (_read_tail(path) for path in outputs[run.id])
            if run.id in done:
                outcome = _outcome(done[run.id], stdout, stderr)
            elif len(batch) > 1:
                leftovers.append(run)  # crashed, hung or never reached: again, alone
                continue
            elif run.id == hung:
                outcome = Outcome(
                    None, stdout=stdout, stderr=stderr, duration=self.timeout, timed_out=True
                )
            else:
                outcome = self._died(run.id in started, returncode, stdout, stderr, log)
            results.append(
                RunResult(
                    run,
                    outcome,
                    mismatch(run.expectation, outcome, run.forbidden_warnings, run.flagged_lines),
                    mode,
                )
            )
        return results, leftovers

    def _died(
        self, started: bool, returncode: int | None, stdout: str, stderr: str, log: Path
    ) -> Outcome:
        """The process ended without reporting the program's end."""
        bootstrap_output = _read_tail(log)
        if not started:
            text = "\n".join(filter(None, [stderr, bootstrap_output]))
            return Outcome(
                returncode,
                stderr=text,
                crash=f"the bootstrap failed before the program ({_status(returncode)})",
            )
        if returncode is not None and returncode >= 0:
            # the program ended the interpreter itself (os._exit): its status is the outcome
            return Outcome(returncode, stdout=stdout, stderr=stderr)
        return Outcome(returncode, stdout=stdout, stderr=stderr, crash=_status(returncode))


def _status(returncode: int | None) -> str:
    if returncode is None:
        return "killed"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown signal"
        return f"killed by signal {-returncode}, {name}"
    return f"exit status {returncode}"


class _EventReader:
    """Complete JSON lines appended to the side channel since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""

    def read(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except FileNotFoundError:
            return []
        self.offset += len(chunk)
        data = self.partial + chunk
        *lines, self.partial = data.split(b"\n")
        records = []
        for line in lines:
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
        return records


def _preload(first: Run, setup: ChildSetup) -> list[str]:
    """The modules a batch process imports before its programs."""
    needs_torch = setup.hide_mps or setup.virtual is not None
    preload = list(PRELOAD) if not first.isolated else []
    if needs_torch and "torch" not in preload:
        preload.insert(0, "torch")  # the patches need it
    return preload


def _launch_bootstrap(folder: Path, setup: ChildSetup, log: Path) -> subprocess.Popen[bytes]:
    """Start the bootstrap on ``folder``'s spec, its own output going to ``log``."""
    env = {
        **os.environ,
        **setup.env,
        "PYTHONDONTWRITEBYTECODE": "1",  # the fixture folder may be read-only (a wheel)
        "PYTHONIOENCODING": "utf-8",
        "PYTHONFAULTHANDLER": "1",  # a hard crash still leaves a Python traceback
    }
    with open(log, "wb") as log_file:
        return subprocess.Popen(
            [sys.executable, str(BOOTSTRAP), str(folder / "spec.json")],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=folder,
            env=env,
            start_new_session=os.name == "posix",
        )


def _mkdir(path: Path) -> Path:
    path.mkdir()
    return path


def _read_tail(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - OUTPUT_LIMIT))
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _outcome(data: dict[str, Any], stdout: str, stderr: str) -> Outcome:
    raised = data.get("exception")
    exception = None
    if raised:
        exception = RaisedException(
            tuple(raised["names"]),
            tuple(raised["qualnames"]),
            raised["message"],
            tuple(raised.get("lines", ())),
        )
    warnings = tuple(f"{w['category']}: {w['message']}" for w in data.get("warnings", ()))
    return Outcome(
        data.get("exit_code"),
        exception,
        warnings,
        stdout,
        stderr,
        float(data.get("duration", 0.0)),
        timed_out=bool(data.get("timed_out", False)),
        crash=data.get("crash"),
    )


# --- the whole verification ------------------------------------------------------------------


@dataclass(slots=True)
class VerifyOptions:
    devices: Sequence[str] = DEVICES
    rules: Sequence[str] = ()
    jobs: int | None = None
    timeout: float = 60.0
    fixtures: Path | None = None  # default: the tree shipped with devlint
    isolation: str | None = None  # "fork" or "inline"; default: fork on Linux


@dataclass(slots=True)
class VerifyReport:
    found: DeviceSet
    root: Path
    plan: Plan
    results: list[RunResult] = field(default_factory=list)
    stats: ExecutionStats = field(default_factory=ExecutionStats)
    seconds: float = 0.0  # the whole verification, device detection included

    @property
    def columns(self) -> list[Column]:
        return self.plan.columns

    @property
    def failures(self) -> list[RunResult]:
        return [result for result in self.results if not result.passed]

    @property
    def exit_code(self) -> int:
        return 1 if self.failures or self.plan.problems else 0


def run_verify(
    options: VerifyOptions,
    on_result: Callable[[RunResult], None] | None = None,
    on_plan: Callable[[Plan], None] | None = None,
) -> VerifyReport:
    """Detect devices, find the fixtures, run them. Raises ``TorchMissing``, ``FixtureError``."""
    started = time.perf_counter()
    found = devices.detect_devices()  # looked up at call time: tests fake it
    with ExitStack() as stack:
        root = options.fixtures or shipped_fixture_root(stack)
        rules = load_rules(root, options.rules)
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="devlint-verify-")))
        plan = plan_runs(rules, columns_for(options.devices, found), workdir)
        if on_plan is not None:
            on_plan(plan)
        executor = Executor(
            found,
            jobs=options.jobs or default_jobs(),
            timeout=options.timeout,
            workdir=workdir,
            on_result=on_result,
            isolation=options.isolation,
        )
        results = executor.execute(plan.runs)
    return VerifyReport(found, root, plan, results, executor.stats, time.perf_counter() - started)
