"""The runnable corpus (``tests/data/runnable/``): its manifest, its variants and a fork server.

Each program of the corpus is a public training or inference script (or one written in
the shape of one), cut down to run in a few seconds on a CPU. ``MANIFEST.toml`` says where
each file comes from, the steps that run a program (script, argv, environment) and which
variants are expected to run on a machine without CUDA:

- ``original``: the files as they are (``ok``, or ``cuda-only`` where the program needs CUDA
  and devlint reports that use);
- ``fixed``: after ``devlint --fix`` on a copy;
- ``unsafe``: after ``devlint --fix --unsafe-fixes`` on a copy.

Importing torch costs seconds of CPU, more than most programs' runs: ``ForkServer`` is a
process that imports torch once and forks a child per run, which ``runpy``-runs the script
with its argv, working directory and environment (forking after importing torch, before
any computation, is safe on the CPU). ``tests/test_runnable_corpus.py`` and
``scripts/run_corpus.py`` both use this module; it imports neither torch nor devlint
itself, except in the server.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CORPUS = Path(__file__).resolve().parent / "data" / "runnable"
MANIFEST = CORPUS / "MANIFEST.toml"
VARIANTS = ("original", "fixed", "unsafe")
FIX_OPTIONS = {"original": (), "fixed": ("--fix",), "unsafe": ("--fix", "--unsafe-fixes")}
OUTCOMES = ("ok", "cuda-only", "gap")
# Rules whose diagnostics say "this code needs CUDA": an original may fail on the CPU only
# where devlint reports one of them (the rules ``devlint run`` names for "Torch not compiled
# with CUDA enabled" and for a CUDA checkpoint loaded without CUDA).
CUDA_USE_RULES = frozenset({"DEV003", "DEV007", "DEV011", "DEV016", "DEV017"})
# What a program that needs CUDA raises on a CPU-only build of torch.
CUDA_ABSENT = re.compile(
    r"Torch not compiled with CUDA enabled|CUDA is not available|[Nn]o CUDA GPUs|"
    r"torch\.cuda\.\w+ requires CUDA|deserialize object on a CUDA device|"
    r"Invalid device|NCCL|nccl|Cannot access accelerator device when none is available|"
    r"has no attribute '_cuda_",
)
STEP_TIMEOUT = 180.0  # seconds; a step takes a few seconds (more on a loaded machine)


@dataclass(frozen=True)
class Step:
    script: str  # relative to the program's folder; the step runs in that folder
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # "{free_port}" in a value: a free TCP port


@dataclass(frozen=True)
class Program:
    name: str
    folder: str
    description: str
    steps: tuple[Step, ...]
    expect: dict[str, str]  # variant -> "ok" | "cuda-only" | "gap"
    devlint_args: tuple[str, ...] = ()  # extra options for every devlint run (rule selection)
    files: tuple[str, ...] = (".",)  # what devlint checks and fixes: the program's own files
    notes: str = ""

    def __str__(self) -> str:
        return self.name


def load_manifest() -> dict[str, Any]:
    with MANIFEST.open("rb") as file:
        return tomllib.load(file)


def load_programs() -> list[Program]:
    programs = []
    for entry in load_manifest()["program"]:
        steps = tuple(
            Step(
                step["script"],
                tuple(step.get("args", ())),
                tuple(sorted(step.get("env", {}).items())),
            )
            for step in entry["steps"]
        )
        programs.append(
            Program(
                name=entry["name"],
                folder=entry["folder"],
                description=entry["description"],
                steps=steps,
                expect={variant: entry["expect"][variant] for variant in VARIANTS},
                devlint_args=tuple(entry.get("devlint_args", ())),
                files=tuple(entry.get("files", (".",))),
                notes=entry.get("notes", ""),
            )
        )
    return programs


def corpus_files(folder: str) -> list[str]:
    """The files of a program folder, relative to the corpus (caches left out)."""
    root = CORPUS / folder
    return sorted(
        path.relative_to(CORPUS).as_posix()
        for path in root.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    )


def copy_program(program: Program, destination: Path) -> Path:
    """A fresh copy of the program's folder at ``destination / folder``."""
    work = destination / program.folder
    shutil.copytree(
        CORPUS / program.folder, work, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    return work


# --- devlint ----------------------------------------------------------------------------

Devlint = Callable[..., "subprocess.CompletedProcess[str]"]  # (*args, cwd=Path)


def snapshot(work: Path) -> dict[str, bytes]:
    """Every .py and .ipynb file under ``work``: relative path -> bytes."""
    return {
        path.relative_to(work).as_posix(): path.read_bytes()
        for path in sorted(work.rglob("*"))
        if path.suffix in (".py", ".ipynb") and "__pycache__" not in path.parts
    }


def unified_diff(before: dict[str, bytes], after: dict[str, bytes]) -> str:
    """The change between two snapshots, as ``devlint --diff`` prints it (a/ and b/ paths)."""
    import difflib

    chunks = []
    for name in sorted(set(before) | set(after)):
        old = before.get(name, b"").decode("utf-8", "replace").splitlines(keepends=True)
        new = after.get(name, b"").decode("utf-8", "replace").splitlines(keepends=True)
        if old != new:
            chunks.extend(difflib.unified_diff(old, new, name, name))
    return "".join(line if line.endswith("\n") else line + "\n" for line in chunks)


def unparsable(work: Path) -> list[str]:
    """Files under ``work`` that no longer parse: ``path: SyntaxError`` lines (notebooks by
    code cell; cells whose lines start with IPython syntax are left to devlint's tests)."""
    problems = []
    for name, data in snapshot(work).items():
        sources = [data.decode("utf-8")]
        if name.endswith(".ipynb"):
            cells = json.loads(data)["cells"]
            sources = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
            sources = [s for s in sources if not re.search(r"^\s*[%!]", s, re.M)]
        for source in sources:
            try:
                ast.parse(source, name)
            except SyntaxError as error:
                problems.append(f"{name}: {error}")
    return problems


@dataclass
class FixResult:
    before: dict[str, bytes]
    after: dict[str, bytes]
    output: str  # what the fix printed
    diff: str = field(init=False)

    def __post_init__(self) -> None:
        self.diff = unified_diff(self.before, self.after)


def fix_copy(program: Program, variant: str, work: Path, devlint: Devlint) -> FixResult:
    """Apply the variant's fixes to the copy ``work`` (nothing for ``original``)."""
    before = snapshot(work)
    if variant == "original":
        return FixResult(before, before, "")
    options = (*FIX_OPTIONS[variant], "--no-cache", *program.devlint_args)
    result = devlint(*options, *program.files, cwd=work)
    if result.returncode not in (0, 1):
        raise RuntimeError(f"devlint {' '.join(FIX_OPTIONS[variant])} failed: {result.stderr}")
    return FixResult(before, snapshot(work), result.stdout + result.stderr)


def diagnostics(program: Program, work: Path, devlint: Devlint) -> list[dict[str, Any]]:
    """What ``devlint check`` reports on ``work`` (JSON objects; paths relative to it)."""
    options = ("check", "--no-cache", "--output-format", "json", *program.devlint_args)
    result = devlint(*options, *program.files, cwd=work)
    if result.returncode not in (0, 1):
        raise RuntimeError(f"devlint check failed: {result.stderr}")
    found = json.loads(result.stdout)
    for diagnostic in found:
        diagnostic["filename"] = _relative(diagnostic["filename"], work)
    return found


def cuda_use(program: Program, work: Path, devlint: Devlint) -> list[str]:
    """The diagnostics of ``CUDA_USE_RULES`` on ``work``: ``file:row: CODE message`` lines."""
    return [
        f"{d['filename']}:{d['location']['row']}: {d['code']} {d['message']}"
        for d in diagnostics(program, work, devlint)
        if d["code"] in CUDA_USE_RULES
    ]


# --- running ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    ok: bool
    step: str  # the script of the step that failed (the last one when all ran)
    error: str  # "Type: first line of the message" ("" when ok)
    where: str  # "file:line" of the innermost frame in the program's files, or ""
    log: str  # the tail of the step's stdout and stderr
    seconds: float

    def summary(self) -> str:
        if self.ok:
            return "ok"
        return f"{self.step}: {self.error}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def step_env(step: Step) -> dict[str, str]:
    port = str(free_port())
    return {key: value.replace("{free_port}", port) for key, value in step.env}


def notebook_as_script(notebook: Path) -> Path:
    """The notebook's code cells, in order, as one script next to it (``NAME_ipynb.py``).

    nbconvert is not a dependency of the project: this is the tiny runner (no IPython: a
    line of IPython syntax would fail here, as a cell with it fails outside Jupyter)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    parts = [
        f"# cell {index}\n" + "".join(cell["source"]) + "\n"
        for index, cell in enumerate(cells, start=1)
        if cell["cell_type"] == "code"
    ]
    script = notebook.with_name(notebook.stem + "_ipynb.py")
    script.write_text("".join(parts), encoding="utf-8")
    return script


def runnable_script(work: Path, step: Step) -> Path:
    script = work / step.script
    return notebook_as_script(script) if script.suffix == ".ipynb" else script


class ForkServer:
    """A process that imports torch once, then forks a child per run (see the module doc).

    ``mode`` of a run: ``"python"`` runs the script as ``python script args`` would;
    ``"virtual:cuda"`` / ``"virtual:mps"`` run it as ``devlint run --device cuda|mps``.
    Runs see no CUDA device, also on a machine that has one.

    The server listens on a Unix socket recorded in ``directory`` and serves clients in
    parallel, so that the test workers of one pytest session share it (one torch import,
    not one per worker): the first client starts it under a file lock, without waiting for
    it, the others find it there, every run waits until it answers, and a client that
    finds it gone starts another. It ends when the process that started it ends (or on
    ``close()`` by that process) and then removes ``directory``.
    """

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._record = directory / "server.json"
        self._process: subprocess.Popen[bytes] | None = None
        self._socket = ""
        self._pid = 0
        self.start()

    def start(self) -> None:
        """Start the server unless a live one is recorded; return at once."""
        import fcntl

        self._directory.mkdir(parents=True, exist_ok=True)
        with (self._directory / "server.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            if self._record.exists():
                record = json.loads(self._record.read_text())
                self._socket, self._pid = record["socket"], record["pid"]
                if _alive(self._pid):
                    return
            # A short path: a Unix socket's name has ~100 bytes at most.
            self._socket = os.path.join(tempfile.mkdtemp(prefix="corpus-"), "server.sock")
            env = dict(os.environ)
            # One thread per run: tests run programs in parallel workers, and tiny models
            # gain nothing from threads (oversubscribed, steps ran 10x slower).
            env.setdefault("OMP_NUM_THREADS", "1")
            env["CUDA_VISIBLE_DEVICES"] = ""  # the CPU, also on a machine with a GPU
            with (self._directory / "server.log").open("ab") as log:
                self._process = subprocess.Popen(
                    [sys.executable, "-u", __file__, "--serve", self._socket, str(self._directory)],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    env=env,
                )
            self._pid = self._process.pid
            self._record.write_text(json.dumps({"socket": self._socket, "pid": self._pid}))

    def _wait(self) -> None:
        deadline = time.monotonic() + 300  # torch's import, on a busy machine
        while not self._answers():
            if not _alive(self._pid):
                self.start()  # it died (or ended with its starter): another one
            elif time.monotonic() > deadline:
                log = self._directory / "server.log"
                raise RuntimeError(f"the fork server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.05)

    def _answers(self) -> bool:
        try:
            with socket.socket(socket.AF_UNIX) as client:
                client.connect(self._socket)
            return True
        except OSError:
            return False

    def run(
        self, work: Path, step: Step, mode: str = "python", timeout: float = STEP_TIMEOUT
    ) -> Outcome:
        script = runnable_script(work, step)
        log = Path(tempfile.mkstemp(prefix="corpus-run-", suffix=".log")[1])
        request = {
            "script": str(script),
            "args": list(step.args),
            "cwd": str(work),
            "env": step_env(step),
            "mode": mode,
            "log": str(log),
            "timeout": timeout,
        }
        reply = self._served(request)
        if reply.get("timed_out"):
            # One more try, on a fresh port: a forked child has been seen (1 run in 7) to
            # hang in gloo's destroy_process_group after its last line; a real hang repeats.
            reply = self._served({**request, "env": step_env(step)})
        text = log.read_text(encoding="utf-8", errors="replace")
        log.unlink()
        return _outcome(step, mode, reply, text, work)

    def _served(self, request: dict[str, Any]) -> dict[str, Any]:
        self._wait()
        try:
            return self._ask(request)
        except OSError:  # the server went away (its starter ended): start one again
            self._wait()
            return self._ask(request)

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(self._socket)
            client.sendall(json.dumps(request).encode() + b"\n")
            with client.makefile("rb") as answer:
                line = answer.readline()
        if not line:
            raise RuntimeError("the fork server answered nothing")
        return json.loads(line)

    def close(self) -> None:
        """End the server if this object started it (it removes its directory)."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            shutil.rmtree(self._directory, ignore_errors=True)

    def __enter__(self) -> ForkServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(ChildProcessError):  # our own child: reap it if it ended
        if os.waitpid(pid, os.WNOHANG)[0]:
            return False
    return True


def run_subprocess(
    work: Path, step: Step, env: dict[str, str] | None = None, timeout: float = STEP_TIMEOUT
) -> Outcome:
    """``python script args`` in its own process (``--real-cuda``: real devices, no fork)."""
    script = runnable_script(work, step)
    started = time.perf_counter()
    environment = {**os.environ, **(env or {}), **step_env(step)}
    try:
        done = subprocess.run(
            [sys.executable, str(script), *step.args],
            cwd=work,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        rc, text = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as expired:
        rc, text = -signal.SIGKILL, f"{expired.stdout or ''}{expired.stderr or ''}"
    seconds = time.perf_counter() - started
    error, where = "", ""
    if rc != 0:
        error, where = _error_from_traceback(text, work)
        if not error:
            error = "timeout" if rc == -signal.SIGKILL else f"exit status {rc}"
    return Outcome(rc == 0, step.script, error, _cell_of(where, work), text[-4000:], seconds)


def run_steps(
    run: Callable[[Path, Step], Outcome], work: Path, steps: Sequence[Step]
) -> tuple[Outcome, list[Outcome]]:
    """Run the steps in order until one fails: (the last outcome, all outcomes)."""
    outcomes = []
    for step in steps:
        outcomes.append(run(work, step))
        if not outcomes[-1].ok:
            break
    return outcomes[-1], outcomes


def _outcome(step: Step, mode: str, reply: dict[str, Any], text: str, work: Path) -> Outcome:
    rc = reply["rc"]
    error, where = reply.get("error", ""), reply.get("where", "")
    if mode.startswith("virtual:") and rc != 0:
        error, where = _devlint_run_verdict(text, work) or (error, where)
    if rc != 0 and not error:
        error = "timeout" if reply.get("timed_out") else f"exit status {rc}"
    error = error.strip().removesuffix(":")  # "AssertionError: " (no message) as on the cpu
    where = _cell_of(where, work)
    return Outcome(rc == 0, step.script, error, where, text[-4000:], reply["seconds"])


def _cell_of(where: str, work: Path) -> str:
    """``NAME_ipynb.py:LINE`` (a notebook run as a script) -> ``NAME.ipynb:cell N:LINE``."""
    path, _, line = where.rpartition(":")
    if not path.endswith("_ipynb.py") or not line.isdigit() or not (work / path).is_file():
        return where
    cell, first = 0, 0
    lines = (work / path).read_text(encoding="utf-8").splitlines()
    for number, text in enumerate(lines[: int(line)], start=1):
        if re.fullmatch(r"# cell \d+", text):
            cell, first = int(text.split()[-1]), number
    return f"{path.removesuffix('_ipynb.py')}.ipynb:cell {cell}:{int(line) - first}"


def _relative(path: str, work: Path) -> str:
    if path.startswith("<"):
        return path
    try:
        return Path(path).resolve().relative_to(work.resolve()).as_posix()
    except ValueError:
        return Path(path).name


def _devlint_run_verdict(text: str, work: Path) -> tuple[str, str] | None:
    """``devlint run``'s one-line verdict on a failure: (error, where)."""
    bug = re.search(r"^(.*?):(\d+): device bug on virtual \w+: (.*)$", text, re.M)
    if bug:
        rule = re.search(r"^  rule: (DEV\d+)", text, re.M)
        label = f"device bug ({rule.group(1)})" if rule else "device bug"
        return f"{label}: {bug.group(3)}", f"{_relative(bug.group(1), work)}:{bug.group(2)}"
    other = re.search(r"^error: (.*?): (\w+(?:\.\w+)*): (.*) \(not a device bug;", text, re.M)
    if other:
        where = other.group(1)
        path, _, line = where.rpartition(":")
        where = f"{_relative(path, work)}:{line}" if line.isdigit() else _relative(where, work)
        return f"{other.group(2)}: {other.group(3)}", where
    status = re.search(r": exited with status (\S+) on virtual", text)
    if status:
        return f"SystemExit: {status.group(1)}", ""
    return None


def _error_from_traceback(text: str, work: Path) -> tuple[str, str]:
    """The last exception line of a printed traceback, and its innermost frame in ``work``."""
    text = re.sub(r"^\[rank\d+\]: ", "", text, flags=re.M)  # torch.distributed's prefix
    lines = text.splitlines()
    frames = [
        (m.group(1), m.group(2))
        for m in re.finditer(r'^\s*File "([^"]+)", line (\d+)', text, re.M)
        if m.group(1).startswith("<") or Path(m.group(1)).resolve().is_relative_to(work.resolve())
    ]
    where = f"{_relative(frames[-1][0], work)}:{frames[-1][1]}" if frames else ""
    start = max((i for i, line in enumerate(lines) if line.startswith("Traceback")), default=None)
    if start is None:
        return "", where
    for line in lines[start + 1 :]:
        if line.strip() and not line.startswith((" ", "\t")):
            return _first_line(line), where  # the exception line ends the frames
    return "", where


def _first_line(text: str, limit: int = 200) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


# --- the server (runs in its own process) -----------------------------------------------


def _serve(path: str, directory: str) -> None:
    starter = os.getppid()  # before the imports: the starter may end during them
    # `python tests/runnable_corpus.py` put tests/ first on sys.path: a program must not
    # import from it (its children put their own folder there, as `python script` does)
    here = Path(__file__).resolve().parent
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != here]
    import torch  # the point of the server: imported once

    # What most programs import next: numpy, and torch._dynamo (with sympy: 800 modules,
    # seconds of CPU), which the first optimizer step imports lazily. Imports only: no
    # computation, no thread, before the forks.
    with contextlib.suppress(ImportError):
        import numpy  # noqa: F401
    with contextlib.suppress(Exception):
        import torch._dynamo  # noqa: F401
    print(f"fork server {os.getpid()}: ready on {path}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        server.listen(64)
        server.settimeout(0.5)
        try:
            while os.getppid() == starter:  # the starter ended: so does the server
                with contextlib.suppress(ChildProcessError):
                    while os.waitpid(-1, os.WNOHANG)[0]:  # reap finished handlers
                        pass
                try:
                    connection, _ = server.accept()
                except TimeoutError:
                    continue
                if os.fork() == 0:  # a handler per client: clients run in parallel
                    code = 1
                    try:
                        server.close()
                        _handle(connection)
                        code = 0
                    finally:
                        os._exit(code)
                connection.close()
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)
                os.rmdir(os.path.dirname(path))
            shutil.rmtree(directory, ignore_errors=True)  # its record, lock and log
            _report_cost()


def _report_cost() -> None:
    """The server's CPU time, and its runs', to the file DEVLINT_CORPUS_COST names."""
    import resource

    if os.environ.get("DEVLINT_CORPUS_COST"):
        cpu = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
        seconds = [usage.ru_utime + usage.ru_stime for usage in cpu]
        with open(os.environ["DEVLINT_CORPUS_COST"], "a") as file:
            file.write(f"fork server: CPU {seconds[0]:.1f} s, its runs {seconds[1]:.1f} s\n")


def _handle(connection: socket.socket) -> None:
    connection.settimeout(None)
    with connection, connection.makefile("rb") as requests:
        line = requests.readline()
        if not line:  # a client that only checked that the server answers
            return
        reply = _fork_and_wait(json.loads(line))
        connection.sendall(json.dumps(reply).encode() + b"\n")


def _fork_and_wait(request: dict[str, Any]) -> dict[str, Any]:
    result = Path(tempfile.mkstemp(prefix="corpus-result-", suffix=".json")[1])
    started = time.perf_counter()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 70
        try:
            code = _child(request, result)
        finally:
            os._exit(code)
    timed_out = False
    deadline = started + float(request["timeout"])
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.perf_counter() > deadline:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            timed_out = True
            break
        time.sleep(0.005)
    rc = os.waitstatus_to_exitcode(status)
    reply: dict[str, Any] = {"rc": rc, "seconds": time.perf_counter() - started}
    if timed_out:
        reply["timed_out"] = True
    try:
        reply.update(json.loads(result.read_text() or "{}"))
    finally:
        result.unlink()
    return reply


def _child(request: dict[str, Any], result: Path) -> int:
    import runpy
    import traceback

    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(log, 1)
    os.dup2(log, 2)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115  # the protocol pipe is the server's
    script = Path(request["script"])
    os.chdir(request["cwd"])
    os.environ.update(request["env"])
    sys.argv = [str(script), *request["args"]]
    code = 0
    try:
        mode = request["mode"]
        if mode == "python":
            sys.path.insert(0, str(script.parent))
            runpy.run_path(str(script), run_name="__main__")
        else:  # virtual:DEVICE: the command line `devlint run`, in this process
            from devlint.cli import main

            device = mode.split(":", 1)[1]
            main(["run", "--device", device, str(script), *request["args"]], prog_name="devlint")
    except SystemExit as done:
        if done.code is None:
            code = 0
        elif isinstance(done.code, int):
            code = done.code
        else:
            print(done.code, file=sys.stderr)
            code = 1
        if code != 0:
            result.write_text(json.dumps({"error": f"SystemExit: {done.code}"}))
    except BaseException as error:
        traceback.print_exc()
        work = Path(request["cwd"]).resolve()
        frames = [  # the program's own frames; "<string>": code it exec()s (a config file)
            frame
            for frame in traceback.extract_tb(error.__traceback__)
            if frame.filename.startswith("<") or Path(frame.filename).resolve().is_relative_to(work)
        ]
        where = f"{_relative(frames[-1].filename, work)}:{frames[-1].lineno}" if frames else ""
        message = f"{type(error).__name__}: {error}".removesuffix(": ")
        result.write_text(json.dumps({"error": _first_line(message), "where": where}))
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return code


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--serve":
        _serve(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: runnable_corpus.py --serve SOCKET DIRECTORY (started by ForkServer)")
