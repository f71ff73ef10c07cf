"""``devlint run --device cuda|mps script.py [args…]``: run a user's script on a virtual device.

The script runs in this process on the CPU under ``virtual.VirtualDevice`` (see its
docstring for what is reproduced and the limits: CUDA-only kernels and objects, custom
C++/CUDA extensions, ``torch.compile``, DataLoader workers' own placements). The run stops

- at the first device bug: a failure the virtual device raises where the real device
  would (mixed devices, ``.numpy()`` of a device tensor, float64 on MPS, a CUDA
  checkpoint without CUDA, CUDA code on a Mac). It prints the script's file and line,
  PyTorch's message, the devlint rule that describes it and whether ``devlint check``
  finds it statically, and exits 1;
- after ``--max-steps`` optimizer steps or ``--timeout`` seconds (exit 0: nothing found
  so far);
- at a failure unrelated to devices: one line, no traceback, exit 2.

A script that ends on its own exits 0 with a one-line summary (optimizer steps, host
syncs); one that exits with a non-zero status (argparse's usage errors) exits 2. A failure
is placed at the innermost frame of the user's own code, never in devlint (whose virtual
device raises PyTorch's errors), the standard library or an installed package. The
summary adds a note where the script asked which accelerator there is, ran tensor
operations and placed nothing on the one offered (a device choice that misses it: DEV004,
DEV016). Everything after the script on the command line is the script's arguments, as
with ``python script.py …``. torch is imported only when the command runs.

On MPS an operator without an MPS kernel in the emulated torch (the installed one,
``DEVLINT_MPS_TORCH`` or ``--target-torch``) stops the run with torch's
``NotImplementedError`` (DEV019). ``--report`` runs on past them, as
``PYTORCH_ENABLE_MPS_FALLBACK=1`` does, at ``--target-torch`` or the project's
``target-torch``, and prints every operator the run used that MPS lacks there
(``readiness.py``; ``--report-format json``). Its exit code: 0 when every operator runs
on MPS (CPU fallbacks included), 1 when one is missing or another device bug stopped the
run, 2 when the script failed for another reason.
"""

from __future__ import annotations

import contextlib
import re
import runpy
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from devlint.torch_target import TorchVersion, format_target, parse_target

if TYPE_CHECKING:
    from devlint.engine import CheckOptions


def device_bugs() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(message pattern, the rules that describe it: the first is the default), from the
    rules' ``runtime_errors`` (ordered by ``runtime_rank``, then code)."""
    from devlint.rule import all_rules

    described: dict[str, list[tuple[int, str]]] = {}
    for code, rule in all_rules().items():
        for pattern in rule.runtime_errors:
            described.setdefault(pattern, []).append((rule.runtime_rank, code))
    return tuple(
        (pattern, tuple(code for _, code in sorted(rules))) for pattern, rules in described.items()
    )


class _Stop(BaseException):
    """The step or time limit: not the script's failure."""


@dataclass(frozen=True, slots=True)
class DeviceBug:
    path: str
    line: int
    message: str  # "Type: message", PyTorch's first line
    rules: tuple[str, ...]


def classify(error: BaseException, script: Path) -> DeviceBug | None:
    """The device bug this exception is, or None when it is something else."""
    text = f"{type(error).__name__}: {error}"
    for pattern, rules in device_bugs():
        if re.search(pattern, str(error)):
            path, line = _script_frame(error, script)
            return DeviceBug(path, line, text.splitlines()[0], rules)
    return None


def _script_frame(error: BaseException, script: Path) -> tuple[str, int]:
    """The innermost frame in the user's own code (neither devlint's package, where the
    virtual device raises PyTorch's errors, nor the standard library or installed packages),
    else the script itself."""
    from devlint.verify.virtual_runtime import is_user_code

    inside = [f for f in traceback.extract_tb(error.__traceback__) if is_user_code(f.filename)]
    if not inside:
        return str(script), 0
    frame = inside[-1]
    return frame.filename, frame.lineno or 0


def script_options(path: Path) -> CheckOptions:
    """How ``devlint run`` checks a script: with its project's settings (as ``devlint check``
    resolves them: ``api.project_settings``), every rule selected."""
    from devlint.api import Overrides, project_settings

    return project_settings(path.parent, overrides=Overrides(select=("ALL",))).options_for(path)


