"""Fuzzing: devlint never crashes, and its fixes never break code (docs/design.md §5, §7 robustness).

Two sources of input:

- programs generated from Python's grammar and from libcst's node types (hypothesmith);
- torch-flavoured mutations of the rule fixtures (``fixtures/DEV*/bad_*.py``,
  ``good_*.py``): renamed identifiers, swapped ``.cuda()`` / ``.to("cuda")`` /
  ``.to(device)``, statements wrapped in ``if torch.cuda.is_available():`` (and other
  blocks), ``import torch as T`` aliases, added and removed ``# noqa`` comments, inserted
  device snippets, CRLF / CR line endings, tabs and spaces, form feeds, and dropped or
  truncated lines that make the code invalid.

Properties: ``check_text`` never raises, reports only known codes and never DEV902 (an
internal error; except for the valid code libcst refuses, such as ``x is not.0``); ``fix_text(..., unsafe=True)`` output parses whenever the input did, a
second ``fix_text`` changes nothing, a text where no fix applied comes back unchanged, and
no comment the user wrote is lost (other than a ``# noqa`` directive); fixed notebooks keep
their JSON, outputs and magics, and a second fix changes no byte.

The default profile is small (a few dozen examples per test, deterministic) and runs with
the suite. The campaign profile draws 2 000 random examples per test (over 10 000 in all;
about 15 minutes on two cores):

    HYPOTHESIS_PROFILE=campaign python -m pytest tests/test_fuzz.py -p no:cacheprovider

A failure prints the shrunk input and a ``@reproduce_failure`` blob; add the input below
as a regression test.
"""

from __future__ import annotations

import ast
import io
import itertools
import json
import keyword
import os
import re
import tempfile
import tokenize
from collections.abc import Callable
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devlint.api import FixMode, lint_path
from devlint.engine import CheckOptions, check_text
from devlint.fixing import fix_text
from devlint.rule import all_rules

