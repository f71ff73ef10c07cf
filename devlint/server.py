"""``devlint server``: a Language Server that shows devlint's diagnostics in editors.

It speaks LSP over stdin/stdout (pygls), checks every open ``.py`` document with the
settings of its nearest ``pyproject.toml`` / ``devlint.toml`` (as ``devlint check``
would) on open, change and save, and offers each diagnostic's fix, a ``# noqa`` quick
fix and a ``source.fixAll.devlint`` action. The CLI imports this module only when the
command runs, so ``check`` never imports pygls.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from devlint import __version__
from devlint.api import Settings, lint_source, project_settings
from devlint.config import ConfigError, find_config
from devlint.diagnostics import Diagnostic, FixMode, Location
from devlint.docs import DEFAULT_DOCS_URL
from devlint.engine import CheckOptions
from devlint.noqa import ENGINE_CODES, UNUSED_NOQA, Directive, line_directives, rows_continued
from devlint.report import ReportOptions, with_urls
from devlint.source import LINE_BREAK, Source, split_lines

try:
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer
    from pygls.uris import to_fs_path, uri_scheme
except ImportError:  # the `lsp` extra is not installed: the command says so
    PYGLS_AVAILABLE = False
else:
    PYGLS_AVAILABLE = True

PYGLS_MISSING = "error: devlint server needs pygls: pip install 'devlint[lsp]'"
SOURCE = "devlint"
FIX_ALL_KIND = "source.fixAll.devlint"
QUICK_FIX_KIND = "quickfix"

logger = logging.getLogger(__name__)


@click.command("server")
def server() -> None:
    """Run the language server on stdin/stdout (for editors; needs the `lsp` extra)."""
    if not PYGLS_AVAILABLE:
        click.echo(PYGLS_MISSING, err=True)
        sys.exit(2)
    create_server().start_io()


# --------------------------------------------------------------------------- positions


def lsp_lines(text: str) -> list[str]:
    """The document's lines as LSP counts them (``\\n``, ``\\r\\n`` and ``\\r`` end a line).

    Unlike ``source.split_lines``, a final line break is followed by an empty last line.
    """
    return LINE_BREAK.split(text)


def code_units(text: str, encoding: str = "utf-16") -> int:
    """How many code units of the negotiated position ``encoding`` ``text`` takes."""
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    if encoding == "utf-32":
        return len(text)
    # UTF-16: a character beyond the Basic Multilingual Plane takes a surrogate pair.
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def to_position(
    lines: Sequence[str], location: Location, encoding: str = "utf-16"
) -> types.Position:
    """devlint's 1-based row / character column as an LSP 0-based line / code-unit offset."""
    line = location.row - 1
    if line >= len(lines):
        return types.Position(line=len(lines) - 1, character=code_units(lines[-1], encoding))
    line = max(line, 0)
    return types.Position(
        line=line, character=code_units(lines[line][: max(location.column - 1, 0)], encoding)
    )


def to_range(
    lines: Sequence[str], start: Location, end: Location, encoding: str = "utf-16"
) -> types.Range:
    return types.Range(
        start=to_position(lines, start, encoding), end=to_position(lines, end, encoding)
    )


def to_lsp_diagnostic(
    diagnostic: Diagnostic, lines: Sequence[str], encoding: str = "utf-16"
) -> types.Diagnostic:
    """The LSP form of ``diagnostic``, its chain of facts as ``relatedInformation``."""
    description = types.CodeDescription(href=diagnostic.url) if diagnostic.url else None
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(
                uri=Path(step.path).absolute().as_uri(),
                range=to_range(lines, step.start, step.end, encoding),
            ),
            message=step.message,
        )
        for step in diagnostic.related
    ]
    return types.Diagnostic(
        range=to_range(lines, diagnostic.start, diagnostic.end, encoding),
        message=diagnostic.message,
        severity=types.DiagnosticSeverity.Warning,
        code=diagnostic.code,
        code_description=description,
        source=SOURCE,
        related_information=related or None,
    )


# --------------------------------------------------------------------------- settings


class SettingsCache:
    """Each document's settings from its nearest config file, re-read when the file changes."""

    def __init__(self) -> None:
        # config file (or a folder without one) -> (its mtime and size, its settings)
        self.configs: dict[Path, tuple[tuple[int, int], Settings]] = {}
        self.reported: set[str] = set()

    def options_for(self, path: Path) -> CheckOptions:
        """What ``devlint check path`` would check; a ConfigError when the config is broken."""
        return self.settings_for(path).options_for(path)

    def settings_for(self, path: Path) -> Settings:
        """The settings ``devlint check path`` would use (``api.project_settings``, as the
        command line resolves them); a ConfigError when they are broken."""
        directory = path.parent
        config_file = find_config(directory)
        stamp = (0, 0)
        if config_file is not None:
            status = config_file.stat()
            stamp = (status.st_mtime_ns, status.st_size)
        # Without a configuration file, the project's own torch dependency depends on where
        # the document is: one entry per folder.
        key = config_file if config_file is not None else directory
        cached = self.configs.get(key)
        if cached is None or cached[0] != stamp:
            cached = self.configs[key] = (stamp, project_settings(directory, config_file))
        return cached[1]

    def first_report(self, message: str) -> bool:
        """True the first time ``message`` is seen: a broken config is shown once."""
        if message in self.reported:
            return False
        self.reported.add(message)
        return True


