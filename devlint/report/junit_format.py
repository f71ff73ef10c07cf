"""JUnit XML: one test suite per file, one failing test case per diagnostic."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from itertools import groupby
from typing import TextIO

from devlint.diagnostics import Diagnostic
from devlint.report import ReportOptions, display_path


def render(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    suites = ET.Element("testsuites", name="devlint", tests=str(len(diagnostics) or 1), failures=str(len(diagnostics)))
    if not diagnostics:
        suite = ET.SubElement(suites, "testsuite", name="devlint", tests="1", failures="0")
        ET.SubElement(suite, "testcase", name="No diagnostics", classname="devlint")
    for path, group in groupby(diagnostics, key=lambda d: d.path):
        found = list(group)
        shown = display_path(path, options.cwd)
        suite = ET.SubElement(suites, "testsuite", name=shown, tests=str(len(found)), failures=str(len(found)))
        for d in found:
            where = f"{d.start.row}:{d.start.column}"
            if d.cell is not None:
                where = f"cell {d.cell}:{where}"
            case = ET.SubElement(suite, "testcase", name=f"{d.code} at {shown}:{where}", classname=shown, line=str(d.start.row))
            failure = ET.SubElement(case, "failure", message=d.message, type=d.code)
            failure.text = f"{shown}:{where}: {d.code} {d.message}"
    ET.indent(suites)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(suites, encoding="unicode") + "\n")
