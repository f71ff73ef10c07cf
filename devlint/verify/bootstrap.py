"""The child side of ``devlint verify``: runs fixture programs the way one device sees them.

Usage: ``python path/to/bootstrap.py SPEC.json``

Started by ``runner.py`` by *path* (not ``-m devlint.verify…``), so that a child imports
only the standard library and torch, whatever devlint itself imports; it must stay
self-contained. The spec names the programs to run in this process (a batch, so that torch
is imported once) and how the machine should look:

- the parent sets ``CUDA_VISIBLE_DEVICES=""`` in the environment where CUDA must vanish;
- ``hide_mps``: torch's Python-level MPS checks say "absent";
- ``virtual = "virtual-cuda"`` / ``"virtual-mps"``: the program runs under ``virtual.py``'s
  ``VirtualDevice`` (loaded by path): the machine looks as if it had that accelerator, and
  tensors track where they would live (see ``virtual_columns.py`` for what that reproduces).

Each program runs with ``runpy.run_path(path, run_name="__main__")`` with fresh
``__main__`` globals, its own ``sys.argv`` / ``sys.path[0]`` / working directory, its own
stdout and stderr files (redirected at the file-descriptor level, so output from C code and
subprocesses lands there too) and warnings recorded with ``simplefilter("always")``.

``fork = true`` (Linux): each program runs in a ``fork()`` of this warm interpreter, so
nothing it does (module state, torch's warn-once flags, monkeypatches, a crash) reaches
the next one, and a program over the timeout is killed here while the batch goes on.
Otherwise (macOS, where forking after Apple's frameworks are loaded is unsafe, and
Windows) programs run one after the other in this process, and the environment, modules
imported from the fixture's folder, logging handlers and torch's global state (grad mode,
default dtype and device, RNG, threads) are put back after each one.

Outcomes go to the events file as JSON lines (``ready``, then ``start`` / ``done`` per
program, then ``end``): the parent never parses a program's output for structure, and
learns which program was running when a batch crashed or hung.
"""

from __future__ import annotations

import gc
import json
import os
import runpy
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, TextIO

VIRTUAL = {"virtual-cuda": "cuda", "virtual-mps": "mps"}


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as handle:
        spec = json.load(handle)
    with open(spec["events"], "a", encoding="utf-8") as events:

        def emit(**record: Any) -> None:
            events.write(json.dumps(record) + "\n")
            events.flush()

        torch = _preload(spec["preload"])
        mode_factory = _set_up(torch, spec)
        # A CUDA driver opened here would be unusable in forked children: run inline then.
        fork = bool(spec.get("fork")) and not _cuda_driver_open()
        emit(event="ready", fork=fork)
        baseline = _TorchState(torch)
        for run in spec["runs"]:
            emit(event="start", id=run["id"])
            if fork:
                outcome = _run_forked(run, mode_factory, float(spec["timeout"]))
            else:
                baseline.restore()
                outcome = _run_program(run, mode_factory)
                baseline.restore()
                gc.collect()
                _release_device_memory(torch)
            _end_strays()
            emit(event="done", id=run["id"], outcome=outcome)
        emit(event="end")
    return 0


def _cuda_driver_open() -> bool:
    """Whether this process has the NVIDIA driver open (Linux: its device files)."""
    try:
        descriptors = os.listdir("/proc/self/fd")
    except OSError:
        return False
    for descriptor in descriptors:
        try:
            if os.readlink(f"/proc/self/fd/{descriptor}").startswith("/dev/nvidia"):
                return True
        except OSError:
            continue
    return False


