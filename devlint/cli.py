"""The command line: parses options into a lint request and renders what ``api.lint`` found."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, TextIO

import click

from devlint import __version__
from devlint.formats import DEFAULT_FORMAT, FORMATS, STATISTICS_FORMATS, TEXT_FORMATS
from devlint.records import record

# Start-up: `devlint --version` and `--help` import click and nothing heavy; what checking
# needs (libcst, the analysis, the rules, the configuration, rich) is imported by the code
# that uses it (tests/test_startup.py keeps it so; bench/startup.py times it).
if TYPE_CHECKING:
    from devlint.api import LintOutcome, LintRequest, Settings
    from devlint.diagnostics import Diagnostic, FixMode
    from devlint.report import RuleInfo
    from devlint.rule import Rule


class UserError(Exception):
    """A problem with the command line or its inputs: one line, exit code 2."""


class DefaultGroup(click.Group):
    """``devlint PATH`` means ``devlint check PATH``, as with ruff's old CLI."""

    # Commands whose module is imported only when they run, and their one-line help, so
    # that `devlint --help` lists them without importing them (a test keeps each help
    # equal to the first paragraph of the command's own).
    lazy_commands: ClassVar[dict[str, tuple[str, str]]] = {
        "verify": (
            "devlint.verify.command",
            "Run the rule fixtures on the devices present and check their declared outcomes.",
        ),
        "run": (
            "devlint.verify.run_script",
            "Run SCRIPT on the CPU as on a machine with DEVICE; stop at the first device bug.",
        ),
        "server": (
            "devlint.server",
            "Run the language server on stdin/stdout (for editors; needs the `lsp` extra).",
        ),
        "rules": ("devlint.rule_commands", "List every rule: code, name, default on/off, fix."),
        "rule": ("devlint.rule_commands", "Show the documentation of one rule (by code or name)."),
        "docs": (
            "devlint.rule_commands",
            "Write one page per rule, and an index, from the rules' documentation.",
        ),
        "explain": (
            "devlint.explain",
            "Show each diagnostic at PATH:LINE[:COL] with its chain of facts.",
        ),
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
            import importlib

            command = getattr(importlib.import_module(self.lazy_commands[name][0]), name)
            return command if isinstance(command, click.Command) else None
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands' table of ``--help``, the lazy ones from their help above."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in self.lazy_commands:
                command = click.Command(name, help=self.lazy_commands[name][1])
            else:
                command = self.commands[name]
            if not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _refuse_a_misspelled_command(word: str, commands: list[str]) -> None:
    """``devlint checkk``: not a path, and close to a command: say so (exit 2)."""
    if word.startswith("-") or "/" in word or "." in word or os.path.lexists(word):
        return
    import difflib

    close = difflib.get_close_matches(word, commands, n=1, cutoff=0.75)
    if close:
        _fail(f"`{word}` is neither a command nor a path; did you mean `{close[0]}`?")


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="devlint")
def main() -> None:
    """devlint: find and fix device bugs in PyTorch code (CUDA, MPS, CPU).

    Run `devlint PATH...` (same as `devlint check PATH...`) to check files.
    """


def top_level_help(prog_name: str, width: int) -> str:
    """``devlint --help`` as click prints it (without the final newline) for a usage line
    naming ``prog_name``, wrapped to ``width`` columns (what ``devlint.launch`` serves)."""
    with click.Context(main, info_name=prog_name, terminal_width=width, **main.context_settings):
        return main.get_help(click.get_current_context())


def _codes_option(name: str, help_text: str) -> Any:
    return click.option(name, metavar="CODES", multiple=True, help=help_text)


def _patterns_option(name: str, help_text: str) -> Any:
    return click.option(name, metavar="PATTERNS", multiple=True, help=help_text)


def _switch(name: str, help_text: str) -> Any:
    """``--name/--no-name``: None when neither is given (the configuration decides)."""
    return click.option(f"--{name}/--no-{name}", default=None, help=help_text)