@dataclass(frozen=True)
class CheckedDocument:
    """An open document as last checked: its text, settings and diagnostics."""

    path: Path
    text: str
    options: CheckOptions
    diagnostics: list[Diagnostic]  # each with its rule page's ``url`` (the editor's link)
    docs_url: str = DEFAULT_DOCS_URL  # the template of those addresses (``docs-url``)


def document_path(uri: str) -> Path | None:
    """The file behind a ``file:`` URI of a ``.py`` document; None for anything else."""
    if uri_scheme(uri) != "file":
        return None
    fs_path = to_fs_path(uri)
    if fs_path is None or not fs_path.endswith(".py"):
        return None
    return Path(fs_path)


# --------------------------------------------------------------------------- code actions


def code_actions(
    uri: str,
    document: CheckedDocument,
    wanted: types.Range,
    only: Sequence[str] | None,
    encoding: str = "utf-16",
) -> list[types.CodeAction]:
    """Quick fixes for the diagnostics that touch the ``wanted`` range, then fix-all."""
    lines = lsp_lines(document.text)
    # Rows where a comment cannot go (None: the text does not tokenize) and noqa directives.
    blocked = rows_continued(document.text)
    directives = line_directives(document.text)
    actions: list[types.CodeAction] = []
    for diagnostic in document.diagnostics:
        lsp_diagnostic = to_lsp_diagnostic(diagnostic, lines, encoding)
        if not _touches(lsp_diagnostic.range, wanted) or not _kind_wanted(QUICK_FIX_KIND, only):
            continue
        fix = diagnostic.fix
        if fix is not None:
            title = fix.message + (" (unsafe)" if fix.applicability == "unsafe" else "")
            edits = [
                types.TextEdit(range=to_range(lines, e.start, e.end, encoding), new_text=e.content)
                for e in fix.edits
            ]
            actions.append(
                types.CodeAction(
                    title=title,
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[lsp_diagnostic],
                    is_preferred=fix.applicability == "safe",
                    edit=types.WorkspaceEdit(changes={uri: edits}),
                )
            )
        row = diagnostic.noqa_row or diagnostic.start.row
        if diagnostic.code in ENGINE_CODES or diagnostic.code == UNUSED_NOQA:
            continue  # a noqa comment cannot silence these
        if blocked is None or row in blocked or row > len(lines):
            continue
        edit = noqa_edit(lines[row - 1], row - 1, diagnostic.code, directives.get(row), encoding)
        actions.append(
            types.CodeAction(
                title=f"Disable {diagnostic.code} for this line",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[lsp_diagnostic],
                edit=types.WorkspaceEdit(changes={uri: [edit]}),
            )
        )
    if _kind_wanted(FIX_ALL_KIND, only) and any(
        d.fix is not None and d.fix.applicability == "safe" for d in document.diagnostics
    ):
        whole = replacement_edit(document.text, fix_all(document), encoding)
        if whole is not None:
            actions.append(
                types.CodeAction(
                    title="Fix all safely fixable devlint problems",
                    kind=FIX_ALL_KIND,
                    edit=types.WorkspaceEdit(changes={uri: [whole]}),
                )
            )
    return actions


def noqa_edit(
    line: str, line_index: int, code: str, directive: Directive | None, encoding: str = "utf-16"
) -> types.TextEdit:
    """Append ``  # noqa: CODE`` to ``line``, or add CODE to its ``# noqa: ...`` directive."""
    if directive is not None and directive.codes:
        at = code_units(line[: directive.codes[-1].end], encoding)
        new_text = f", {code}"
        start = end = types.Position(line=line_index, character=at)
    else:
        new_text = f"  # noqa: {code}"
        start = types.Position(line=line_index, character=code_units(line.rstrip(), encoding))
        end = types.Position(line=line_index, character=code_units(line, encoding))
    return types.TextEdit(range=types.Range(start=start, end=end), new_text=new_text)


def fix_all(document: CheckedDocument) -> str:
    """The document with every safe fix applied, as ``devlint --fix`` would write it."""
    source, display = Source(document.text), str(document.path)
    fixed = lint_source(source, display, document.options, FixMode(write=False)).fixed
    return document.text if fixed is None else fixed.decode(source.encoding)