def _end_strays() -> None:
    """Subprocesses a program left behind (in this process group) must not outlive it."""
    if os.name != "posix" or os.getpgid(0) != os.getpid():  # only in our own group
        return
    import signal

    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.killpg(0, signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_forked(
    run: dict[str, Any], mode_factory: Callable[[], Any] | None, timeout: float
) -> dict[str, Any]:
    """Run the program in a forked copy of this warm interpreter: nothing it does survives.

    Safe because this process only imported torch: no CUDA context, no thread pool yet.
    """
    result_path = run["result"]
    _flush()
    pid = os.fork()
    if pid == 0:  # the child: run, report, and never return into the loop
        status = 70
        try:
            outcome = _run_program(run, mode_factory)
            with open(result_path + ".tmp", "w", encoding="utf-8") as handle:
                json.dump(outcome, handle)
            os.replace(result_path + ".tmp", result_path)
            status = 0
        finally:
            _flush()
            os._exit(status)
    started = time.perf_counter()
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.perf_counter() - started > timeout:
            _kill_child(pid)
            return {"exit_code": None, "timed_out": True, "duration": timeout}
        time.sleep(0.005)
    duration = time.perf_counter() - started
    if os.path.exists(result_path):
        with open(result_path, encoding="utf-8") as handle:
            reported: dict[str, Any] = json.load(handle)
        return reported
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        return {"exit_code": -number, "crash": _signal_name(number), "duration": duration}
    # the program ended the interpreter itself (os._exit): its status is the outcome
    return {"exit_code": os.WEXITSTATUS(status), "duration": duration}


def _kill_child(pid: int) -> None:
    import signal

    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _signal_name(number: int) -> str:
    import signal

    try:
        return f"killed by signal {number}, {signal.Signals(number).name}"
    except ValueError:
        return f"killed by signal {number}"


# --- setting up the machine ------------------------------------------------------------------


def _preload(modules: list[str]) -> Any:
    """Import what the programs will need once, for the whole batch (torch is required)."""
    import importlib

    torch = None
    for name in modules:
        try:
            module = importlib.import_module(name)
        except Exception:
            if name == "torch":
                raise
            continue  # a warm-up only
        if name == "torch":
            torch = module
    return torch


def _patch(owner: Any, name: str, value: Any) -> None:
    """``owner.name = value``, in the shape of what it replaces (``virtual_runtime.py``)."""
    runtime = _sibling("virtual_runtime.py", "_devlint_virtual_runtime")
    setattr(owner, name, runtime.shaped_like(getattr(owner, name, None), value))


def _set_up(torch: Any, spec: dict[str, Any]) -> Callable[[], Any] | None:
    if spec.get("hide_mps"):
        _hide_mps(torch)
    if spec.get("virtual") in VIRTUAL:
        return _virtual_device(VIRTUAL[spec["virtual"]])
    if spec.get("virtual"):
        raise SystemExit(f"unknown virtual device {spec['virtual']!r}")
    return None


def _hide_mps(torch: Any) -> None:
    mps = getattr(torch.backends, "mps", None)
    if mps is not None:
        _patch(mps, "is_available", lambda: False)
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is None:
        return
    real_current = accelerator.current_accelerator
    real_count = accelerator.device_count

    def current_accelerator(*args: Any, **kwargs: Any) -> Any:
        device = real_current(*args, **kwargs)
        return None if device is not None and device.type == "mps" else device

    _patch(accelerator, "current_accelerator", current_accelerator)
    _patch(accelerator, "is_available", lambda: current_accelerator(True) is not None)
    _patch(accelerator, "device_count", lambda: real_count() if current_accelerator() else 0)


def _virtual_device(kind: str) -> Callable[[], Any]:
    """``virtual.py``'s ``VirtualDevice(kind)``, loaded by path (this file stays standalone)."""
    module = _sibling("virtual.py", "_devlint_virtual")
    return lambda: module.VirtualDevice(kind)


def _sibling(filename: str, name: str) -> Any:
    """A module of this folder, loaded by path once (this file imports no devlint)."""
    import importlib.util

    if name in sys.modules:
        return sys.modules[name]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), filename)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _release_device_memory(torch: Any) -> None:
    try:
        if torch is not None and torch.cuda.is_initialized():
            torch.cuda.empty_cache()
    except Exception:
        pass


