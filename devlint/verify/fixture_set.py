"""Finding the rule fixtures (shipped inside the package) and devlint's live fixes of them."""

from __future__ import annotations

import importlib
import importlib.resources
import re
import tempfile
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path

from devlint.verify.expectations import ExpectFile, parse_expect_toml

RULE_FOLDER = re.compile(r"^[A-Z]+[0-9]+$")
FIXED_SUFFIX = ".fixed.py"


class FixtureError(Exception):
    """The fixture tree cannot be used at all (a usage error: exit 2)."""


@dataclass(slots=True)
class RuleFixtures:
    """One rule's folder: its programs, their fixed versions and declared expectations."""

    code: str
    folder: Path
    programs: list[Path] = field(default_factory=list)  # bad_*.py and good_*.py
    fixed: list[Path] = field(default_factory=list)  # bad_*.fixed.py
    expect: ExpectFile = field(default_factory=ExpectFile)
    problems: list[str] = field(default_factory=list)

    @property
    def bad(self) -> list[Path]:
        return [path for path in self.programs if path.name.startswith("bad_")]


def shipped_fixture_root(stack: ExitStack) -> Path:
    """The fixture tree installed as ``devlint.fixtures`` (a checkout or a wheel).

    A zipped install is copied to a temporary folder that lives as long as ``stack``.
    """
    try:
        tree = importlib.resources.files("devlint.fixtures")
    except ModuleNotFoundError:
        raise FixtureError("the fixtures are not installed (package devlint.fixtures)") from None
    if isinstance(tree, Path):
        return tree
    target = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="devlint-fixtures-")))
    _copy_tree(tree, target)
    return target


def _copy_tree(source: Traversable, target: Path) -> None:
    for item in source.iterdir():
        if item.is_dir():
            (target / item.name).mkdir()
            _copy_tree(item, target / item.name)
        elif item.name.endswith((".py", ".toml")):
            (target / item.name).write_bytes(item.read_bytes())


def load_rules(root: Path, codes: Sequence[str] = ()) -> list[RuleFixtures]:
    """Every rule folder under ``root`` (or only ``codes``), with its problems listed."""
    if not root.is_dir():
        raise FixtureError(f"fixture folder not found: {root}")
    folders = {p.name: p for p in root.iterdir() if p.is_dir() and RULE_FOLDER.match(p.name)}
    if not folders:
        raise FixtureError(f"no rule fixtures in {root} (expected folders such as DEV001/)")
    wanted = sorted({code.strip().upper() for code in codes if code.strip()}) or sorted(folders)
    unknown = [code for code in wanted if code not in folders]
    if unknown:
        raise FixtureError(
            f"no fixtures for {', '.join(unknown)} in {root} (there are: {', '.join(sorted(folders))})"
        )
    return [load_rule(folders[code]) for code in wanted]


def load_rule(folder: Path) -> RuleFixtures:
    rule = RuleFixtures(folder.name, folder)
    for path in sorted(folder.glob("*.py")):
        if not path.name.startswith(("bad_", "good_")):
            continue  # helpers a program may import
        (rule.fixed if path.name.endswith(FIXED_SUFFIX) else rule.programs).append(path)
    expect = folder / "expect.toml"
    where = f"{folder.name}/expect.toml"
    if not expect.is_file():
        rule.problems.append(f"{where}: missing (every program needs declared outcomes)")
        return rule
    try:
        text = expect.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        rule.problems.append(f"{where}: cannot be read: {error}")
        return rule
    rule.expect = parse_expect_toml(text, where)
    rule.problems.extend(rule.expect.problems)
    names = {path.name for path in rule.programs}
    fixed = {path.name for path in rule.fixed}
    for path in rule.programs:
        if path.name not in rule.expect.entries and not _rejected(rule, path.name):
            rule.problems.append(f'{where}: no entry for {path.name} (add ["{path.name}"])')
    for name in rule.expect.entries:
        if name in fixed:
            rule.problems.append(
                f'{where} ["{name}"]: fixed programs need no entry: they must run clean everywhere'
            )
        elif name not in names:
            rule.problems.append(f'{where} ["{name}"]: no such program in {folder.name}/')
    for path in rule.fixed:
        original = path.name[: -len(FIXED_SUFFIX)] + ".py"
        if original not in names:
            rule.problems.append(f"{folder.name}/{path.name}: no {original} beside it")
    return rule


def _rejected(rule: RuleFixtures, name: str) -> bool:
    """An entry that exists but was invalid already has its own problem line."""
    return any(f'["{name}"]' in problem for problem in rule.expect.problems)


# --- live fixes ------------------------------------------------------------------------------

Fixer = Callable[[str, Path], str]


def live_fixer() -> Fixer | None:
    """What ``devlint --fix --unsafe-fixes`` makes of a fixture (``devlint.testing``)."""
    from devlint.testing import fix_fixture

    return fix_fixture


def fixed_source(path: Path) -> str | None:
    """What ``devlint --fix`` makes of ``path``; None when fixing is unavailable."""
    fixer = live_fixer()
    if fixer is None:
        return None
    return fixer(path.read_text(encoding="utf-8"), path)


def write_live_fix(text: str, original: Path, workdir: Path) -> Path:
    """Save a live-fixed program under ``workdir``, keeping the original's file name."""
    target = workdir / "live-fix" / original.parent.name / original.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target