_CHECK_OPTIONS = [
    click.argument("paths", nargs=-1, type=click.Path(path_type=Path, allow_dash=True)),
    _codes_option(
        "--select",
        "Rule codes or prefixes to enable (replaces the configured set); ALL for every rule.",
    ),
    _codes_option("--extend-select", "Rule codes or prefixes to enable on top of the selection."),
    _codes_option("--ignore", "Rule codes or prefixes to disable."),
    _codes_option("--fixable", "Rule codes or prefixes whose fixes may be applied (default: ALL)."),
    _codes_option("--unfixable", "Rule codes or prefixes whose fixes are never applied."),
    _codes_option("--extend-fixable", "Rule codes or prefixes fixable on top of `fixable`."),
    click.option(
        "--per-file-ignores",
        metavar="GLOB:CODES",
        multiple=True,
        help="Ignore CODES in files matching GLOB (replaces the configured table).",
    ),
    click.option(
        "--extend-per-file-ignores",
        metavar="GLOB:CODES",
        multiple=True,
        help="Like --per-file-ignores, on top of the configured table.",
    ),
    _patterns_option("--exclude", "Paths to skip (replaces the configured and default ones)."),
    _patterns_option("--extend-exclude", "Paths to skip on top of the excluded ones."),
    _switch("force-exclude", "Apply the excludes to paths named on the command line too."),
    _switch("respect-gitignore", "Skip what .gitignore files ignore (default: on)."),
    click.option(
        "--output-format",
        type=click.Choice(FORMATS),
        envvar="DEVLINT_OUTPUT_FORMAT",
        help=f"How to print the diagnostics (default: {DEFAULT_FORMAT}; `text` = `concise`).",
    ),
    click.option(
        "-o",
        "--output-file",
        type=click.Path(path_type=Path, dir_okay=False, writable=True),
        help="Write the report to this file instead of stdout.",
    ),
    click.option("--statistics", is_flag=True, help="Show counts per rule instead of each one."),
    click.option(
        "-e", "--exit-zero", is_flag=True, help="Exit with 0 even when diagnostics are found."
    ),
    click.option("-n", "--no-cache", is_flag=True, help="Do not read or write the result cache."),
    click.option(
        "--cache-dir",
        type=click.Path(path_type=Path, file_okay=False),
        help="Where to keep the result cache (default: .devlint_cache in the project root).",
    ),
    click.option(
        "-j",
        "--jobs",
        type=click.IntRange(min=1),
        default=None,
        help="Worker processes (default: one per core).",
    ),
    click.option(
        "--config",
        "config_file",
        type=click.Path(path_type=Path, dir_okay=False),
        help="Use this pyproject.toml or devlint.toml.",
    ),
    click.option("--isolated", is_flag=True, help="Ignore every configuration file."),
    click.option(
        "--target-torch",
        metavar="VERSION",
        help="The oldest torch the code supports, e.g. 2.6 (default: the project's torch>= "
        "dependency).",
    ),
    click.option("--stdin-filename", help="The name to report for source read from stdin (`-`)."),
    click.option(
        "--docs-url", help="Address of the rule pages: a base URL or a {code}/{name} template."
    ),
    click.option("-q", "--quiet", is_flag=True, help="Print diagnostics only, no summary."),
    click.option(
        "-s", "--silent", is_flag=True, help="Print nothing; the exit code says what was found."
    ),
    click.option(
        "--color/--no-color", default=None, help="Colour the output (default: when a terminal)."
    ),
    click.option(
        "-v",
        "--verbose",
        is_flag=True,
        help="Say which settings apply, how many files were checked (and cached), and how long "
        "it took; show tracebacks for internal errors.",
    ),
    click.option(
        "--fix", is_flag=True, help="Apply the safe fixes (unsafe ones too with --unsafe-fixes)."
    ),
    click.option(
        "--unsafe-fixes", is_flag=True, help="Also apply (or count as fixable) unsafe fixes."
    ),
    click.option(
        "--fix-only", is_flag=True, help="Apply fixes, and report nothing about what is left."
    ),
    click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; change nothing."),
    click.option("--show-fixes", is_flag=True, help="List the fixes applied (or available)."),
    click.option(
        "--exit-non-zero-on-fix", is_flag=True, help="Exit with 1 when a fix was applied, too."
    ),
    click.option(
        "--ignore-noqa", is_flag=True, help="Report what `# noqa` comments would silence."
    ),
    click.option(
        "--add-noqa", is_flag=True, help="Add `# noqa: CODE` to every line with a diagnostic."
    ),
    click.option(
        "--show-files", is_flag=True, help="List the files that would be checked, and stop."
    ),
    click.option("--show-settings", is_flag=True, help="Print the settings that apply, and stop."),
    click.option(
        "-w", "--watch", is_flag=True, help="Check again whenever a file changes (Ctrl-C stops)."
    ),
]


