"""Rule pages: addresses, ``devlint docs`` (HTML and Markdown), and ``docs/rules/`` kept fresh."""

from __future__ import annotations

import json
import os
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import run_devlint

from devlint.docs import DEFAULT_DOCS_URL, rule_url, write_docs
from devlint.rule import all_rules

ROOT = Path(__file__).resolve().parent.parent


def devlint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_devlint(*args, cwd=cwd)


@pytest.mark.parametrize(
    ("template", "url"),
    [
        ("https://x.org/r/{code}", "https://x.org/r/DEV003"),
        ("https://x.org/{name}/", "https://x.org/unguarded-cuda/"),
        ("https://x.org/rules/", "https://x.org/rules/unguarded-cuda.html"),  # a base URL
        ("https://x.org/rules", "https://x.org/rules/unguarded-cuda.html"),
    ],
)
def test_rule_url(template: str, url: str) -> None:
    assert rule_url(template, "DEV003", "unguarded-cuda") == url


def test_the_default_address_is_a_page_in_this_repository() -> None:
    prefix = "https://github.com/devlint/devlint/blob/main/"
    for code, rule in all_rules().items():
        url = rule_url(DEFAULT_DOCS_URL, code, rule.name)
        assert url.startswith(prefix)
        assert (ROOT / url.removeprefix(prefix)).is_file(), url


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.headings: list[str] = []
        self._in_h1 = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_h1 = tag == "h1"
        self.links += [value for name, value in attrs if tag == "a" and name == "href" and value]

    def handle_data(self, data: str) -> None:
        if self._in_h1:
            self.headings.append(data)
            self._in_h1 = False


def test_html_pages_one_per_rule_and_an_index_linking_them(tmp_path: Path) -> None:
    rules = all_rules()
    written = write_docs(tmp_path, rules, "html")
    assert sorted(p.name for p in written) == sorted(
        [f"{rule.name}.html" for rule in rules.values()] + ["index.html"]
    )
    index = _Links()
    index.feed((tmp_path / "index.html").read_text(encoding="utf-8"))
    assert index.links == [f"{rule.name}.html" for rule in rules.values()]
    page = _Links()
    page.feed((tmp_path / "unguarded-cuda.html").read_text(encoding="utf-8"))
    assert page.headings == ["unguarded-cuda (DEV003)"]
    text = (tmp_path / "unguarded-cuda.html").read_text(encoding="utf-8")
    assert "<h2>Why is this bad?</h2>" in text and "<script" not in text


def test_docs_command_writes_the_site(tmp_path: Path) -> None:
    result = devlint("docs", "--output", "site", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "unused-noqa.html").is_file()
    assert (
        result.stderr
        == f"Wrote {len(all_rules()) + 1} pages to site{os.sep} (index: {Path('site', 'index.html')}).\n"
    )
    (tmp_path / "file").write_text("")
    refused = devlint("docs", "--output", "file/site", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.startswith("error: cannot write the docs")


def test_docs_without_output_writes_to_the_default_folder(tmp_path: Path) -> None:
    """No -o: HTML goes to site/, Markdown to docs/rules/ (as this repository keeps it)."""
    html = devlint("docs", cwd=tmp_path)
    assert html.returncode == 0, html.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert html.stderr.startswith(f"Wrote {len(all_rules()) + 1} pages to site{os.sep} ")
    markdown = devlint("docs", "--format", "markdown", cwd=tmp_path)
    assert markdown.returncode == 0, markdown.stderr
    assert (tmp_path / "docs" / "rules" / "README.md").is_file()
    assert f"pages to {Path('docs', 'rules')}{os.sep} " in markdown.stderr


def test_committed_markdown_docs_are_up_to_date(tmp_path: Path) -> None:
    """docs/rules/ is generated: after changing a rule's documentation, regenerate it with
    `devlint docs --format markdown` (docs/rules/ is its default folder)."""
    write_docs(tmp_path, all_rules(), "markdown")
    generated = {p.name: p.read_text(encoding="utf-8") for p in tmp_path.iterdir()}
    committed = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "docs" / "rules").iterdir()}
    assert committed == generated, "docs/rules/ is stale: run `devlint docs --format markdown`"