settings.register_profile(
    "devlint-fuzz",
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
settings.register_profile(
    "campaign",
    max_examples=2000,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=list(HealthCheck),
)
_PROFILE_NAME = os.environ.get("HYPOTHESIS_PROFILE", "devlint-fuzz")
try:
    FUZZ = settings.get_profile(_PROFILE_NAME)
except Exception:  # another project's profile name: ours stays small
    FUZZ = settings.get_profile("devlint-fuzz")

# hypothesmith compiles what it generates: `"a" ()` is legal but warns.
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::SyntaxWarning")]

RULES = all_rules()
KNOWN = frozenset(RULES)
DEFAULTS = CheckOptions(frozenset(code for code, rule in RULES.items() if rule.default))
EVERYTHING = CheckOptions(KNOWN)
OPTIONS = st.sampled_from(
    [
        DEFAULTS,
        EVERYTHING,
        CheckOptions(KNOWN, accelerator_api="torch.accelerator"),
        CheckOptions(KNOWN, guard_functions=("utils.has_gpu",), accelerator_api="three-way"),
    ]
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PROGRAMS = sorted(
    path
    for path in FIXTURES.glob("DEV*/*.py")
    if path.name.startswith(("bad_", "good_")) and not path.name.endswith(".fixed.py")
)
SOURCES = {path.name: path.read_text(encoding="utf-8") for path in PROGRAMS}


# -- properties


def parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def comments(text: str) -> list[str]:
    """The comments of ``text`` that are not noqa directives (empty when it does not tokenize)."""
    found = []
    try:
        lines = io.StringIO(re.sub(r"\r\n?", "\n", text))  # tokenize splits at \n only
        for token in tokenize.generate_tokens(lines.readline):
            if token.type == tokenize.COMMENT and not re.search(r"noqa", token.string, re.I):
                found.append(token.string.rstrip())
    except (tokenize.TokenError, SyntaxError, ValueError):
        return []
    return found


def assert_checks_cleanly(text: str, options: CheckOptions) -> None:
    diagnostics = check_text(text, "t.py", options)
    codes = {diagnostic.code for diagnostic in diagnostics}
    assert codes <= KNOWN
    assert codes <= options.codes
    internal = [d.message for d in diagnostics if d.code == "DEV902"]
    assert not internal, internal


def assert_fixes_cleanly(text: str, options: CheckOptions, unsafe: bool = True) -> str:
    result = fix_text(text, "t.py", options, unsafe)
    if not result.applied:
        assert result.text == text, "no fix applied, yet the text changed"
        return result.text
    assert result.text != text
    if parses(text):
        assert parses(result.text), f"fixed code does not parse:\n{result.text}"
        lost = [c for c in comments(text) if c not in comments(result.text)]
        assert not lost, f"comments lost: {lost}\n{result.text}"
    again = fix_text(result.text, "t.py", options, unsafe)
    assert again.text == result.text, f"not idempotent: {dict(again.applied)}\n{result.text}"
    assert not again.applied
    return result.text


# -- mutations of the fixture programs

Draw = Callable[[st.SearchStrategy], object]

NEW_NAMES = [
    "device",
    "dev",
    "torch",
    "T",
    "cuda",
    "x",
    "model",
    "batch",
    "np",
    "self",
    "loader",
    "data",
    "target",
    "nn",
    "_d",
    "device_1",
    "available",
    "is_available",
    "to",
    "numpy",
]
MOVES = [
    ".cuda()",
    '.to("cuda")',
    ".to(device)",
    ".cuda(0)",
    '.to("cuda:0")',
    ".to('cuda')",
    ".cuda(non_blocking=True)",
    '.to("cuda", non_blocking=True)',
    ".cpu()",
    '.to("mps")',
    '.to(torch.device("cuda"))',
    ".to(dev)",
    ".cuda(device=0)",
    ".numpy()",
    ".to(x.device)",
]
GUARDS = [
    "if torch.cuda.is_available():",
    "if not torch.cuda.is_available():",
    "if T.cuda.is_available():",
    "if args.cuda:",
    "if torch.cuda.device_count() > 0:",
    "if use_cuda and torch.cuda.is_available():",
    "if torch.backends.mps.is_available():",
    "if device.type == 'cuda':",
    "with torch.no_grad():",
    "for _ in range(2):",
    "def main():",
    "try:",
    "while torch.cuda.is_available():",
    "class Holder:",
    "async def run():",
    "if __name__ == '__main__':",
]
IMPORTS = [
    "import torch as T",
    "import torch",
    "from torch import cuda",
    "import torch.nn as tnn",
    "import numpy as np",
    "from torch import *",
    "import torch.cuda",
    "from torch.utils.data import DataLoader as DL",
    "torch = None",
    "import devlint_utils as torch",
]
SNIPPETS = [
    "x = torch.zeros(3).cuda()",
    "print(x.numpy())",
    'device = "cuda"',
    'device = torch.device("cpu")',
    'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
    "model.cuda()",
    "model.to(device)",
    'state = torch.load("model.pt")',
    "loader = DataLoader(ds, batch_size=2, pin_memory=True)",
    "with torch.cuda.amp.autocast():\n    y = model(x)",
    "scaler = torch.cuda.amp.GradScaler()",
    "torch.cuda.synchronize()",
    "model = nn.DataParallel(model)",
    "del device",
    "global device",
    "x.to(device)",
    "for batch, label in loader:\n    out = model(batch.cuda())\n    loss = out.sum() + label.sum()",
    "y = np.array(model(x))",
    "z = torch.ones(2, device='cuda')",
    "self.mask = torch.ones(3)",
    "return x.cuda()",
    "x = x.cuda() if torch.cuda.is_available() else x",
    "lambda t: t.cuda()",
    "(x := torch.zeros(2).cuda())",
    "x = [t.cuda() for t in xs]",
    "assert torch.cuda.is_available()",
    "if not torch.cuda.is_available():\n    raise SystemExit",
    "x = x.cuda()  # keep me",
    "'''doc\n\x0c string\n'''",
    "pass\x0c",
    "# a \u2028 comment",
    "x = '\\r'",
]


def _lines(text: str) -> list[str]:
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)


def _eol(text: str) -> str:
    found = re.search(r"\r\n|\r|\n", text)
    return found.group() if found else "\n"


def _indent_unit(text: str) -> str:
    return "\t" if re.search(r"^\t", text, re.M) else "    "


def _statements(text: str) -> list[tuple[int, int, str]]:
    """(first row, last row, indentation) of each statement that starts its line."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    lines = _lines(text)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or node.end_lineno is None:
            continue
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        line = lines[node.lineno - 1] if node.lineno <= len(lines) else "x"
        prefix = line[: node.col_offset]
        if prefix.strip():  # after a semicolon or a colon on the same line
            continue
        found.append((first, node.end_lineno, prefix))
    return sorted(found)


def rename(draw: Draw, text: str) -> str:
    """Rename one identifier everywhere (in strings and comments too: still valid code)."""
    names = sorted(set(re.findall(r"\b[A-Za-z_]\w*\b", text)) - set(keyword.kwlist))
    if not names:
        return text
    old = draw(st.sampled_from(names))
    new = draw(
        st.sampled_from(NEW_NAMES)
        | st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True).filter(
            lambda name: not keyword.iskeyword(name)
        )
    )
    return re.sub(rf"\b{re.escape(old)}\b", new, text)


def swap_move(draw: Draw, text: str) -> str:
    pattern = re.compile(r"\.(?:cuda|cpu|numpy)\([^()]*\)|\.to\((?:[^()]|\([^()]*\))*\)")
    spots = list(pattern.finditer(text))
    if not spots:
        return text
    spot = draw(st.sampled_from(spots))
    return text[: spot.start()] + draw(st.sampled_from(MOVES)) + text[spot.end() :]


def wrap(draw: Draw, text: str) -> str:
    statements = _statements(text)
    if not statements:
        return text
    first, last, indent = draw(st.sampled_from(statements))
    unit = _indent_unit(text)
    eol = _eol(text)
    lines = _lines(text)
    header = indent + draw(st.sampled_from(GUARDS)) + eol
    body = [unit + line if line.strip() else line for line in lines[first - 1 : last]]
    if body and not re.search(r"[\r\n]$", body[-1]):
        body[-1] += eol
    tail = []
    if header.strip() == "try:":
        tail = [f"{indent}except RuntimeError:{eol}", f"{indent}{unit}pass{eol}"]
    elif header.strip().startswith("if") and draw(st.booleans()):
        tail = (
            [f"{indent}else:{eol}", *body]
            if draw(st.booleans())
            else [f"{indent}else:{eol}", f"{indent}{unit}pass{eol}"]
        )
    return "".join([*lines[: first - 1], header, *body, *tail, *lines[last:]])


def _insert_at_statement(draw: Draw, text: str, block: str) -> str:
    statements = _statements(text)
    lines = _lines(text)
    if statements:
        first, _, indent = draw(st.sampled_from(statements))
    else:
        first, indent = draw(st.integers(1, len(lines) + 1)), ""
    eol = _eol(text)
    new = [indent + line + eol for line in block.split("\n")]
    return "".join(lines[: first - 1] + new + lines[first - 1 :])


def add_import(draw: Draw, text: str) -> str:
    text = _insert_at_statement(draw, text, draw(st.sampled_from(IMPORTS)))
    if draw(st.booleans()):  # use the alias on some lines
        lines = _lines(text)
        for index in draw(st.sets(st.integers(0, max(len(lines) - 1, 0)), max_size=8)):
            if index < len(lines) and not lines[index].lstrip().startswith(("import", "from")):
                lines[index] = re.sub(r"\btorch\.", "T.", lines[index])
        text = "".join(lines)
    return text


def add_snippet(draw: Draw, text: str) -> str:
    return _insert_at_statement(draw, text, draw(st.sampled_from(SNIPPETS)))


def noqa(draw: Draw, text: str) -> str:
    lines = _lines(text)
    if not lines:
        return text
    if draw(st.booleans()):
        return "".join(re.sub(r"[ \t]*#[ \t]*(noqa|expect)[^\r\n]*", "", line) for line in lines)
    index = draw(st.integers(0, len(lines) - 1))
    comment = draw(
        st.sampled_from(
            [
                "  # noqa",
                "  # noqa: DEV001",
                "  # noqa:DEV003,DEV005",
                "  # noqa: E501",
                "  # NOQA: dev003",
                "  # noqa: DEV015",
                "  # type: ignore  # noqa: DEV002",
                "  # noqa: DEV001 explanation",
                "  # noqa:",
                "#noqa",
            ]
        )
    )
    if draw(st.integers(0, 9)) == 0:
        return (
            f"# devlint: noqa{draw(st.sampled_from(['', ': DEV003', ': DEV001, DEV005']))}\n" + text
        )
    line = lines[index]
    body = line.rstrip("\r\n")
    lines[index] = body + comment + line[len(body) :]
    return "".join(lines)


def line_endings(draw: Draw, text: str) -> str:
    style = draw(st.sampled_from(["crlf", "cr", "mixed", "no-final", "extra-final"]))
    if style == "crlf":
        return re.sub(r"\r\n|\r|\n", "\r\n", text)
    if style == "cr":
        return re.sub(r"\r\n|\r|\n", "\r", text)
    if style == "mixed":
        lines = _lines(text)
        index = draw(st.integers(0, max(len(lines) - 1, 0)))
        if lines:
            lines[index] = re.sub(r"\n$", "\r\n", lines[index])
        return "".join(lines)
    if style == "no-final":
        return text.rstrip("\r\n")
    return text + "\n\n"


def indentation(draw: Draw, text: str) -> str:
    style = draw(st.sampled_from(["tabs", "two", "spaces"]))
    if style == "tabs":
        return re.sub(r"^(?:    )+", lambda m: "\t" * (len(m.group()) // 4), text, flags=re.M)
    if style == "two":
        return re.sub(r"^(?:    )+", lambda m: "  " * (len(m.group()) // 4), text, flags=re.M)
    return re.sub(r"^[ \t]+", lambda m: m.group().expandtabs(4), text, flags=re.M)


def form_feed(draw: Draw, text: str) -> str:
    lines = _lines(text)
    index = draw(st.integers(0, len(lines)))
    char = draw(st.sampled_from(["\x0c", "\x0c\n", "\u2028", "\x1c", "\x85"]))
    if char.endswith("\n") or char == "\x0c":
        return "".join(
            [*lines[:index], char + ("" if char.endswith("\n") else "\n"), *lines[index:]]
        )
    return re.sub(r"#", "# " + char, text, count=1)  # inside a comment, where it is legal


def damage(draw: Draw, text: str) -> str:
    lines = _lines(text)
    if not lines:
        return text
    how = draw(st.sampled_from(["drop", "duplicate", "truncate", "junk", "dedent"]))
    index = draw(st.integers(0, len(lines) - 1))
    if how == "drop":
        return "".join(lines[:index] + lines[index + 1 :])
    if how == "duplicate":
        return "".join(lines[: index + 1] + lines[index:])
    if how == "truncate":
        return text[: draw(st.integers(0, len(text)))]
    if how == "junk":
        spot = draw(st.integers(0, len(text)))
        junk = draw(st.sampled_from(["(", ")", ":", "'", '"""', "\\", "\t", "\x00", "\ufeff", "$"]))
        return text[:spot] + junk + text[spot:]
    return "".join([*lines[:index], lines[index].lstrip(" \t"), *lines[index + 1 :]])


VALID_MUTATIONS = [
    rename,
    swap_move,
    wrap,
    add_import,
    add_snippet,
    noqa,
    swap_move,
    wrap,
    line_endings,
    indentation,
    form_feed,
]


@st.composite
def mutated_fixture(draw: Draw, damaging: bool = False) -> str:
    text = SOURCES[draw(st.sampled_from(sorted(SOURCES)))]
    mutations = VALID_MUTATIONS + ([damage] if damaging else [])
    for mutation in draw(st.lists(st.sampled_from(mutations), min_size=1, max_size=6)):
        text = mutation(draw, text)
    return text


# -- tests


@FUZZ
@given(hypothesmith.from_grammar(), OPTIONS)
def test_grammar_programs_check_and_fix(source: str, options: CheckOptions) -> None:
    assert_checks_cleanly(source, options)
    assert_fixes_cleanly(source, options)


@FUZZ
@given(hypothesmith.from_node(), OPTIONS)
def test_libcst_node_programs_check_and_fix(source: str, options: CheckOptions) -> None:
    assert_checks_cleanly(source, options)
    assert_fixes_cleanly(source, options)


@FUZZ
@given(mutated_fixture(), OPTIONS)
def test_mutated_fixtures_fix_cleanly(source: str, options: CheckOptions) -> None:
    assert_checks_cleanly(source, options)
    assert_fixes_cleanly(source, options)


@FUZZ
@given(mutated_fixture(), OPTIONS)
def test_mutated_fixtures_safe_fixes(source: str, options: CheckOptions) -> None:
    assert_fixes_cleanly(source, options, unsafe=False)


@FUZZ
@given(mutated_fixture(damaging=True), OPTIONS)
def test_damaged_fixtures_never_crash(source: str, options: CheckOptions) -> None:
    assert_checks_cleanly(source, options)
    fixed = assert_fixes_cleanly(source, options)
    if not parses(source):
        assert fixed == source  # only DEV901: nothing to fix


@FUZZ
@given(mutated_fixture(), st.data())
def test_mutated_notebooks_fix_cleanly(source: str, data: st.DataObject) -> None:
    notebook = _notebook(source, data)
    before = json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "nb.ipynb"
        path.write_text(before, encoding="utf-8")
        first = lint_path(path, "nb.ipynb", EVERYTHING, FixMode(unsafe=True))
        assert first.error is None
        assert all(d.code in KNOWN and d.code != "DEV902" for d in first.diagnostics)
        once = path.read_bytes()
        fixed = json.loads(once)
        if not first.applied:
            assert once.decode("utf-8") == before
        second = lint_path(path, "nb.ipynb", EVERYTHING, FixMode(unsafe=True))
        assert not second.applied and path.read_bytes() == once, "notebook fix not idempotent"
    assert len(fixed["cells"]) == len(notebook["cells"])
    for old, new in zip(notebook["cells"], fixed["cells"], strict=True):
        assert old.get("outputs") == new.get("outputs")
        if old["cell_type"] != "code":
            assert old == new
        magics = [line for line in old["source"] if _is_magic(line)]
        assert all(line in new["source"] for line in magics), "a magic was lost"
        code = "".join(line for line in old["source"] if not _is_magic(line))
        new_code = "".join(line for line in new["source"] if not _is_magic(line))
        lost = [c for c in comments(code) if c not in comments(new_code)]
        assert not lost, f"comments lost: {lost}"


def _is_magic(line: str) -> bool:
    return line.lstrip().startswith(("%", "!")) or line.rstrip().endswith("?")


def _notebook(source: str, data: st.DataObject) -> dict[str, object]:
    # Lines as a notebook holds them: ending in "\n" only (``str.splitlines`` would also
    # cut at "\u2028" and friends, which Python and Jupyter keep inside a line).
    lines = re.findall(r"[^\n]*\n|[^\n]+$", re.sub(r"\r\n?", "\n", source))
    cuts = sorted(data.draw(st.sets(st.integers(0, len(lines)), max_size=4)) | {0, len(lines)})
    cells: list[dict[str, object]] = []
    for start, end in itertools.pairwise(cuts):
        body = lines[start:end]
        if data.draw(st.booleans()):
            body = [
                data.draw(
                    st.sampled_from(
                        [
                            "%matplotlib inline\n",
                            "!pip install torch\n",
                            "%time x = 1\n",
                            "torch.cuda?\n",
                        ]
                    )
                ),
                *body,
            ]
        cells.append(
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [{"output_type": "stream", "name": "stdout", "text": ["hi\n"]}],
                "source": body,
            }
        )
        if data.draw(st.booleans()):
            cells.append({"cell_type": "markdown", "metadata": {}, "source": ["x.cuda()\n"]})
    return {
        "cells": cells,
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


# -- regressions found by fuzzing and by scripts/corpus_sweep.py


FORM_FEED_SCRIPT = (
    "import torch\n# page \x0c break\n\nx = torch.zeros(3).cuda()\nprint(x.numpy())\n"
)


@pytest.mark.parametrize("separator", ["\x0c", "\u2028", "\x1c", "\x85"])
def test_form_feed_and_unicode_separators_do_not_shift_fixes(separator: str) -> None:
    # str.splitlines() breaks lines at these too; fix offsets and indents must not.
    source = FORM_FEED_SCRIPT.replace("\x0c", separator)
    result = fix_text(source, "t.py", DEFAULTS)
    assert result.applied == {"DEV003": 1, "DEV001": 1}
    assert "x = torch.zeros(3).to(device)\nprint(x.cpu().numpy())\n" in result.text
    assert separator in result.text


def test_form_feed_in_a_notebook_cell_stays_in_its_comment(tmp_path: Path) -> None:
    # Cells were split with str.splitlines(): `# page<FF>break` became a comment and code.
    cell = ["import torch\n", "# page\x0cbreak\n", "x = torch.zeros(3).cuda()\n"]
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": cell,
            }
        ],
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(notebook, indent=1) + "\n", encoding="utf-8")
    found = lint_path(path, "nb.ipynb", DEFAULTS).diagnostics
    assert [(d.code, d.cell, d.start.row) for d in found] == [("DEV003", 1, 3)]
    result = lint_path(path, "nb.ipynb", DEFAULTS, FixMode())
    assert result.applied == {"DEV003": 1}
    source = "".join(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"])
    assert "# page\x0cbreak\n" in source
    assert "x = torch.zeros(3).to(device)\n" in source


@pytest.mark.parametrize(
    ("call", "fixed_call"),
    [
        ("torch.cuda.amp.autocast(amp)", 'torch.amp.autocast("cuda", enabled=amp)'),
        (
            "autocast(False, torch.bfloat16)",
            'torch.amp.autocast("cuda", enabled=False, dtype=torch.bfloat16)',
        ),
        ("autocast(on, dtype=d, **kw)", 'torch.amp.autocast("cuda", enabled=on, dtype=d, **kw)'),
        # torch.amp.GradScaler takes a device from 2.3: no fix at the default target
        ("torch.cuda.amp.GradScaler(2.0, enabled=e)", "torch.cuda.amp.GradScaler(2.0, enabled=e)"),
        ("autocast(*args)", "autocast(*args)"),
    ],
)
def test_autocast_positional_arguments_keep_their_meaning(call: str, fixed_call: str) -> None:
    # yolov5: `torch.cuda.amp.autocast(amp)` became `torch.amp.autocast("cuda", amp)`,
    # where the second parameter is `dtype`: autocast on even with amp=False.
    source = f"import torch\nfrom torch.cuda.amp import autocast\n\nwith {call}:\n    pass\n"
    assert f"with {fixed_call}:\n" in fix_text(source, "t.py", DEFAULTS).text


def test_torch_device_with_an_index_keeps_it() -> None:
    # transformers' training_args: `torch.device("cuda", smp.local_rank())` lost its index.
    source = (
        'import torch\n\ndevice = torch.device("cuda", rank)\nzero = torch.device("cuda", 0)\n'
        "x = torch.ones(1).to(device) + torch.ones(1).to(zero)\n"
    )
    result = fix_text(source, "t.py", DEFAULTS)
    assert result.applied == {"DEV003": 1}
    assert 'device = torch.device("cuda", rank)\n' in result.text
    assert [d.code for d in result.diagnostics] == ["DEV003"]


def test_string_escape_that_cpython_refuses_is_a_syntax_error() -> None:
    # libcst parses `"\N"`; a rule then evaluated the string and the file got DEV902.
    found = check_text('import torch\nx = "\\N"\ny = torch.zeros(2).cuda()\n', "t.py", DEFAULTS)
    assert [(d.code, d.start.row) for d in found] == [("DEV901", 2)]


def test_torch_alias_imported_in_a_branch_is_not_used_by_fixes() -> None:
    # `T` bound only in an else branch: fixes wrote `T.cuda.is_available()` where `T` is
    # unbound, the guard was not recognised and each round wrapped the call once more.
    source = (
        "import torch\nfrom torch.utils.data import DataLoader\n\n"
        "if flag:\n    staging = torch.empty(8).pin_memory()\nelse:\n    import torch as T\n"
        "loader = DataLoader(ds, pin_memory=True)\n"
    )
    once = assert_fixes_cleanly(source, EVERYTHING)
    assert "T.cuda" not in once
    assert "loader = DataLoader(ds, pin_memory=torch.cuda.is_available())\n" in once
    rebound = source.replace("import torch\n", "import torch\ntorch = None\n", 1)
    assert "T.cuda" not in assert_fixes_cleanly(rebound, EVERYTHING)


def test_valid_code_that_libcst_validation_refuses_is_checked() -> None:
    # libcst's node validation rejects `is not.0`; devlint skips it (engine.unvalidated_nodes).
    found = check_text(
        "import torch\nif ... is not.0: x = torch.ones(2).cuda()\n", "t.py", EVERYTHING
    )
    assert [d.code for d in found] == ["DEV003"]


def test_torch_rebound_to_something_else_gets_no_fix() -> None:
    # `import torch` was added after the imports, above `torch = None`, so the guard it
    # wrote never counted and every round wrapped `.pin_memory()` once more.
    source = (
        "import torch\nfrom torch.utils.data import DataLoader\n\ntorch = None\n"
        "if torch.cuda.is_available():\n    staging = torch.empty(8, 6).pin_memory()\n"
        "loader = DataLoader(ds, pin_memory=True)\n"
    )
    assert fix_text(source, "t.py", DEFAULTS).text == source


def test_device_selection_goes_after_a_try_import_of_torch() -> None:
    source = "try:\n    import torch\nexcept ImportError:\n    raise\nx = torch.zeros(2).cuda()\n"
    fixed = assert_fixes_cleanly(source, DEFAULTS)
    assert fixed.index("import torch") < fixed.index("device = torch.device(")


OPTIONAL_TORCH = "if is_torch_available():\n    import torch\n\n\ndef pick():\n"


def test_optional_torch_import_is_used_inside_functions_but_gets_no_module_selection() -> None:
    # transformers: `if is_torch_available(): import torch`. A fix may use `torch` in a
    # function, but must not add `import torch` or a module-level `device = torch...`.
    source = OPTIONAL_TORCH + '    return "cuda" if torch.cuda.is_available() else "cpu"\n'
    fixed = assert_fixes_cleanly(source, DEFAULTS)
    assert fixed.count("import torch") == 1
    assert "torch.backends.mps.is_available()" in fixed
    moving = OPTIONAL_TORCH + "    return torch.zeros(2).cuda()\n"
    assert fix_text(moving, "t.py", DEFAULTS).text == moving


def test_comment_above_an_import_a_fix_made_unused_is_kept() -> None:
    # The import went, and with it the comment lines above it (libcst's leading lines).
    source = (
        "import torch\n# mixed precision\nfrom torch.cuda import amp\n\n"
        "with amp.autocast():\n    pass\n# the end\n"
    )
    fixed = assert_fixes_cleanly(source, DEFAULTS)
    assert fixed == (
        'import torch\n# mixed precision\n\nwith torch.amp.autocast("cuda"):\n    pass\n# the end\n'
    )