@record(frozen=True)
class CheckFlags:
    """The options of ``check`` as click parses them (one field per option)."""

    paths: tuple[Path, ...]
    select: tuple[str, ...]
    extend_select: tuple[str, ...]
    ignore: tuple[str, ...]
    fixable: tuple[str, ...]
    unfixable: tuple[str, ...]
    extend_fixable: tuple[str, ...]
    per_file_ignores: tuple[str, ...]
    extend_per_file_ignores: tuple[str, ...]
    exclude: tuple[str, ...]
    extend_exclude: tuple[str, ...]
    force_exclude: bool | None
    respect_gitignore: bool | None
    output_format: str | None
    output_file: Path | None
    statistics: bool
    exit_zero: bool
    no_cache: bool
    cache_dir: Path | None
    jobs: int | None
    config_file: Path | None
    isolated: bool
    target_torch: str | None
    stdin_filename: str | None
    docs_url: str | None
    quiet: bool
    silent: bool
    color: bool | None
    verbose: bool
    fix: bool
    unsafe_fixes: bool
    fix_only: bool
    diff: bool
    show_fixes: bool
    exit_non_zero_on_fix: bool
    ignore_noqa: bool
    add_noqa: bool
    show_files: bool
    show_settings: bool
    watch: bool

    @property
    def fix_mode(self) -> FixMode | None:
        from devlint.diagnostics import FixMode

        if self.fix or self.fix_only or self.diff:
            return FixMode(unsafe=self.unsafe_fixes, write=not self.diff)
        return None

    def request(self) -> LintRequest:
        from devlint.api import LintRequest, Overrides

        overrides = Overrides(
            self.select,
            self.extend_select,
            self.ignore,
            fixable=self.fixable,
            unfixable=self.unfixable,
            extend_fixable=self.extend_fixable,
            exclude=self.exclude or None,
            extend_exclude=self.extend_exclude,
            per_file_ignores=self.per_file_ignores or None,
            extend_per_file_ignores=self.extend_per_file_ignores,
            respect_gitignore=self.respect_gitignore,
            force_exclude=self.force_exclude,
            ignore_noqa=self.ignore_noqa,
            docs_url=self.docs_url,
            target_torch=self.target_torch,
        )
        return LintRequest(
            self.paths,
            self.config_file,
            overrides,
            fix=self.fix_mode,
            stdin_filename=self.stdin_filename,
            jobs=self.jobs,
            use_cache=not self.no_cache,
            cache_dir=self.cache_dir,
            show_progress=sys.stderr.isatty() and not self.quiet and not self.watch,
            isolated=self.isolated,
        )


def _with_options(command: Callable[..., None]) -> Callable[..., None]:
    for option in reversed(_CHECK_OPTIONS):
        command = option(command)
    return command


@main.command("check")
@_with_options
def check(**options: Any) -> None:
    """Check PATHS (default: the current directory; `-` reads stdin)."""
    flags = CheckFlags(**options)
    from devlint import log

    log.configure(flags.quiet or flags.silent, flags.verbose and not flags.silent)
    with _errors(flags.verbose):
        from devlint.api import files_to_check, request_settings

        _refuse_conflicts(flags)
        request = flags.request()
        settings = request_settings(request)
        if flags.show_settings:
            _show_settings(settings, flags)
        if flags.show_files:
            for path in files_to_check(request, settings):
                click.echo(str(path))
            sys.exit(0)
        if flags.watch:
            _watch(flags, request)
        outcome = _lint(request, settings)
    sys.exit(_report(flags, settings, outcome))


def _refuse_conflicts(flags: CheckFlags) -> None:
    reads_stdin = Path("-") in flags.paths
    if flags.add_noqa and reads_stdin:
        raise UserError("--add-noqa cannot change stdin; give file paths")
    if flags.add_noqa and flags.fix_mode:
        raise UserError("--add-noqa cannot be combined with --fix, --fix-only or --diff")
    if flags.watch and (reads_stdin or flags.diff or flags.add_noqa):
        raise UserError("--watch cannot be combined with stdin, --diff or --add-noqa")
    if flags.statistics and flags.output_format not in (None, *STATISTICS_FORMATS):
        formats = ", ".join(STATISTICS_FORMATS)
        raise UserError(f"--statistics cannot be written as {flags.output_format} (use {formats})")


