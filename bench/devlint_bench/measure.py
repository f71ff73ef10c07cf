"""Measuring one process tree: wall and CPU time, peak memory, the rest of the machine's load."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from devlint_bench.common import REPO, BenchError

SAMPLE_INTERVAL = 0.1  # seconds between two samples of the tree's memory


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