def static_findings(bug: DeviceBug) -> tuple[list[str], list[str]]:
    """``devlint check`` (every rule) on the file of the bug: the diagnostics of its rules at
    the failing line, and elsewhere in the file (where rules that report a cause point)."""
    from devlint.api import lint_path

    path = Path(bug.path)
    result = lint_path(path, bug.path, script_options(path))  # unreadable: DEV900, not a rule's
    found = [d for d in result.diagnostics if d.code in bug.rules]
    lines = [
        (d.start.row, f"{d.path}:{d.start.row}:{d.start.column}: {d.code} {d.message}")
        for d in found
    ]
    return [t for row, t in lines if row == bug.line], [t for row, t in lines if row != bug.line]


@contextmanager
def _limits(max_steps: int | None, timeout: float | None) -> Iterator[list[int]]:
    """Count optimizer steps; stop the script at ``max_steps`` or after ``timeout`` s."""
    from torch.optim.optimizer import register_optimizer_step_post_hook

    steps = [0]

    def counted(*args: Any) -> None:
        steps[0] += 1
        if max_steps is not None and steps[0] >= max_steps:
            raise _Stop(f"{steps[0]} optimizer steps")

    def expired(*args: Any) -> None:
        raise _Stop(f"the time limit ({timeout:g} s)")

    handle = register_optimizer_step_post_hook(counted)
    alarm = timeout is not None and hasattr(signal, "setitimer")
    previous = signal.signal(signal.SIGALRM, expired) if alarm else None
    if alarm and timeout is not None:
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        yield steps
    finally:
        handle.remove()
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def run_script(
    device: str,
    script: Path,
    args: list[str],
    max_steps: int | None,
    timeout: float | None,
    target: TorchVersion | None = None,
    report: str | None = None,
) -> int:
    """Run ``script`` under the virtual ``device`` (on MPS: the MPS backend of torch
    ``target``, None: the installed torch's or ``DEVLINT_MPS_TORCH``); print the verdict;
    the exit code. ``report`` (``text`` / ``json``, MPS only): record the operators MPS
    lacks instead of stopping at the first, and print the readiness report."""
    from devlint.verify.virtual import VirtualDevice

    release = format_target(target) if target is not None else None
    virtual = VirtualDevice(device, release=release, record=report is not None)
    if report is None:
        return _run(virtual, script, args, max_steps, timeout)
    from devlint.verify import readiness

    assert target is not None
    quiet = contextlib.redirect_stdout(sys.stderr) if report == "json" else None
    with quiet or contextlib.nullcontext():
        code = _run(virtual, script, args, max_steps, timeout)
    found = readiness.readiness(script, target, virtual.operators, virtual.unavailable)
    if report == "json":
        click.echo(readiness.dumps(found, code))
    else:
        click.echo(readiness.render_text(found))
    return code if code else found.exit_code


def _run(
    virtual: Any, script: Path, args: list[str], max_steps: int | None, timeout: float | None
) -> int:
    device = virtual.kind
    saved = list(sys.argv), list(sys.path)
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.resolve().parent))
    started = time.perf_counter()
    label = f"virtual {device}"
    try:
        with virtual, _limits(max_steps, timeout) as steps:
            runpy.run_path(str(script), run_name="__main__")
    except _Stop as stop:
        _say(f"{script}: stopped after {stop} on {label}: no device bug so far", virtual, steps)
        return 0
    except SystemExit as done:
        if done.code not in (None, 0):  # argparse's errors, sys.exit(1): the script's verdict
            status = done.code if isinstance(done.code, int) else 1
            _say(f"{script}: exited with status {status} on {label}", virtual, steps, False)
            return 2
        if not virtual.operations:  # --help, a usage message: nothing ran on any device
            _say(f"{script}: exited on {label} before any tensor operation", virtual, steps)
            return 0
        _say(f"{script}: exited with status 0 on {label}: no device bug", virtual, steps)
        return 0
    except Exception as error:
        return _failed(error, script, label)
    finally:
        sys.argv, sys.path[:] = saved
    seconds = time.perf_counter() - started
    _say(f"{script}: ran to the end on {label} in {seconds:.1f} s: no device bug", virtual, steps)
    return 0