@contextmanager
def _errors(verbose: bool) -> Iterator[None]:
    """Problems with the input: one line and exit 2; a devlint bug: the same, or a traceback."""
    from devlint.api import UsageError
    from devlint.config import ConfigError

    try:
        yield
    except (UserError, UsageError, ConfigError) as error:
        _fail(str(error))
    except Exception as error:  # a bug in devlint: one line, the traceback on request
        if verbose:
            import traceback

            traceback.print_exc()
        _fail(f"internal error: {type(error).__name__}: {error} (run with --verbose for details)")


def _lint(request: LintRequest, settings: Settings) -> LintOutcome:
    """``api.lint``, with what ``--verbose`` says about it."""
    import time

    from devlint import log
    from devlint.api import lint
    from devlint.runner import default_jobs

    where = settings.config.path
    if log.shows_info():
        log.logger().info(
            f"settings: {where if where is not None else 'no configuration file (defaults)'}"
        )
    started = time.perf_counter()
    outcome = lint(request, settings)
    seconds = time.perf_counter() - started
    noun = "file" if outcome.files_checked == 1 else "files"
    jobs = request.jobs or default_jobs()
    if log.shows_info():
        log.logger().info(
            f"checked {outcome.files_checked} {noun} in {seconds:.2f} s "
            f"({outcome.cache_hits} from the cache, {jobs} worker processes at most)"
        )
    return outcome


def _report(flags: CheckFlags, settings: Settings, outcome: LintOutcome) -> int:
    """Print what ``outcome`` holds as the flags ask; the exit code."""
    found, fixed = outcome.diagnostics, sum(outcome.applied.values())
    if flags.silent:
        return _silent(flags, outcome)
    if outcome.files_checked == 0 and not flags.quiet and not outcome.fixed_stdin:
        click.echo("warning: no Python files found under the given paths", err=True)
    if flags.add_noqa:
        return _add_noqa(found, flags.exit_zero)
    for problem in outcome.problems:
        click.echo(f"error: {problem}", err=True)
    if flags.diff:
        return _print_diff(outcome, flags.exit_zero, flags.quiet)
    if outcome.fixed_stdin is not None:
        sys.stdout.flush()
        sys.stdout.buffer.write(outcome.fixed_stdin)
        sys.stdout.buffer.flush()
    from devlint.docs import DEFAULT_DOCS_URL
    from devlint.report import ReportOptions, render

    fmt = flags.output_format or settings.config.output_format or DEFAULT_FORMAT
    with _output(flags, to_stderr=outcome.fixed_stdin is not None) as (out, color):
        options = ReportOptions(
            rules=_rule_infos(settings.unfixable),
            color=color,
            statistics=flags.statistics,
            show_fixes=flags.show_fixes,
            quiet=flags.quiet,
            unsafe_fixes=flags.unsafe_fixes,
            files_checked=outcome.files_checked,
            cwd=Path.cwd(),
            fixed=outcome.applied_per_file if flags.fix_mode else None,
            docs_url=settings.config.docs_url or DEFAULT_DOCS_URL,
            sources=_stdin_source(flags, outcome),
        )
        if flags.fix_only:
            if fmt in TEXT_FORMATS and not flags.quiet:
                from devlint.report.text_format import fix_only_lines

                out.writelines(line + "\n" for line in fix_only_lines(found, options))
            return 1 if outcome.problems or (flags.exit_non_zero_on_fix and fixed) else 0
        render(fmt, found, out, options)
    failed = bool(found) or bool(outcome.problems) or (flags.exit_non_zero_on_fix and fixed > 0)
    return 1 if failed and not flags.exit_zero else 0


def _silent(flags: CheckFlags, outcome: LintOutcome) -> int:
    """``--silent``: the fixed stdin (a filter must still pass it on) and the exit code."""
    if outcome.fixed_stdin is not None:
        sys.stdout.buffer.write(outcome.fixed_stdin)
    if flags.add_noqa:
        return _add_noqa(outcome.diagnostics, flags.exit_zero, say=False)
    fixed = sum(outcome.applied.values())
    if flags.fix_only:
        return 1 if outcome.problems or (flags.exit_non_zero_on_fix and fixed) else 0
    failed = outcome.diagnostics or outcome.problems or (flags.exit_non_zero_on_fix and fixed)
    if flags.diff:
        failed = fixed or outcome.problems
    return 1 if failed and not flags.exit_zero else 0


