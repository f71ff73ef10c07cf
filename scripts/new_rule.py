"""Scaffold a new rule: ``python scripts/new_rule.py DEV020 some-name``.

Writes the three places a rule lives in (CONTRIBUTING.md, "Adding a rule"):

- ``rules/dev020_some_name.py``: the rule class, its documentation and a placeholder
  ``check`` (it flags calls of ``torch.example_api``: replace it);
- ``fixtures/DEV020/``: four ``bad_*.py`` and four ``good_*.py`` placeholder programs and
  their ``expect.toml`` (what each does at run time, per device);
- the generated documentation: ``docs/rules/`` and the rules tables of ``README.md`` and
  ``docs/design.md``, as ``devlint docs --output docs/rules --format markdown --readme
  README.md --readme docs/design.md`` writes them.

Everything else (``devlint verify``'s virtual columns, ``devlint run``'s error table, the
tests) reads the rule's class and fixtures folder. ``--root DIR`` scaffolds into another
copy of the repository (the tests use it).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path

from devlint.docs import readme_with_rules, write_docs
from devlint.rule import Rule, all_rules

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = 4  # tests/test_fixtures.py asks for at least four bad and four good programs

MODULE = '''from collections.abc import Iterator

from devlint.analysis.facts import FileFacts
from devlint.rule import Finding, Rule

# TODO: what the rule looks for. The scaffold flags calls of these qualified names.
FLAGGED = frozenset({{"torch.example_api"}})


class {cls}(Rule):
    """
    ## What it does
    TODO: Checks for calls of `torch.example_api()`.

    ## Why is this bad?
    TODO: what goes wrong, on which device, with PyTorch's own error message.

    ## Example
    ```python
    torch.example_api()
    ```

    ## Use instead
    ```python
    torch.other_api()
    ```

    ## Fix safety
    No fix: TODO (or set `fix = "safe"` / `"unsafe"` and return a `FixPlan`).
    """

    code = "{code}"
    name = "{name}"
    summary = "TODO: what the rule flags, in one line"
    default = False  # TODO: on by default once its fixtures and verify agree
    # What `devlint verify` and `devlint run` need (see devlint/rule.py): virtual_note,
    # virtual_at_flagged_line, runtime_errors (devlint.device_errors), runtime_rank.

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if call.callee in FLAGGED:
                yield Finding(call.node, "TODO: the message")
'''

BAD = "import torch\n\n# TODO: a realistic program with the bug.\ntorch.example_api()  # expect: {code}\n"
GOOD = "import torch\n\n# TODO: code that looks like the bug but is correct.\ntorch.other_api()\n"
EXPECT_HEADER = (
    "# Runtime expectations for {code} ({name}). See fixtures/README.md.\n"
    "# TODO: what each program does on each device (the placeholders fail everywhere).\n"
)
EXPECT_ENTRY = (
    '\n["{file}"]\ncpu  = {{ raises = "AttributeError" }}\n'
    'cuda = {{ raises = "AttributeError" }}\nmps  = {{ raises = "AttributeError" }}\n'
)


def class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("-"))


def scaffold(code: str, name: str, root: Path) -> list[Path]:
    """Write the rule's module and fixtures under ``root``, regenerate its docs; return the
    files written."""
    if not re.fullmatch(r"DEV\d{3}", code):
        raise SystemExit(f"error: expected a code such as DEV020, got {code!r}")
    if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name):
        raise SystemExit(f"error: expected a kebab-case name such as some-name, got {name!r}")
    known = all_rules()
    if code in known or any(rule.name == name for rule in known.values()):
        raise SystemExit(f"error: {code} or {name} exists already")
    module = root / "rules" / f"{code.lower()}_{name.replace('-', '_')}.py"
    folder = root / "fixtures" / code
    if module.exists() or folder.exists():
        raise SystemExit(f"error: {module} or {folder} exists already")
    written = [_write(module, MODULE.format(cls=class_name(name), code=code, name=name))]
    folder.mkdir(parents=True)
    expect = EXPECT_HEADER.format(code=code, name=name)
    for kind, text in (("bad", BAD), ("good", GOOD)):
        for number in range(1, EXAMPLES + 1):
            file = f"{kind}_example_{number}.py"
            written.append(_write(folder / file, text.format(code=code)))
            expect += EXPECT_ENTRY.format(file=file)
    written.append(_write(folder / "expect.toml", expect))
    rules = _with_rule(known, code, module)
    written += write_docs(root / "docs" / "rules", rules, "markdown")
    for readme in (root / "README.md", root / "docs" / "design.md"):  # their rules tables
        if readme.is_file():
            text = readme_with_rules(readme.read_text(encoding="utf-8"), rules)
            written.append(_write(readme, text))
    return written


def _with_rule(known: dict[str, type[Rule]], code: str, module: Path) -> dict[str, type[Rule]]:
    """The installed rules plus the new one, loaded from its file (``root`` may be a copy)."""
    spec = importlib.util.spec_from_file_location(f"devlint.rules.{module.stem}", module)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = loaded
    spec.loader.exec_module(loaded)
    new = next(
        value
        for value in vars(loaded).values()
        if isinstance(value, type) and issubclass(value, Rule) and value.__module__ == spec.name
    )
    return dict(sorted({**known, code: new}.items()))


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="\n")
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("code", help="the new rule's code, e.g. DEV020")
    parser.add_argument("name", help="its kebab-case name, e.g. some-name")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this)")
    args = parser.parse_args(argv)
    for path in scaffold(args.code, args.name, args.root):
        print(path.relative_to(args.root))


if __name__ == "__main__":
    main()
