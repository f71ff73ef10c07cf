"""``devlint server``: position conversion and code actions in-process, then real LSP
sessions with ``python -m devlint server`` over stdio (Content-Length framing)."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

import pytest
from lsprotocol import types

from devlint import server
from devlint.diagnostics import Diagnostic, Edit, Fix, Location
from devlint.docs import DEFAULT_DOCS_URL, rule_url
from devlint.engine import CheckOptions
from devlint.noqa import line_directives
from devlint.server import (
    PYGLS_MISSING,
    CheckedDocument,
    SettingsCache,
    code_actions,
    code_units,
    lsp_lines,
    noqa_edit,
    replacement_edit,
    to_lsp_diagnostic,
    to_position,
)

TIMEOUT = 30.0  # seconds for any one message: a hang fails the test instead of blocking
BUGGY = 'import torch\nx = torch.zeros(3).cuda()\nprint("😋", x.numpy())\n'
FIXED = 'import torch\nx = torch.zeros(3)\nprint("😋", x.numpy())\n'


# --------------------------------------------------------------------------- in-process


def test_positions_count_utf16_code_units_beyond_the_bmp() -> None:
    lines = lsp_lines('a = 1\r\nprint("😋", x.numpy())\rz\n')
    assert lines == ["a = 1", 'print("😋", x.numpy())', "z", ""]
    numpy_call = Location(2, 12)  # 1-based, in Python characters: `x` after the emoji
    assert to_position(lines, numpy_call) == types.Position(line=1, character=12)
    assert to_position(lines, numpy_call, "utf-32") == types.Position(line=1, character=11)
    assert to_position(lines, numpy_call, "utf-8") == types.Position(line=1, character=14)
    assert to_position(lines, Location(2, 99)) == types.Position(line=1, character=22)
    assert to_position(lines, Location(9, 1)) == types.Position(line=3, character=0)
    assert code_units("😋é") == 3


def test_diagnostics_carry_code_source_severity_and_url() -> None:
    found = Diagnostic("DEV001", "n", "m", "f.py", Location(1, 1), Location(1, 2))
    converted = to_lsp_diagnostic(found, ["x"])
    assert (converted.code, converted.source, converted.code_description) == (
        "DEV001",
        "devlint",
        None,
    )
    assert converted.severity == types.DiagnosticSeverity.Warning
    linked = to_lsp_diagnostic(replace(found, url="https://example.org/DEV001"), ["x"])
    assert linked.code_description == types.CodeDescription(href="https://example.org/DEV001")


def test_settings_are_reread_when_the_config_changes(tmp_path: Path) -> None:
    config = tmp_path / "devlint.toml"
    config.write_text('ignore = ["DEV001"]\n')
    settings = SettingsCache()
    assert "DEV001" not in settings.options_for(tmp_path / "m.py").codes
    config.write_text('extend-select = ["DEV010"]\n')
    codes = settings.options_for(tmp_path / "m.py").codes
    assert {"DEV001", "DEV010"} <= codes


def test_noqa_edit_appends_or_merges() -> None:
    plain = noqa_edit('print("😋", x.numpy())   ', 4, "DEV001", None)
    assert plain.new_text == "  # noqa: DEV001"
    assert plain.range == types.Range(
        start=types.Position(line=4, character=22), end=types.Position(line=4, character=25)
    )
    line = "x.cuda()  # noqa: E501 long line"
    merged = noqa_edit(line, 0, "DEV003", line_directives(line)[1])
    assert merged.new_text == ", DEV003"
    assert merged.range.start == merged.range.end == types.Position(line=0, character=22)


def _diagnostic(code: str, start: Location, end: Location, fix: Fix | None) -> Diagnostic:
    return Diagnostic(code, "name", "message", "m.py", start, end, fix, start.row)


def test_code_actions_offer_fixes_noqa_and_fix_all(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server, "fix_all", lambda document: "a = x.to(device)\n" + text[13:])
    text = "a = x.cuda()\nb = '''\ny.cuda()'''\n"
    safe = Fix("safe", "Use `.to(device)`", (Edit(".to(device)", Location(1, 6), Location(1, 13)),))
    unsafe = Fix("unsafe", "Rewrite", (Edit("z", Location(3, 1), Location(3, 2)),))
    found = [
        _diagnostic("DEV003", Location(1, 5), Location(1, 13), safe),
        _diagnostic("DEV003", Location(2, 5), Location(3, 12), unsafe),
    ]
    document = CheckedDocument(Path("m.py"), text, CheckOptions(frozenset()), found)
    everything = types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=3, character=0)
    )
    actions = code_actions("file:///m.py", document, everything, None)
    titles = [action.title for action in actions]
    # no noqa inside a string that spans lines: the comment would become string content
    assert titles == [
        "Use `.to(device)`",
        "Disable DEV003 for this line",
        "Rewrite (unsafe)",
        "Fix all safely fixable devlint problems",
    ]
    assert [a.kind for a in actions] == ["quickfix"] * 3 + ["source.fixAll.devlint"]
    assert actions[0].is_preferred and not actions[2].is_preferred
    (fix_all_edit,) = actions[3].edit.changes["file:///m.py"]
    assert fix_all_edit.new_text == "a = x.to(device)\n"
    assert fix_all_edit.range.end == types.Position(line=1, character=0)
    first_line = types.Range(
        start=types.Position(line=0, character=8), end=types.Position(line=0, character=8)
    )
    only_fix_all = code_actions("file:///m.py", document, first_line, ["source.fixAll"])
    assert [a.kind for a in only_fix_all] == ["source.fixAll.devlint"]
    assert len(code_actions("file:///m.py", document, first_line, ["quickfix"])) == 2


def test_fix_all_edit_spans_only_the_changed_lines() -> None:
    assert replacement_edit("same", "same") is None
    tail = replacement_edit("a\nb", "a\nB")
    assert tail is not None and tail.new_text == "B"
    assert tail.range == types.Range(
        start=types.Position(line=1, character=0), end=types.Position(line=1, character=1)
    )


# --------------------------------------------------------------------------- over stdio


class Client:
    """A minimal LSP client: Content-Length framing, a reader thread, timed reads."""

    def __init__(self, cwd: Path) -> None:
        self.stderr = (cwd / "server.stderr").open("w+b")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "devlint", "server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            cwd=cwd,
        )
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.notifications: list[dict[str, Any]] = []
        self.last_id = 0
        assert self.process.stdout is not None
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        while True:
            headers: dict[str, str] = {}
            while line := stream.readline().strip():
                name, _, value = line.decode("ascii").partition(":")
                headers[name.strip().lower()] = value.strip()
            if "content-length" not in headers:
                self.inbox.put(None)  # the server closed its output
                return
            self.inbox.put(json.loads(stream.read(int(headers["content-length"]))))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"method": method, "params": params})

    def _next(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        try:
            message = self.inbox.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            raise AssertionError(f"no {waiting_for} within {TIMEOUT}s") from None
        if message is None:
            raise AssertionError(f"server exited while waiting for {waiting_for}: {self.log()}")
        if "method" in message and "id" in message:  # a request from the server
            self.send({"id": message["id"], "result": None})
        return message

    def request(self, method: str, params: dict[str, Any] | None) -> Any:
        self.last_id += 1
        self.send({"id": self.last_id, "method": method, "params": params})
        deadline = time.monotonic() + TIMEOUT
        while True:
            message = self._next(deadline, f"response to {method}")
            if message.get("id") == self.last_id and "method" not in message:
                assert "error" not in message, message
                return message["result"]
            if "method" in message:
                self.notifications.append(message)

    def notification(self, method: str, uri: str | None = None) -> dict[str, Any]:
        """The next ``method`` notification (for ``uri``), waiting for it if need be."""

        def wanted(message: dict[str, Any]) -> bool:
            params = message.get("params") or {}
            return message.get("method") == method and uri in (None, params.get("uri"))

        deadline = time.monotonic() + TIMEOUT
        while True:
            for index, message in enumerate(self.notifications):
                if wanted(message):
                    return self.notifications.pop(index)["params"]  # type: ignore[no-any-return]
            message = self._next(deadline, f"{method} for {uri}")
            if "method" in message and "id" not in message:
                self.notifications.append(message)

    def diagnostics(self, uri: str) -> list[tuple[str, tuple[int, int, int, int]]]:
        found = self.notification("textDocument/publishDiagnostics", uri)["diagnostics"]
        for item in found:
            assert (item["source"], item["severity"]) == ("devlint", 2)
        return [(item["code"], _span(item["range"])) for item in found]

    def open(self, path: Path, text: str) -> str:
        uri = path.as_uri()
        document = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": document})
        return uri

    def log(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=TIMEOUT)
        self.stderr.close()


def _span(lsp_range: dict[str, Any]) -> tuple[int, int, int, int]:
    start, end = lsp_range["start"], lsp_range["end"]
    return (start["line"], start["character"], end["line"], end["character"])


@pytest.fixture
def client(tmp_path: Path) -> Any:
    started = Client(tmp_path)
    result = started.request(
        "initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}
    )
    assert result["capabilities"]["positionEncoding"] == "utf-16"
    assert result["capabilities"]["codeActionProvider"]["codeActionKinds"] == [
        "quickfix",
        "source.fixAll.devlint",
    ]
    started.notify("initialized", {})
    yield started
    started.close()


def _whole(text: str) -> dict[str, Any]:
    last = len(lsp_lines(text)) - 1
    return {"start": {"line": 0, "character": 0}, "end": {"line": last, "character": 0}}


def test_session_publishes_clears_offers_noqa_and_exits_0(client: Client, tmp_path: Path) -> None:
    client.open(tmp_path / "notes.txt", "x.cuda()\n")  # not Python: never checked
    uri = client.open(tmp_path / "train.py", BUGGY)
    assert client.diagnostics(uri) == [("DEV003", (1, 4, 1, 25)), ("DEV001", (2, 12, 2, 21))]
    assert client.notifications == []

    actions = client.request(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": uri},
            "range": {"start": {"line": 2, "character": 14}, "end": {"line": 2, "character": 14}},
            "context": {"diagnostics": []},
        },
    )
    noqa = [a for a in actions if a["title"] == "Disable DEV001 for this line"]
    assert len(noqa) == 1 and noqa[0]["kind"] == "quickfix"
    assert noqa[0]["edit"]["changes"][uri] == [
        {
            "range": {"start": {"line": 2, "character": 22}, "end": {"line": 2, "character": 22}},
            "newText": "  # noqa: DEV001",
        }
    ]
    assert all("DEV003" not in a["title"] for a in actions)  # line 2 only

    change = {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": FIXED}]}
    client.notify("textDocument/didChange", change)
    assert client.diagnostics(uri) == []
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []

    assert client.request("shutdown", None) is None
    client.notify("exit", {})
    assert client.process.wait(timeout=TIMEOUT) == 0, client.log()


def test_settings_come_from_the_nearest_config(client: Client, tmp_path: Path) -> None:
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    (quiet / "devlint.toml").write_text(
        'ignore = ["DEV001"]\nper-file-ignores = { "legacy_*.py" = ["DEV003"] }\n'
    )
    assert client.diagnostics(client.open(quiet / "train.py", BUGGY)) == [("DEV003", (1, 4, 1, 25))]
    assert client.diagnostics(client.open(quiet / "legacy_train.py", BUGGY)) == []

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "devlint.toml").write_text('selec = ["DEV"]\n')
    assert client.diagnostics(client.open(broken / "a.py", BUGGY)) == []
    assert client.diagnostics(client.open(broken / "b.py", BUGGY)) == []
    shown = [m for m in client.notifications if m["method"] == "window/showMessage"]
    assert len(shown) == 1, client.notifications  # once, not per document
    assert "unknown key 'selec'" in shown[0]["params"]["message"]
    assert shown[0]["params"]["type"] == 1  # Error
    assert client.process.poll() is None


def test_diagnostics_link_to_their_rule_pages(client: Client, tmp_path: Path) -> None:
    """codeDescription.href: the JSON output's `url`, from the document's `docs-url`."""
    uri = client.open(tmp_path / "train.py", BUGGY)
    found = client.notification("textDocument/publishDiagnostics", uri)["diagnostics"]
    assert [item["codeDescription"]["href"] for item in found] == [
        rule_url(DEFAULT_DOCS_URL, "DEV003", "unguarded-cuda"),
        rule_url(DEFAULT_DOCS_URL, "DEV001", "numpy-on-accelerator"),
    ]
    own = tmp_path / "own"
    own.mkdir()
    (own / "devlint.toml").write_text('docs-url = "https://lint.example.org/{code}"\n')
    uri = client.open(own / "train.py", BUGGY)
    found = client.notification("textDocument/publishDiagnostics", uri)["diagnostics"]
    assert [item["codeDescription"]["href"] for item in found] == [
        "https://lint.example.org/DEV003",
        "https://lint.example.org/DEV001",
    ]


def test_diagnostics_carry_their_chain_as_related_information(
    client: Client, tmp_path: Path
) -> None:
    uri = client.open(tmp_path / "train.py", BUGGY)
    found = client.notification("textDocument/publishDiagnostics", uri)["diagnostics"]
    numpy = next(item for item in found if item["code"] == "DEV001")
    assert numpy["relatedInformation"] == [
        {
            "location": {"uri": uri, "range": _range(1, 4, 25)},
            "message": "moved to cuda here",
        }
    ]
    assert "relatedInformation" not in next(item for item in found if item["code"] == "DEV003")


def _range(line: int, start: int, end: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}


def test_a_diagnostic_with_a_fix_offers_it(client: Client, tmp_path: Path) -> None:
    text = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"
    uri = client.open(tmp_path / "amp.py", text)
    assert [code for code, _ in client.diagnostics(uri)] == ["DEV009"]
    actions = client.request(
        "textDocument/codeAction",
        {"textDocument": {"uri": uri}, "range": _whole(text), "context": {"diagnostics": []}},
    )
    kinds = {a["title"]: a["kind"] for a in actions}
    assert kinds.pop("Disable DEV009 for this line") == "quickfix"
    assert kinds.pop("Fix all safely fixable devlint problems") == "source.fixAll.devlint"
    assert list(kinds.values()) == ["quickfix"]
    (fix,) = (a for a in actions if a["title"] in kinds)
    assert fix["isPreferred"] is True
    (fix_all,) = (a for a in actions if a["kind"] == "source.fixAll.devlint")
    for action in (fix, fix_all):
        assert 'torch.amp.autocast("cuda")' in _apply(text, action["edit"]["changes"][uri])


def _apply(text: str, edits: list[dict[str, Any]]) -> str:
    """Apply LSP TextEdits to ASCII ``text`` (code units are characters there)."""
    lines = [*text.splitlines(keepends=True), ""]

    def offset(position: dict[str, int]) -> int:
        return sum(map(len, lines[: position["line"]])) + position["character"]

    spans = [(offset(e["range"]["start"]), offset(e["range"]["end"]), e["newText"]) for e in edits]
    for start, end, new_text in sorted(spans, reverse=True):
        text = text[:start] + new_text + text[end:]
    return text


# --------------------------------------------------------------------------- the command


def test_without_pygls_one_line_and_exit_2() -> None:
    code = (
        "import sys; sys.modules['pygls'] = None\nfrom devlint.cli import main\nmain(['server'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [PYGLS_MISSING]
    assert PYGLS_MISSING == "error: devlint server needs pygls: pip install 'devlint[lsp]'"


def test_check_never_imports_pygls(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    code = (
        "import sys\n"
        "from devlint.cli import main\n"
        "try:\n"
        "    main(['check', '--no-cache', 'm.py'])\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0, done.code\n"
        "assert 'pygls' not in sys.modules and 'lsprotocol' not in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
