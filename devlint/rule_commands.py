"""``devlint rules``, ``devlint rule CODE`` and ``devlint docs``: the rules' documentation.

Loaded only when one of them runs (see ``cli.DefaultGroup.lazy_commands``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from devlint.config import ConfigError, find_config, load_config
from devlint.docs import (
    DEFAULT_DOCS_URL,
    DOC_FORMATS,
    readme_with_rules,
    rule_markdown,
    rule_url,
    write_docs,
)
from devlint.rule import Rule, all_rules


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


@click.command("rules")
@click.option(
    "--output-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="A table, or JSON objects (code, name, summary, default, fix, url, explanation).",
)
def rules(output_format: str) -> None:
    """List every rule: code, name, default on/off, fix."""
    registry = all_rules()
    if output_format == "json":
        template = _docs_url_of_cwd()
        click.echo(json.dumps([_rule_json(r, template) for r in registry.values()], indent=2))
        return
    width = max(len(r.name) for r in registry.values())
    click.echo(f"{'code':<7} {'name':<{width}} {'default':<8} {'fix':<7} summary")
    for code, r in registry.items():
        default = "on" if r.default else "off"
        fix = r.fix or "-"
        click.echo(f"{code:<7} {r.name:<{width}} {default:<8} {fix:<7} {r.summary}")


@click.command("rule")
@click.argument("code")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text")
def rule(code: str, output_format: str) -> None:
    """Show the documentation of one rule (by code or name)."""
    registry = all_rules()
    wanted = code.upper()
    match = registry.get(wanted) or next((r for r in registry.values() if r.name == code), None)
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


def _rule_json(found: type[Rule], docs_url: str) -> dict[str, Any]:
    return {
        "code": found.code,
        "name": found.name,
        "summary": found.summary,
        "default": found.default,
        "fix": found.fix,
        "url": rule_url(docs_url, found.code, found.name),
        "explanation": found.documentation(),
    }


def _docs_url_of_cwd() -> str:
    """The ``docs-url`` of the configuration that applies here, or the default."""
    try:
        return load_config(find_config(Path.cwd())).docs_url or DEFAULT_DOCS_URL
    except ConfigError as error:
        _fail(str(error))


# Where `devlint docs` writes without -o: the repository's docs/rules/ for Markdown, and
# site/ (mkdocs' output folder, the README's example) for static HTML.
DEFAULT_DOCS_DIRECTORY = {"markdown": Path("docs", "rules"), "html": Path("site")}


@click.command("docs")
@click.option(
    "-o",
    "--output",
    "directory",
    type=click.Path(path_type=Path, file_okay=False),
    help="The directory to write the pages into, created when missing (default: site/ for "
    "HTML, docs/rules/ for Markdown).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(DOC_FORMATS),
    default="html",
    show_default=True,
    help="Static HTML pages, or Markdown (as in the repository's docs/rules/).",
)
@click.option(
    "--readme",
    "readmes",
    multiple=True,
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Also rewrite the rules table of this Markdown file, between its marker comments "
    "(repeatable: README.md, docs/design.md).",
)
def docs(directory: Path | None, fmt: str, readmes: tuple[Path, ...]) -> None:
    """Write one page per rule, and an index, from the rules' documentation.

    The pages are named after the rules (`unused-noqa.html`): serve DIR anywhere and
    set `docs-url` to its address so that diagnostics link to it.
    """
    directory = directory or DEFAULT_DOCS_DIRECTORY[fmt]
    try:
        written = write_docs(directory, all_rules(), fmt)
    except OSError as error:
        _fail(f"cannot write the docs into {directory}: {error.strerror or error}")
    click.echo(
        f"Wrote {len(written)} pages to {directory}{os.sep} (index: {written[-1]}).", err=True
    )
    for readme in readmes:
        try:
            text = readme_with_rules(readme.read_text(encoding="utf-8"), all_rules())
            readme.write_text(text, encoding="utf-8", newline="\n")
        except (OSError, ValueError) as error:
            _fail(f"cannot update the rules table of {readme}: {error}")
        click.echo(f"Updated the rules table of {readme}.", err=True)
