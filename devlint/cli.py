"""The command line: parses options into a lint request and renders what ``api.lint`` found."""

from __future__ import annotations

import difflib
import importlib
import json
import logging
import os
import sys
import traceback
from pathlib import Path
from typing import Any, ClassVar, NoReturn

import click

from devlint import __version__
from devlint.api import FixMode, LintOutcome, LintRequest, Overrides, UsageError, lint
from devlint.config import ConfigError, find_config, load_config
from devlint.diagnostics import Diagnostic
from devlint.discovery import DiscoveryError
from devlint.docs import DEFAULT_DOCS_URL, DOC_FORMATS, rule_markdown, rule_url, write_docs
from devlint.noqa import add_noqa as add_noqa_directives
from devlint.report import FORMATS, STATISTICS_FORMATS, ReportOptions, RuleInfo, render
from devlint.rule import Rule, all_rules


class UserError(Exception):
    """A problem with the command line or its inputs: one line, exit code 2."""


class DefaultGroup(click.Group):
    """``devlint PATH`` means ``devlint check PATH``, as with ruff's old CLI."""

    lazy_commands: ClassVar[dict[str, str]] = {
        "verify": "devlint.verify.command",
        "run": "devlint.verify.run_script",
        "server": "devlint.server",
    }

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        commands = [*self.commands, *self.lazy_commands]
        if not args or args[0] not in {*commands, "--help", "-h", "--version"}:
            _refuse_a_misspelled_command(args[0] if args else "-", commands)
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*self.commands, *self.lazy_commands])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy_commands:
            command = getattr(importlib.import_module(self.lazy_commands[name]), name)
            return command if isinstance(command, click.Command) else None
        return super().get_command(ctx, name)


def _refuse_a_misspelled_command(word: str, commands: list[str]) -> None:
    """``devlint checkk``: not a path, and close to a command: say so (exit 2)."""
    if word.startswith("-") or "/" in word or "." in word or os.path.lexists(word):
        return
    close = difflib.get_close_matches(word, commands, n=1, cutoff=0.75)
    if close:
        _fail(f"`{word}` is neither a command nor a path; did you mean `{close[0]}`?")


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
@click.option(
    "--target-torch",
    metavar="VERSION",
    help="The oldest torch the code supports, e.g. 2.6 (default: the project's torch>= dependency).",
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
    target_torch: str | None,
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
    request = LintRequest(
        paths,
        config_file,
        Overrides(select, extend_select, ignore, target_torch),
        fix=fix_mode,
        stdin_filename=stdin_filename,
        jobs=jobs,
        use_cache=not no_cache,
        cache_dir=cache_dir,
        show_progress=sys.stderr.isatty() and not quiet,
    )
    try:
        if statistics and output_format not in STATISTICS_FORMATS:
            formats = ", ".join(STATISTICS_FORMATS)
            raise UserError(f"--statistics cannot be written as {output_format} (use {formats})")
        if add_noqa and Path("-") in paths:
            raise UserError("--add-noqa cannot change stdin; give file paths")
        if add_noqa and fix_mode:
            raise UserError("--add-noqa cannot be combined with --fix or --diff")
        outcome = lint(request)
    except (UserError, UsageError, ConfigError, DiscoveryError) as error:
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
        docs_url=DEFAULT_DOCS_URL,
    )
    out = sys.stderr if outcome.fixed_stdin is not None else sys.stdout
    if outcome.fixed_stdin is not None:
        sys.stdout.flush()
        sys.stdout.buffer.write(outcome.fixed_stdin)
        sys.stdout.buffer.flush()
    render(output_format, found, out, options)
    failed = bool(found) or bool(outcome.problems) or (exit_non_zero_on_fix and fixed > 0)
    sys.exit(1 if failed and not exit_zero else 0)


def _print_diff(outcome: LintOutcome, exit_zero: bool, quiet: bool) -> NoReturn:
    """``--diff``: the diff on stdout, a summary on stderr; exit 1 when there is something to fix."""
    sys.stdout.write("".join(outcome.diffs))
    count = sum(outcome.applied.values())
    if not quiet:
        noun = "error" if count == 1 else "errors"
        click.echo(f"Would fix {count} {noun}." if count else "No errors would be fixed.", err=True)
    sys.exit(1 if (count or outcome.problems) and not exit_zero else 0)


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


def _log_warnings(quiet: bool) -> None:
    """devlint's warnings (e.g. an invalid `# noqa`) go to stderr as `warning: ...` lines."""
    logger = logging.getLogger("devlint")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.ERROR if quiet else logging.WARNING)
    logging.addLevelName(logging.WARNING, "warning")


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


@main.command("rules")
@click.option(
    "--output-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="A table, or JSON objects (code, name, summary, default, fix, url, explanation).",
)
def list_rules(output_format: str) -> None:
    """List every rule: code, name, default on/off, fix."""
    rules = all_rules()
    if output_format == "json":
        template = _docs_url_of_cwd()
        click.echo(json.dumps([_rule_json(rule, template) for rule in rules.values()], indent=2))
        return
    width = max(len(rule.name) for rule in rules.values())
    click.echo(f"{'code':<7} {'name':<{width}} {'default':<8} {'fix':<7} summary")
    for code, rule in rules.items():
        default = "on" if rule.default else "off"
        fix = rule.fix or "-"
        click.echo(f"{code:<7} {rule.name:<{width}} {default:<8} {fix:<7} {rule.summary}")


@main.command("rule")
@click.argument("code")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text")
def show_rule(code: str, output_format: str) -> None:
    """Show the documentation of one rule (by code or name)."""
    rules = all_rules()
    wanted = code.upper()
    match = rules.get(wanted) or next((r for r in rules.values() if r.name == code), None)
    if match is None:
        _fail(f"unknown rule: {code} (see `devlint rules`)")
    if output_format == "json":
        click.echo(json.dumps(_rule_json(match, _docs_url_of_cwd()), indent=2))
        return
    click.echo(rule_markdown(match).rstrip("\n"))
    from devlint.verify.observed import rule_lines  # the runtime record; no torch

    observed = rule_lines(match.code)
    if observed:
        click.echo("\n" + "\n".join(observed))


def _rule_json(rule: type[Rule], docs_url: str) -> dict[str, Any]:
    return {
        "code": rule.code,
        "name": rule.name,
        "summary": rule.summary,
        "default": rule.default,
        "fix": rule.fix,
        "url": rule_url(docs_url, rule.code, rule.name),
        "explanation": rule.documentation(),
    }


def _docs_url_of_cwd() -> str:
    """The ``docs-url`` of the configuration that applies here, or the default."""
    try:
        return load_config(find_config(Path.cwd())).docs_url or DEFAULT_DOCS_URL
    except ConfigError as error:
        _fail(str(error))


@main.command("docs")
@click.option(
    "-o",
    "--output",
    "directory",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="The directory to write the pages into (created when missing).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(DOC_FORMATS),
    default="html",
    show_default=True,
    help="Static HTML pages, or Markdown (as in the repository's docs/rules/).",
)
def write_docs_command(directory: Path, fmt: str) -> None:
    """Write one page per rule, and an index, from the rules' documentation.

    The pages are named after the rules (`unused-noqa.html`): serve DIR anywhere and
    set `docs-url` to its address so that diagnostics link to it.
    """
    try:
        written = write_docs(directory, all_rules(), fmt)
    except OSError as error:
        _fail(f"cannot write the docs into {directory}: {error.strerror or error}")
    click.echo(f"Wrote {len(written)} pages to {directory}.", err=True)
