"""The command line: parses options into settings and hands them to the runner."""

from __future__ import annotations

import importlib
import logging
import os
import sys
import traceback
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NoReturn

import click

from devlint import __version__
from devlint.cache import DEFAULT_DIRECTORY
from devlint.config import (
    ConfigError,
    FileConfig,
    check_codes,
    codes_for_file,
    find_config,
    load_config,
    resolve_codes,
)
from devlint.diagnostics import Diagnostic
from devlint.discovery import DiscoveryError, discover
from devlint.engine import CheckOptions, check_text, unreadable
from devlint.fixing import FixMode, fix_text, unified_diff
from devlint.noqa import add_noqa as add_noqa_directives
from devlint.report import FORMATS, ReportOptions, RuleInfo, render
from devlint.rule import all_rules
from devlint.runner import FileTask, default_jobs, run_files
from devlint.source import UnreadableSource, decode


class UserError(Exception):
    """A problem with the command line or its inputs: one line, exit code 2."""


class DefaultGroup(click.Group):
    """``devlint PATH`` means ``devlint check PATH``, as with ruff's old CLI."""

    lazy_commands: ClassVar[dict[str, str]] = {
        "verify": "devlint.verify.command",
        "server": "devlint.server",
    }

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        known = set(self.commands) | set(self.lazy_commands) | {"--help", "-h", "--version"}
        if not args or args[0] not in known:
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*self.commands, *self.lazy_commands])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy_commands:
            command = getattr(importlib.import_module(self.lazy_commands[name]), name)
            return command if isinstance(command, click.Command) else None
        return super().get_command(ctx, name)


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="devlint")
def main() -> None:
    """devlint: find and fix device bugs in PyTorch code (CUDA, MPS, CPU).

    Run `devlint PATH...` (same as `devlint check PATH...`) to check files.
    """


def _codes_option(name: str, help_text: str) -> Any:
    return click.option(name, metavar="CODES", multiple=True, help=help_text)


@main.command("check")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path, allow_dash=True))
@_codes_option(
    "--select",
    "Rule codes or prefixes to enable (replaces the configured set); ALL for every rule.",
)
@_codes_option("--extend-select", "Rule codes or prefixes to enable on top of the selection.")
@_codes_option("--ignore", "Rule codes or prefixes to disable.")
@click.option("--output-format", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("--statistics", is_flag=True, help="Show counts per rule instead of each diagnostic.")
@click.option("--exit-zero", is_flag=True, help="Exit with 0 even when diagnostics are found.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the result cache.")
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where to keep the result cache (default: .devlint_cache in the project root).",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: one per core).",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Use this pyproject.toml or devlint.toml.",
)
@click.option("--stdin-filename", help="The name to report for source read from stdin (`-`).")
@click.option("-q", "--quiet", is_flag=True, help="Print diagnostics only, no summary.")
@click.option(
    "--color/--no-color", default=None, help="Colour the output (default: when a terminal)."
)
@click.option("-v", "--verbose", is_flag=True, help="Show tracebacks for internal errors.")
@click.option(
    "--fix", is_flag=True, help="Apply the safe fixes (and unsafe ones with --unsafe-fixes)."
)
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (or count as fixable) unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; change nothing.")
@click.option("--show-fixes", is_flag=True, help="List the fixes applied (or available).")
@click.option(
    "--exit-non-zero-on-fix", is_flag=True, help="Exit with 1 when a fix was applied, too."
)
@click.option(
    "--add-noqa", is_flag=True, help="Add `# noqa: CODE` to every line with a diagnostic."
)
def check(
    paths: tuple[Path, ...],
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    output_format: str,
    statistics: bool,
    exit_zero: bool,
    no_cache: bool,
    cache_dir: Path | None,
    jobs: int | None,
    config_file: Path | None,
    stdin_filename: str | None,
    quiet: bool,
    color: bool | None,
    verbose: bool,
    fix: bool,
    unsafe_fixes: bool,
    diff: bool,
    show_fixes: bool,
    exit_non_zero_on_fix: bool,
    add_noqa: bool,
) -> None:
    """Check PATHS (default: the current directory; `-` reads stdin)."""
    fix_mode = FixMode(unsafe=unsafe_fixes, write=not diff) if fix or diff else None
    _log_warnings(quiet)
    request = CheckRequest(
        paths, select, extend_select, ignore, jobs, config_file, stdin_filename, quiet,
        use_cache=not no_cache, cache_dir=cache_dir, fix=fix_mode,
    )  # fmt: skip
    try:
        if add_noqa and Path("-") in paths:
            raise UserError("--add-noqa cannot change stdin; give file paths")
        if add_noqa and fix_mode:
            raise UserError("--add-noqa cannot be combined with --fix or --diff")
        outcome = _run_check(request)
    except (UserError, ConfigError, DiscoveryError) as error:
        _fail(str(error))
    except Exception as error:  # a bug in devlint: one line, the traceback on request
        if verbose:
            traceback.print_exc()
        _fail(f"internal error: {type(error).__name__}: {error} (run with --verbose for details)")
    found, fixed = outcome.diagnostics, sum(outcome.applied.values())
    if outcome.files_checked == 0 and not quiet:  # e.g. a folder of binaries: say so
        click.echo("warning: no Python files found under the given paths", err=True)
    if add_noqa:
        _add_noqa(found, exit_zero)
    for problem in outcome.problems:
        click.echo(f"error: {problem}", err=True)
    if diff:
        _print_diff(outcome, exit_zero, quiet)
    use_color = (
        color if color is not None else (sys.stdout.isatty() and "NO_COLOR" not in os.environ)
    )
    options = ReportOptions(
        rules=_rule_infos(),
        color=use_color,
        statistics=statistics,
        show_fixes=show_fixes,
        quiet=quiet,
        unsafe_fixes=unsafe_fixes,
        files_checked=outcome.files_checked,
        cwd=Path.cwd(),
        fixed=outcome.applied_per_file if fix_mode else None,
    )
    out = sys.stderr if outcome.fixed_stdin is not None else sys.stdout
    if outcome.fixed_stdin is not None:
        sys.stdout.write(outcome.fixed_stdin)
    render(output_format, found, out, options)
    failed = bool(found) or bool(outcome.problems) or (exit_non_zero_on_fix and fixed > 0)
    sys.exit(1 if failed and not exit_zero else 0)


