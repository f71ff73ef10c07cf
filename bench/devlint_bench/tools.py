"""The tools measured: devlint's command line, ruff, and TorchFix and Fixit in their own virtualenvs."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from devlint_bench.common import (
    COMPLETE,
    REPO,
    SETUP_TIMEOUT,
    VENVS,
    BenchError,
    measured_env,
    shown,
)

# name -> (pip requirement, console script, arguments before the corpus, accepted exit codes)
PEERS: dict[str, tuple[str, str, tuple[str, ...], tuple[int, ...]]] = {
    "torchfix": ("torchfix", "torchfix", (), (0, 1)),
    "fixit": ("fixit", "fixit", ("lint",), (0, 1)),
}
PEER_LABELS = {"torchfix": "TorchFix", "fixit": "Fixit"}


def run_quiet(command: Sequence[str], timeout: float = SETUP_TIMEOUT) -> tuple[int, str]:
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


def reason(output: str) -> str:
    """The most telling line of a failed command's output."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    lines = [line for line in lines if "is ignored: it is neither a file" not in line]
    for line in reversed(lines):
        if line.startswith("ERROR"):
            return line
    return lines[-1] if lines else "no output"


def version_of(command: Sequence[str]) -> str:
    code, output = run_quiet(command, timeout=120)
    return output.strip().splitlines()[0] if code == 0 and output.strip() else "?"


def libcst_version(python: Path | str) -> str:
    code = "import importlib.metadata as m; print(m.version('libcst'))"
    return version_of([str(python), "-c", code])


def project_python() -> str:
    candidate = REPO / ".venv" / "bin" / "python"
    python = str(candidate) if candidate.exists() else sys.executable
    code, output = run_quiet([python, "-c", "import libcst, click"], timeout=120)
    if code != 0:
        raise BenchError(f"{python} cannot import libcst and click: {reason(output)}")
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
    code, output = run_quiet([executable, "check", "--help"], timeout=120)
    subcommand = code == 0
    if not subcommand:
        code, output = run_quiet([executable, "--help"], timeout=120)
        if code != 0:
            raise BenchError(f"`devlint --help` failed: {reason(output)}")
    wanted = ("--no-cache", "--cache-dir", "--jobs", "--exit-zero", "--quiet")
    found = {opt for opt in wanted if re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", output)}
    return DevlintCli(executable, subcommand, frozenset(found))


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
    code, output = run_quiet([python, "-m", "venv", str(venv)])
    if code != 0:
        return None, f"cannot create a virtualenv: {reason(output)}"
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check"]
    code, output = run_quiet([*pip, "-q", requirement])
    if code != 0 or not executable.exists():
        return None, f"pip install {requirement} failed: {reason(output)}"
    stamp.write_text(requirement + "\n", encoding="utf-8")
    return str(executable), ""


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