def _stdin_source(flags: CheckFlags, outcome: LintOutcome) -> dict[str, str]:
    """The Python source read from stdin, by the name it is reported under."""
    from devlint.source import UnreadableSource, decode

    display = flags.stdin_filename or "-"
    if outcome.stdin is None or display.endswith(".ipynb"):
        return {}
    try:
        return {display: decode(outcome.stdin).text}
    except UnreadableSource:  # reported as DEV900, with no line to show
        return {}


@contextmanager
def _output(flags: CheckFlags, to_stderr: bool) -> Iterator[tuple[TextIO, bool]]:
    """Where the report goes (``-o FILE``, stderr under stdin fixing, else stdout) and
    whether it is coloured."""
    if flags.output_file is not None:
        try:
            with open(flags.output_file, "w", encoding="utf-8") as out:
                yield out, bool(flags.color)
        except OSError as error:
            _fail(f"cannot write {flags.output_file}: {error.strerror or error}")
        return
    stream = sys.stderr if to_stderr else sys.stdout
    color = flags.color
    if color is None:
        color = stream.isatty() and "NO_COLOR" not in os.environ
    yield stream, color


def _print_diff(outcome: LintOutcome, exit_zero: bool, quiet: bool) -> int:
    """``--diff``: the diff on stdout, a summary on stderr; 1 when there is something to fix."""
    sys.stdout.write("".join(outcome.diffs))
    count = sum(outcome.applied.values())
    if not quiet:
        noun = "error" if count == 1 else "errors"
        click.echo(f"Would fix {count} {noun}." if count else "No errors would be fixed.", err=True)
    return 1 if (count or outcome.problems) and not exit_zero else 0


_UNFIXABLE_HELP = "No automatic fix: fixes of {code} are turned off (`fixable` / `unfixable`)"


def _rule_infos(unfixable: frozenset[str]) -> Mapping[str, RuleInfo]:
    """What the report says about each rule; ``unfixable``: codes whose fixes are off."""
    from devlint.rule import all_rules

    return _RuleInfos(all_rules(), unfixable)


class _RuleInfos(Mapping[str, "RuleInfo"]):
    """Every rule's ``RuleInfo``, each built when the report first asks for it: a report
    names a few rules, and the no-fix help of each comes from parsing its documentation."""

    def __init__(self, rules: Mapping[str, type[Rule]], unfixable: frozenset[str]) -> None:
        self._rules, self._unfixable = rules, unfixable
        self._built: dict[str, RuleInfo] = {}

    def __getitem__(self, code: str) -> RuleInfo:
        info = self._built.get(code)
        if info is None:
            from devlint.report import RuleInfo

            rule = self._rules[code]
            info = self._built[code] = RuleInfo(
                code,
                rule.name,
                rule.summary,
                rule.fix is not None,
                rule.default,
                _UNFIXABLE_HELP.format(code=code)
                if rule.fix is not None and code in self._unfixable
                else rule.no_fix_help(),
            )
        return info

    def __iter__(self) -> Iterator[str]:
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)


def _add_noqa(found: list[Diagnostic], exit_zero: bool, say: bool = True) -> int:
    from devlint.noqa import add_noqa as add_noqa_directives

    result = add_noqa_directives(found)
    for problem in result.problems if say else ():
        click.echo(problem, err=True)
    noun = "directive" if result.added == 1 else "directives"
    if say:
        click.echo(f"Added {result.added} noqa {noun}.", err=True)
    return 1 if result.not_added and not exit_zero else 0


def _show_settings(settings: Settings, flags: CheckFlags) -> NoReturn:
    """``--show-settings``: the resolved settings, as ``key = value`` lines (TOML values)."""
    from devlint.settings_view import settings_lines

    first = next((path for path in flags.paths if path != Path("-")), Path("."))
    fmt = flags.output_format or settings.config.output_format or DEFAULT_FORMAT
    for line in settings_lines(settings, first, fmt):
        click.echo(line)
    sys.exit(0)


def _watch(flags: CheckFlags, request: LintRequest) -> NoReturn:
    """``--watch``: check, then check again whenever a checked file (or the config) changes."""
    from devlint.api import files_to_check, request_settings
    from devlint.watch import watch

    def files() -> list[Path]:
        with _errors(flags.verbose):
            settings = request_settings(request)
            config = [settings.config.path] if settings.config.path is not None else []
            return [*files_to_check(request, settings), *config]

    def run() -> None:
        with _errors(flags.verbose):
            settings = request_settings(request)
            _report(flags, settings, _lint(request, settings))
            sys.stdout.flush()

    watch(files, run, lambda text: click.echo(text, err=True))


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)