class _TorchState:
    """torch's process-global settings, put back before and after each program."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.values: dict[str, Any] = {}
        if torch is None:
            return
        probes: dict[str, Callable[[], Any]] = {
            "grad": torch.is_grad_enabled,
            "dtype": torch.get_default_dtype,
            "threads": torch.get_num_threads,
            "deterministic": torch.are_deterministic_algorithms_enabled,
            "rng": torch.get_rng_state,
        }
        if hasattr(torch, "get_default_device"):
            probes["device"] = torch.get_default_device
        for name, probe in probes.items():
            try:
                self.values[name] = probe()
            except Exception:
                continue

    def restore(self) -> None:
        torch, values = self.torch, self.values
        if torch is None:
            return
        setters: dict[str, Callable[[Any], Any]] = {
            "grad": torch.set_grad_enabled,
            "dtype": torch.set_default_dtype,
            "threads": torch.set_num_threads,
            "deterministic": torch.use_deterministic_algorithms,
            "rng": torch.set_rng_state,
            "device": lambda device: torch.set_default_device(
                None if device.type == "cpu" else device
            ),
        }
        # Only what changed is set again: use_deterministic_algorithms imports torch._inductor
        # (2 s and more on torch 2.13), a cost no program should pay for an unchanged flag.
        current: dict[str, Callable[[], Any]] = {
            "deterministic": torch.are_deterministic_algorithms_enabled,
            "threads": torch.get_num_threads,
            "device": getattr(torch, "get_default_device", lambda: None),
        }
        for name, value in values.items():
            try:
                if name in current and current[name]() == value:
                    continue
                setters[name](value)
            except Exception:
                continue


# --- running one program ---------------------------------------------------------------------


def _run_program(run: dict[str, Any], mode_factory: Callable[[], Any] | None) -> dict[str, Any]:
    program, directory, cwd = run["program"], run["directory"], run["cwd"]
    saved_argv, saved_path, saved_cwd = list(sys.argv), list(sys.path), os.getcwd()
    saved_environ, saved_modules = dict(os.environ), set(sys.modules)
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    saved_handlers = _logging_handlers()
    sys.argv = [program]
    sys.path.insert(0, directory)
    os.chdir(cwd)
    exit_code, raised = 0, None
    with _redirected(run["stdout"], run["stderr"]), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        started = time.perf_counter()
        try:
            if mode_factory is None:
                runpy.run_path(program, run_name="__main__")
            else:
                with mode_factory():
                    runpy.run_path(program, run_name="__main__")
        except SystemExit as stop:
            exit_code = _exit_status(stop.code)
            if exit_code != 0:
                raised = _describe(stop, program)
        except BaseException as error:  # the program's failure is what we report
            exit_code, raised = 1, _describe(error, program)
            _print_traceback(error, program)
        duration = time.perf_counter() - started
        sys.stdin, sys.stdout, sys.stderr = saved_streams
    records = [
        {
            "category": getattr(w.category, "__name__", str(w.category)),
            "message": _text(w.message),
            "filename": str(w.filename),
            "lineno": w.lineno,
        }
        for w in caught
    ]
    sys.argv, sys.path[:] = saved_argv, saved_path
    os.chdir(saved_cwd)
    os.environ.clear()
    os.environ.update(saved_environ)
    _forget_modules(saved_modules, directory)
    _restore_logging(saved_handlers)
    return {"exit_code": exit_code, "exception": raised, "warnings": records, "duration": duration}


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # what the interpreter does with sys.exit("message")
    return 1


def _text(value: object) -> str:
    try:
        return str(value)
    except Exception as error:  # a broken __str__ must not break the report
        return f"<unprintable {type(value).__name__}: {error!r}>"


def _describe(error: BaseException, program: str) -> dict[str, Any]:
    mro = type(error).__mro__
    lines = [tb.tb_lineno for tb in _frames(error.__traceback__) if _is_program(tb, program)]
    return {
        "names": [cls.__name__ for cls in mro],
        "qualnames": [f"{cls.__module__}.{cls.__qualname__}" for cls in mro],
        "message": _text(error) if not isinstance(error, SystemExit) else _text(error.code),
        "lines": lines,
    }


def _frames(tb: TracebackType | None) -> Iterator[TracebackType]:
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _is_program(tb: TracebackType, program: str) -> bool:
    return tb.tb_frame.f_code.co_filename == program


def _print_traceback(error: BaseException, program: str) -> None:
    """As the interpreter would print it: starting at the program, not at runpy."""
    tb = next((t for t in _frames(error.__traceback__) if _is_program(t, program)), None)
    try:
        traceback.print_exception(type(error), error, tb or error.__traceback__, file=sys.stderr)
    except Exception:
        print(f"{type(error).__name__}: {_text(error)}", file=sys.stderr)


def _forget_modules(before: set[str], directory: str) -> None:
    """Modules the program imported from its own folder must not leak into the next one."""
    root = os.path.abspath(directory) + os.sep
    for name in set(sys.modules) - before:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and os.path.abspath(path).startswith(root):
            del sys.modules[name]


def _logging_handlers() -> list[Any] | None:
    logging = sys.modules.get("logging")
    return None if logging is None else list(logging.getLogger().handlers)


def _restore_logging(handlers: list[Any] | None) -> None:
    logging = sys.modules.get("logging")
    if logging is not None:
        logging.getLogger().handlers[:] = handlers or []


@contextmanager
def _redirected(stdout_path: str, stderr_path: str) -> Iterator[None]:
    """Point file descriptors 1 and 2 at the program's own files while it runs."""
    _flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        for fd, path in ((1, stdout_path), (2, stderr_path)):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(target, fd)
            os.close(target)
        yield
    finally:
        _flush()
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


def _flush() -> None:
    streams: list[TextIO | None] = [sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__]
    for stream in streams:
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
    _flush_c_stdio()


def _flush_c_stdio() -> None:
    if os.name != "posix":
        return
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except Exception:
        pass


if __name__ == "__main__":
    # Run by path, sys.path[0] is this package's folder: its modules must not shadow a
    # program's imports.
    del sys.path[0]
    status = main(sys.argv)
    _flush()
    os._exit(status)  # no atexit handlers or lingering threads of the programs