def test_rules_as_json_link_to_the_configured_pages(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.devlint]\ndocs-url = "https://lint.example.org/{code}"\n'
    )
    result = devlint("rules", "--output-format", "json", cwd=tmp_path)
    rules = json.loads(result.stdout)
    assert [row["code"] for row in rules] == list(all_rules())
    first = rules[0]
    assert set(first) == {"code", "name", "summary", "default", "fix", "url", "explanation"}
    assert first["url"] == f"https://lint.example.org/{first['code']}"
    assert "## What it does" in first["explanation"]
    one = json.loads(devlint("rule", "DEV003", "--output-format", "json", cwd=tmp_path).stdout)
    assert one == next(row for row in rules if row["code"] == "DEV003")


def test_readme_rules_table_is_generated_from_the_rules() -> None:
    """README.md's rules table is generated: after adding or changing a rule, regenerate it
    (and docs/rules/, docs/design.md) with `devlint docs --output docs/rules --format markdown
    --readme README.md --readme docs/design.md`."""
    from devlint.docs import readme_with_rules

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme_with_rules(readme, all_rules()) == readme, (
        "README.md's rules table is stale: run "
        "`devlint docs --output docs/rules --format markdown --readme README.md --readme docs/design.md`"
    )


def test_docs_command_rewrites_a_readme_table(tmp_path: Path) -> None:
    from devlint.docs import README_END, README_START

    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{README_START}\n| stale |\n{README_END}\n\nafter\n")
    result = devlint("docs", "-o", "site", "--readme", "README.md", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = readme.read_text()
    assert "| stale |" not in text and "| DEV001 | numpy-on-accelerator |" in text
    assert text.endswith(f"{README_END}\n\nafter\n")
    (tmp_path / "plain.md").write_text("no markers\n")
    refused = devlint("docs", "-o", "site", "--readme", "plain.md", cwd=tmp_path)
    assert refused.returncode == 2 and "no rules table markers" in refused.stderr


def test_a_page_states_the_target_its_examples_need() -> None:
    """DEV017's Example is reported only from torch 2.9 (torch.accelerator.memory): its page
    says so, and the examples are checked at that target (``devlint.testing``)."""
    from dataclasses import replace

    from devlint.docs import rule_markdown
    from devlint.testing import example_diagnostics
    from devlint.torch_target import DEFAULT_TARGET_TORCH

    for rule in all_rules().values():
        if rule.example_target_torch is not None:
            assert f'`target-torch = "{rule.example_target_torch}"`' in rule_markdown(rule)
    rule = all_rules()["DEV017"]
    example = next(e for e in rule.examples() if e.origin == "Example 1")
    assert example_diagnostics(rule, example)  # at the stated target
    at_default = type("AtDefault", (rule,), {"example_target_torch": None})
    assert DEFAULT_TARGET_TORCH < (2, 9)
    assert example_diagnostics(at_default, replace(example)) == []


def test_design_document_lists_the_rules_and_cites_no_spec() -> None:
    """docs/design.md's catalogue is generated (`devlint docs --readme docs/design.md`), and
    code and docs cite its sections rather than an external SPEC."""
    import re

    from devlint.docs import readme_with_rules

    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    assert readme_with_rules(design, all_rules()) == design, (
        "run `devlint docs --readme docs/design.md`"
    )
    citing = [
        path.relative_to(ROOT).as_posix()
        for folder in ("devlint", "rules", "tests", "scripts", "docs", "fixtures")
        for path in (ROOT / folder).rglob("*")
        if path.suffix in (".py", ".md")
        and re.search(r"\bSPEC\b(?!S)[ :§]", path.read_text("utf-8"))
    ]
    assert sorted(set(citing)) == []
    assert not re.search(r"\bSPEC §", (ROOT / "README.md").read_text(encoding="utf-8"))