def _print_diff(outcome: CheckOutcome, exit_zero: bool, quiet: bool) -> NoReturn:
    """``--diff``: the diff on stdout, a summary on stderr; exit 1 when there is something to fix."""
    sys.stdout.write("".join(outcome.diffs))
    count = sum(outcome.applied.values())
    if not quiet:
        noun = "error" if count == 1 else "errors"
        click.echo(f"Would fix {count} {noun}." if count else "No errors would be fixed.", err=True)
    sys.exit(1 if (count or outcome.problems) and not exit_zero else 0)


@dataclass(frozen=True)
class CheckRequest:
    """What the command line asked ``check`` to do."""

    paths: tuple[Path, ...]
    select: tuple[str, ...]
    extend_select: tuple[str, ...]
    ignore: tuple[str, ...]
    jobs: int | None
    config_file: Path | None
    stdin_filename: str | None
    quiet: bool
    use_cache: bool
    cache_dir: Path | None
    fix: FixMode | None = None


@dataclass
class CheckOutcome:
    """What ``check`` found (and, with --fix/--diff, fixed) across all files."""

    diagnostics: list[Diagnostic]
    files_checked: int
    applied_per_file: dict[str, Counter[str]] = field(default_factory=dict)
    diffs: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # files that could not be written
    fixed_stdin: str | None = None  # --fix on stdin: the fixed source, for stdout

    @property
    def applied(self) -> Counter[str]:
        return sum(self.applied_per_file.values(), Counter())


