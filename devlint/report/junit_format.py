"""JUnit XML: one test suite per file, one failing test case per diagnostic.

With no diagnostics, a single ``devlint`` suite holds one passing test case, so CI
dashboards show a green run rather than an empty report.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from itertools import groupby
from typing import TextIO

from devlint.diagnostics import Diagnostic
from devlint.report import ReportOptions, display_path, position

# Characters XML 1.0 cannot carry at all, even escaped.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _counts(element: ET.Element, tests: int, failures: int) -> None:
    element.set("tests", str(tests))
    element.set("failures", str(failures))
    element.set("errors", "0")
    element.set("skipped", "0")


def to_xml(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> ET.Element:
    suites = ET.Element("testsuites", name="devlint")
    _counts(suites, len(diagnostics) or 1, len(diagnostics))
    if not diagnostics:
        suite = ET.SubElement(suites, "testsuite", name="devlint")
        _counts(suite, 1, 0)
        properties = ET.SubElement(suite, "properties")
        ET.SubElement(
            properties, "property", name="files_checked", value=str(options.files_checked)
        )
        ET.SubElement(suite, "testcase", name="All checks passed", classname="devlint")
        return suites
    for path, group in groupby(diagnostics, key=lambda d: display_path(d.path, options.cwd)):
        found = list(group)
        shown = _xml_text(path)
        suite = ET.SubElement(suites, "testsuite", name=shown)
        _counts(suite, len(found), len(found))
        for d in found:
            where = position(d)
            case = ET.SubElement(
                suite,
                "testcase",
                name=f"{d.code} ({d.name}) at {where}",
                classname=shown,
                file=shown,
                line=str(d.start.row),
                column=str(d.start.column),
            )
            if d.cell is not None:
                case.set("cell", str(d.cell))
            failure = ET.SubElement(case, "failure", message=_xml_text(d.message), type=d.code)
            failure.text = _xml_text(f"{shown}:{where}: {d.code} {d.message}")
    return suites


def render(diagnostics: Sequence[Diagnostic], out: TextIO, options: ReportOptions) -> None:
    root = to_xml(diagnostics, options)
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")
