"""The ``json-lines`` output (ruff's): one ``json`` diagnostic object per line."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TextIO

from devlint.diagnostics import Diagnostic
from devlint.report import ReportOptions
from devlint.report.json_format import to_dict


def render(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    for d in diagnostics:
        out.write(json.dumps(to_dict(d, options.cwd)) + "\n")