def replacement_edit(old: str, new: str, encoding: str = "utf-16") -> types.TextEdit | None:
    """One TextEdit turning ``old`` into ``new``, spanning only the lines that differ."""
    if old == new:
        return None
    old_lines, new_lines = split_lines(old, keepends=True), split_lines(new, keepends=True)
    head = 0
    while head < min(len(old_lines), len(new_lines)) and old_lines[head] == new_lines[head]:
        head += 1
    tail = 0
    while (
        tail < min(len(old_lines), len(new_lines)) - head
        and old_lines[-1 - tail] == new_lines[-1 - tail]
    ):
        tail += 1
    lines = lsp_lines(old)
    start = types.Position(line=head, character=0)
    end_line = len(old_lines) - tail
    if end_line < len(lines):
        end = types.Position(line=end_line, character=0)
    else:  # up to the end of a document without a final line break
        end = types.Position(line=len(lines) - 1, character=code_units(lines[-1], encoding))
    return types.TextEdit(
        range=types.Range(start=start, end=end),
        new_text="".join(new_lines[head : len(new_lines) - tail]),
    )


def _touches(diagnostic_range: types.Range, wanted: types.Range) -> bool:
    def key(position: types.Position) -> tuple[int, int]:
        return (position.line, position.character)

    return key(diagnostic_range.start) <= key(wanted.end) and key(wanted.start) <= key(
        diagnostic_range.end
    )


def _kind_wanted(kind: str, only: Sequence[str] | None) -> bool:
    return not only or any(kind == o or kind.startswith(f"{o}.") for o in only)


# --------------------------------------------------------------------------- the server


def create_server() -> LanguageServer:
    """A pygls LanguageServer publishing devlint's diagnostics and offering its fixes."""
    server = LanguageServer(
        "devlint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full
    )
    documents = _OpenDocuments(server)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        documents.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        documents.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        documents.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        documents.close(params.text_document.uri)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND]),
    )
    def code_action(params: types.CodeActionParams) -> list[types.CodeAction] | None:
        return documents.code_actions(params)

    return server


class _OpenDocuments:
    """The server's open documents: each one's last check, published as diagnostics."""

    def __init__(self, server: LanguageServer) -> None:
        self.server = server
        self.settings = SettingsCache()
        self.checked: dict[str, CheckedDocument] = {}

    def encoding(self) -> str:
        return str(self.server.workspace.position_encoding or "utf-16")

    def check(self, uri: str) -> CheckedDocument | None:
        """The document checked with its current text and settings (reused when neither
        changed); None when it is not a Python file or its config is broken."""
        path = document_path(uri)
        if path is None:
            return None
        text = self.server.workspace.get_text_document(uri).source
        previous = self.checked.get(uri)
        try:
            settings = self.settings.settings_for(path)
            options = settings.options_for(path)
        except (ConfigError, OSError) as error:
            self.checked.pop(uri, None)
            self._show_config_error(f"devlint: {error}")
            return None
        docs_url = settings.config.docs_url or DEFAULT_DOCS_URL
        if previous is not None and (previous.text, previous.options, previous.docs_url) == (
            text,
            options,
            docs_url,
        ):
            return previous
        found = lint_source(Source(text), str(path), options).diagnostics
        linked = with_urls(found, ReportOptions(docs_url=docs_url))  # as the JSON `url`
        document = CheckedDocument(path, text, options, linked, docs_url)
        self.checked[uri] = document
        return document

    def _show_config_error(self, message: str) -> None:
        if self.settings.first_report(message):
            self.server.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Error, message=message)
            )

    def publish(self, uri: str) -> None:
        """Check the document and send its diagnostics to the editor."""
        try:
            if document_path(uri) is None:
                return  # not a Python file: leave it to other servers
            document = self.check(uri)
            diagnostics = []
            if document is not None:  # None: the config is broken (shown once); clear
                lines = lsp_lines(document.text)
                diagnostics = [
                    to_lsp_diagnostic(d, lines, self.encoding()) for d in document.diagnostics
                ]
            version = self.server.workspace.get_text_document(uri).version
            self.server.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
            )
        except Exception:  # a devlint bug must not take the editor's server down
            _log_failure(self.server, f"devlint failed to check {uri}")

    def close(self, uri: str) -> None:
        """Forget the document and clear its diagnostics."""
        self.checked.pop(uri, None)
        try:
            if document_path(uri) is not None:
                self.server.text_document_publish_diagnostics(
                    types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
                )
        except Exception:
            _log_failure(self.server, f"devlint failed to clear {uri}")

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        """The fixes offered in the requested range (None: nothing to offer)."""
        uri = params.text_document.uri
        try:
            document = self.check(uri)
            if document is None:
                return None
            return code_actions(uri, document, params.range, params.context.only, self.encoding())
        except Exception:
            _log_failure(self.server, f"devlint failed to offer fixes for {uri}")
            return None


def _log_failure(server: LanguageServer, what: str) -> None:
    logger.exception(what)
    try:
        server.window_log_message(
            types.LogMessageParams(type=types.MessageType.Error, message=what)
        )
    except Exception:  # the connection itself is gone: the log above is all we can do
        logger.debug("could not send the failure to the client", exc_info=True)