def _run_check(request: CheckRequest) -> CheckOutcome:
    paths, stdin_filename = request.paths, request.stdin_filename
    reads_stdin = Path("-") in paths
    if reads_stdin and len(paths) > 1:
        raise UserError("`-` (stdin) cannot be combined with other paths")
    start = Path(stdin_filename).parent if reads_stdin and stdin_filename else Path.cwd()
    if not reads_stdin and paths:
        start = paths[0] if paths[0].is_dir() else paths[0].parent
    config_file = request.config_file or find_config(start.resolve())
    config = load_config(config_file)
    enabled = _enabled_codes(config, request.select, request.extend_select, request.ignore)
    for codes_ignored in config.per_file_ignores.values():
        check_codes(codes_ignored, list(all_rules()), "per-file-ignores")
    guards = config.guard_functions
    if reads_stdin:
        display = stdin_filename or "-"
        codes = codes_for_file(Path(display), config.root, config.per_file_ignores, enabled)
        options = CheckOptions(codes, guards, config.accelerator_api)
        try:  # bytes, decoded as for a file: BOM, coding cookie, DEV900 when undecodable
            text = decode(sys.stdin.buffer.read()).text
        except UnreadableSource as error:
            return CheckOutcome(unreadable(str(error), display, options), 1)
        if request.fix is None:
            return CheckOutcome(check_text(text, display, options), 1)
        result = fix_text(text, display, options, request.fix.unsafe)
        outcome = CheckOutcome(result.diagnostics, 1, {display: result.applied})
        if request.fix.write:
            outcome.fixed_stdin = result.text
        else:
            outcome.diffs.append(unified_diff(text, result.text, display))
        return outcome
    files = discover(
        list(paths) or [Path(".")],
        root=config.root,
        exclude=config.exclude,
        extend_exclude=config.extend_exclude,
    )
    cache_dir = None
    if request.use_cache:
        cache_dir = request.cache_dir or config.cache_dir or config.root / DEFAULT_DIRECTORY
    tasks = [
        FileTask(
            path,
            str(path),
            CheckOptions(
                codes_for_file(path, config.root, config.per_file_ignores, enabled),
                guards,
                config.accelerator_api,
            ),
            cache_dir,
            request.fix,
        )
        for path in files
    ]
    show_progress = sys.stderr.isatty() and not request.quiet
    outcome = CheckOutcome([], len(tasks))
    for task, done in zip(
        tasks, run_files(tasks, request.jobs or default_jobs(), show_progress), strict=True
    ):
        if isinstance(done, list):
            outcome.diagnostics.extend(done)
            continue
        outcome.diagnostics.extend(done.diagnostics)
        if done.applied:
            outcome.applied_per_file[task.display] = done.applied
        if done.diff:
            outcome.diffs.append(done.diff)
        if done.error:
            outcome.problems.append(done.error)
    outcome.diagnostics.sort(key=Diagnostic.sort_key)
    return outcome


def _enabled_codes(
    config: FileConfig,
    select: Sequence[str],
    extend_select: Sequence[str],
    ignore: Sequence[str],
) -> frozenset[str]:
    rules = all_rules()
    default_on = [code for code, rule in rules.items() if rule.default]
    chosen_select = _split(select) if select else config.select
    return resolve_codes(
        chosen_select,
        tuple(config.extend_select) + _split(extend_select),
        tuple(config.ignore) + _split(ignore),
        known=list(rules),
        default_on=default_on,
    )


def _split(values: Sequence[str]) -> tuple[str, ...]:
    """``--select A,B --select C`` -> (A, B, C)."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def _rule_infos() -> dict[str, RuleInfo]:
    return {
        code: RuleInfo(code, rule.name, rule.summary, rule.fix is not None, rule.default)
        for code, rule in all_rules().items()
    }


def _add_noqa(found: list[Diagnostic], exit_zero: bool) -> NoReturn:
    result = add_noqa_directives(found)
    for problem in result.problems:
        click.echo(problem, err=True)
    noun = "directive" if result.added == 1 else "directives"
    click.echo(f"Added {result.added} noqa {noun}.", err=True)
    sys.exit(1 if result.not_added and not exit_zero else 0)


class _OncePerMessage(logging.Filter):
    """Each warning once: fixing re-checks a file, and would repeat its warnings."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message in self.seen:
            return False
        self.seen.add(message)
        return True


def _log_warnings(quiet: bool) -> None:
    """devlint's warnings (e.g. an invalid `# noqa`) go to stderr as `warning: ...` lines."""
    logger = logging.getLogger("devlint")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
    handler.addFilter(_OncePerMessage())
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.ERROR if quiet else logging.WARNING)
    logging.addLevelName(logging.WARNING, "warning")


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


@main.command("rules")
def list_rules() -> None:
    """List every rule: code, name, default on/off, fix."""
    rules = all_rules()
    width = max(len(rule.name) for rule in rules.values())
    click.echo(f"{'code':<7} {'name':<{width}} {'default':<8} {'fix':<7} summary")
    for code, rule in rules.items():
        default = "on" if rule.default else "off"
        fix = rule.fix or "-"
        click.echo(f"{code:<7} {rule.name:<{width}} {default:<8} {fix:<7} {rule.summary}")


@main.command("rule")
@click.argument("code")
def show_rule(code: str) -> None:
    """Show the documentation of one rule (by code or name)."""
    rules = all_rules()
    wanted = code.upper()
    match = rules.get(wanted) or next((r for r in rules.values() if r.name == code), None)
    if match is None:
        _fail(f"unknown rule: {code} (see `devlint rules`)")
        return
    fix = {
        "safe": "Fix is always available (safe).",
        "unsafe": "Fix is available as an unsafe fix.",
    }
    header = f"# {match.name} ({match.code})\n\n"
    header += ("Enabled by default. " if match.default else "Off by default. ") + fix.get(
        match.fix or "", "No fix."
    )
    click.echo(header + "\n\n" + match.documentation())