def _say(headline: str, virtual: Any, steps: list[int], finished: bool = True) -> None:
    if virtual.unavailable:  # --report: the run went on past them
        headline = headline.replace(": no device bug", ": no other device bug")
    click.echo(f"{headline} ({steps[0]} optimizer steps, {virtual.syncs} host syncs)")
    # The script asked which accelerator there is (its own code, not a library's), ran
    # tensor operations, yet placed nothing on the one it was offered: its choice missed it.
    if finished and virtual.asked and virtual.operations and not virtual.placed:
        click.echo(
            f"  note: nothing was placed on {virtual.kind}: the script asked which device to "
            "use and ran on the CPU (does its device choice know this accelerator? see "
            "DEV004 / DEV016)"
        )


def _failed(error: BaseException, script: Path, label: str) -> int:
    bug = classify(error, script)
    if bug is None:
        path, line = _script_frame(error, script)
        where = f"{path}:{line}" if line else str(script)
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        click.echo(
            f"error: {where}: {type(error).__name__}: {first} (not a device bug; "
            f"it failed for another reason on {label})",
            err=True,
        )
        return 2
    from devlint.rule import all_rules

    at_line, elsewhere = static_findings(bug)
    codes = [finding.split(": ", 1)[1].split()[0] for finding in at_line or elsewhere]
    rule = min(codes, key=bug.rules.index) if codes else bug.rules[0]
    name = all_rules()[rule].name if rule in all_rules() else rule
    click.echo(f"{bug.path}:{bug.line}: device bug on {label}: {bug.message}")
    click.echo(f"  rule: {rule} ({name})")
    if at_line:
        click.echo("  static analysis found it too:")
    elif elsewhere:
        click.echo("  static analysis reports its rule elsewhere in the file (the cause):")
    else:
        click.echo("  static analysis: not found (devlint check reports none of its rules here)")
    for finding in at_line or elsewhere:
        click.echo(f"    {finding}")
    return 1


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


@click.command(
    "run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}
)
@click.option(
    "--device",
    type=click.Choice(["cuda", "mps"]),
    required=True,
    help="The accelerator to simulate on the CPU.",
)
@click.option(
    "--max-steps",
    type=click.IntRange(min=1),
    default=None,
    help="Stop after this many optimizer steps (training loops).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Stop after this many seconds.",
)
@click.option(
    "--report",
    is_flag=True,
    help="MPS only: run on past operators MPS lacks (as PYTORCH_ENABLE_MPS_FALLBACK=1) and "
    "list them all; exit 1 when one is missing at the target torch.",
)
@click.option(
    "--report-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="The report's format (json: the report alone on stdout).",
)
@click.option(
    "--target-torch",
    default=None,
    metavar="VERSION",
    help="The torch release whose MPS backend to emulate (default: the installed torch's; "
    "with --report, the project's target-torch).",
)
@click.argument("script", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run(
    device: str,
    max_steps: int | None,
    timeout: float | None,
    report: bool,
    report_format: str,
    target_torch: str | None,
    script: Path,
    args: tuple[str, ...],
) -> None:
    """Run SCRIPT on the CPU as on a machine with DEVICE; stop at the first device bug.

    With --report (MPS), run to the end and list every operator MPS lacks: exit 0 when
    all run on MPS, 1 when one is missing at the target torch, 2 when the script failed
    for another reason."""
    if not script.is_file():
        _fail(f"no such script: {script}")
    target = parse_target(target_torch) if target_torch is not None else None
    if target_torch is not None and target is None:
        _fail(f"--target-torch: not a torch release such as 2.6: {target_torch}")
    if report and device != "mps":
        _fail("--report lists the operators MPS lacks: use it with --device mps")
    if report and target is None:
        target = _project_target(script)
    try:
        import torch  # noqa: F401
    except ImportError:
        _fail("devlint run needs PyTorch; install it with: pip install 'devlint[verify]'")
    chosen = report_format if report else None
    sys.exit(run_script(device, script, list(args), max_steps, timeout, target, chosen))


def _project_target(script: Path) -> TorchVersion:
    """The ``target-torch`` of the project the script belongs to (as ``devlint check``)."""
    from devlint.config import ConfigError, find_config, load_config, target_torch

    try:
        config = load_config(find_config(script.resolve().parent))
    except ConfigError as error:
        _fail(str(error))
    return target_torch(config, script.resolve().parent)
