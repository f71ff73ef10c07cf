"""devlint's fixes on real programs: every program of the runnable corpus, in every variant,
runs on the CPU as ``tests/data/runnable/MANIFEST.toml`` expects (see ``runnable_corpus``).

A fix that re-parses can still break a program (issue 26: nanoGPT's ``device = 'cuda'``
config string, rewritten to ``torch.device(...)``, then fails ``'cuda' in device`` and the
type check of its command-line override). Here each program's copy is fixed, checked
(re-parses, a second fix changes nothing) and run; a failure prints the error, the
program's output and the diff the fix made (what ``devlint --diff`` shows).

Cost: the programs run in one fork server per session (all workers share it), started
at collection, which imports torch (and what the first optimizer step imports) once:
several seconds of CPU in the background, then well under a second a run.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path

import pytest
from conftest import run_devlint
from runnable_corpus import (
    CORPUS,
    CUDA_ABSENT,
    CUDA_USE_RULES,
    OUTCOMES,
    VARIANTS,
    ForkServer,
    Outcome,
    Program,
    copy_program,
    corpus_files,
    cuda_use,
    fix_copy,
    load_manifest,
    load_programs,
    run_steps,
    snapshot,
    unified_diff,
    unparsable,
)

HAS_TORCH = importlib.util.find_spec("torch") is not None
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(  # CI sets DEVLINT_REQUIRE_TORCH: there it must never skip
        not HAS_TORCH and not os.environ.get("DEVLINT_REQUIRE_TORCH"),
        reason="the runnable corpus needs torch (pip install 'devlint[verify]')",
    ),
]
PROGRAMS = load_programs()


def _server_directory() -> Path:
    """Where this session's fork server is recorded: one for all of xdist's workers."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"pid{os.getpid()}"
    return Path(tempfile.gettempdir()) / f"devlint-corpus-{run}"


# Started at collection, in the background: its imports take seconds of CPU, which the
# first program would otherwise wait for while other tests could run.
SERVER = ForkServer(_server_directory()) if HAS_TORCH else None


@pytest.fixture
def fork_server() -> ForkServer:
    assert SERVER is not None  # the module is skipped without torch
    return SERVER


def report(program: Program, variant: str, outcome: Outcome, diff: str, more: str = "") -> str:
    parts = [
        f"{program.name} [{variant}]: {outcome.summary()}"
        + (f" at {outcome.where}" if outcome.where else ""),
        more,
        "--- output (tail) ---",
        outcome.log[-2500:],
    ]
    if diff:
        parts += ["--- the fix (devlint --diff) ---", diff]
    return "\n".join(part for part in parts if part)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("program", PROGRAMS, ids=str)
def test_program_runs_on_the_cpu(
    program: Program, variant: str, tmp_path: Path, fork_server: ForkServer
) -> None:
    work = copy_program(program, tmp_path)
    fixed = fix_copy(program, variant, work, run_devlint)
    if variant != "original":
        broken = unparsable(work)
        assert not broken, f"the fixed files no longer parse: {broken}\n{fixed.diff}"
        again = fix_copy(program, variant, work, run_devlint)
        assert again.after == fixed.after, (
            f"a second devlint {variant} fix changed the files:\n{again.diff}"
        )

    expected = program.expect[variant]
    # "gap": fails for want of CUDA because of a known devlint gap (the notes say which),
    # reported or not; the test fails once the gap closes, so the manifest follows it
    needs_cuda = variant == "original" and expected == "cuda-only"
    reported = cuda_use(program, work, run_devlint) if needs_cuda else []
    outcome, _ = run_steps(fork_server.run, work, program.steps)
    if expected == "ok":
        if not outcome.ok:
            pytest.fail(report(program, variant, outcome, fixed.diff), pytrace=False)
        return
    # "cuda-only": it fails because CUDA is absent, and devlint says why
    if outcome.ok:
        pytest.fail(
            f'{program.name} [{variant}] runs on the CPU now: set expect.{variant} = "ok" '
            f"in MANIFEST.toml\n{fixed.diff}",
            pytrace=False,
        )
    if expected == "gap":
        return  # still fails as its notes say
    if not (CUDA_ABSENT.search(outcome.error) or CUDA_ABSENT.search(outcome.log[-1500:])):
        pytest.fail(
            report(program, variant, outcome, fixed.diff, "expected a failure for want of CUDA"),
            pytrace=False,
        )
    if needs_cuda and not reported:
        pytest.fail(
            report(
                program,
                variant,
                outcome,
                "",
                f"the original needs CUDA but devlint reports none of its CUDA use "
                f"({', '.join(sorted(CUDA_USE_RULES))})",
            ),
            pytrace=False,
        )


def test_the_manifest_holds_its_rules() -> None:
    """Expectations obey the corpus's rules; every file is accounted for, with its licence."""
    manifest = load_manifest()
    names = [program.name for program in PROGRAMS]
    assert len(names) == len(set(names))
    for program in PROGRAMS:
        assert set(program.expect.values()) <= set(OUTCOMES), program.name
        if program.expect["original"] == "ok":
            assert program.expect["fixed"] == program.expect["unsafe"] == "ok", program.name
        if "gap" in program.expect.values():
            assert "Gap:" in program.notes, program.name  # a known gap, named
        else:
            assert program.expect["unsafe"] == "ok", program.name  # CUDA use reported and fixed
        if program.expect["fixed"] == "cuda-only":
            assert "no safe fix" in program.notes, program.name  # which CUDA use, and why
        for step in program.steps:
            assert (CORPUS / program.folder / step.script).is_file(), (program.name, step)
        for name in program.files:
            assert (CORPUS / program.folder / name).exists(), (program.name, name)
    listed = set(manifest["files"])
    present = {name for folder in {p.folder for p in PROGRAMS} for name in corpus_files(folder)}
    assert present == listed, (
        f"not in MANIFEST.toml: {sorted(present - listed)}; missing: {sorted(listed - present)}"
    )
    for name, entry in manifest["files"].items():
        source = manifest["sources"][entry["source"]]
        if entry["source"] == "corpus":
            assert entry.get("note"), name
        else:
            assert {"path", "commit", "edits"} <= set(entry), name
            assert (CORPUS / source["license_file"]).is_file(), name


def test_the_fixes_diff_is_what_fix_writes(tmp_path: Path) -> None:
    """The diff the failures print is devlint's own --diff (one program suffices)."""
    program = next(p for p in PROGRAMS if p.name == "nanogpt_train")
    work = copy_program(program, tmp_path)
    shown = run_devlint("--diff", "--no-cache", *program.files, cwd=work).stdout
    fixed = fix_copy(program, "fixed", work, run_devlint)
    changes = [line for line in fixed.diff.splitlines() if line[:1] in "+-"]
    assert changes and changes == [line for line in shown.splitlines() if line[:1] in "+-"]
    assert unified_diff(fixed.before, snapshot(work)) == fixed.diff
