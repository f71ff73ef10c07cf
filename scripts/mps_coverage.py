"""Derive ``devlint/analysis/mps_coverage.json``: MPS kernels per aten operator and release.

For every torch release devlint supports as ``target-torch`` (2.0 to 2.13), this reads the
macOS arm64 wheel from PyPI (the only build with MPS):

- ``torchgen/packaged/ATen/native/native_functions.yaml``: which operators have an MPS
  kernel, a structured delegate with one, or a composite kernel
  (``devlint.analysis.mps_coverage.classify``);
- ``torch/lib/libtorch_cpu.dylib``: the operator names each ``TORCH_LIBRARY_IMPL(aten, MPS,
  m)`` block registers, found in the machine code (each block's static initialiser loads
  the string ``"aten"`` and its source file's path; the registration function it points
  to loads the operator names, ``m.impl("name", ...)``). Blocks in the generated
  ``RegisterMPS*.cpp`` must agree with the yaml (checked); blocks elsewhere under
  ``aten/src/ATen/native/mps/`` are kernels outside the yaml; the block of
  ``aten/src/ATen/mps/MPSFallback.mm`` lists the operators always sent to the CPU. The
  texts of its error and warning come from the same file;
- ``torch/version.py``: the commit torch's error message names.

Wheels are cached outside the repository (``--cache``, default
``~/.cache/devlint/torch-wheels``); they are 55-110 MB each and never committed.

    .venv/bin/python scripts/mps_coverage.py                 # download what is missing
    .venv/bin/python scripts/mps_coverage.py --check         # exit 1 if the table differs
    .venv/bin/python scripts/mps_coverage.py --report        # counts per release

Needs PyYAML and NumPy (both in the ``test`` and ``verify`` environments).
"""

from __future__ import annotations

import argparse
import json
import re
import struct
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from devlint.analysis.mps_coverage import RELEASES as COLUMNS  # noqa: E402
from devlint.analysis.mps_coverage import classify  # noqa: E402

TABLE = ROOT / "devlint" / "analysis" / "mps_coverage.json"
RELEASES = [f"{major}.{minor}" for major, minor in COLUMNS]
# Newer releases are built for macOS 14 and later only.
PLATFORMS = ("macosx_11_0_arm64", "macosx_14_0_arm64")
YAML = "torchgen/packaged/ATen/native/native_functions.yaml"
DYLIB = "torch/lib/libtorch_cpu.dylib"
FALLBACK_SOURCE = "aten/src/ATen/mps/MPSFallback.mm"
# Registered in MPSFallback.mm with a kernel that only checks its inputs' devices: not a
# fallback (``_slow_conv2d_forward`` is never reached with both tensors on MPS).
NOT_FALLBACKS = frozenset({"_slow_conv2d_forward"})
EXTRACTION = 2  # bump when what is read from the dylib changes: re-reads every wheel


@dataclass
class Release:
    version: str
    functions: list[dict]
    commit: str
    registered: dict[str, set[str]] = field(default_factory=dict)  # source file -> names
    error: str = ""
    warning: str = ""


# -- wheels


def wheel_for(version: str, cache: Path, download: bool) -> Path:
    found = sorted(cache.glob(f"torch-{version}.0-*macosx_*_arm64.whl"))
    if found:
        return found[0]
    if not download:
        raise SystemExit(f"no torch {version} wheel in {cache} (run without --offline)")
    cache.mkdir(parents=True, exist_ok=True)
    for platform in PLATFORMS:
        command = [
            sys.executable, "-m", "pip", "download", f"torch=={version}.0", "--no-deps",
            "--only-binary=:all:", "--platform", platform, "--python-version", "3.11",
            "-d", str(cache), "-q",
        ]  # fmt: skip
        if subprocess.run(command, check=False).returncode == 0:
            return wheel_for(version, cache, download=False)
    raise SystemExit(f"pip could not download torch {version}.0 for macOS arm64")


def read_release(version: str, wheel: Path, refresh: bool = False) -> Release:
    """One release's yaml, and what its dylib registers (cached beside the wheel)."""
    with zipfile.ZipFile(wheel) as archive:
        functions = yaml.load(archive.read(YAML), Loader=getattr(yaml, "CSafeLoader", None))
        extracted = wheel.with_name(wheel.name + f".devlint-{EXTRACTION}.json")
        if extracted.is_file() and not refresh:
            found = json.loads(extracted.read_text(encoding="utf-8"))
        else:
            version_py = archive.read("torch/version.py").decode()
            commit = re.search(r"git_version\s*=\s*['\"]([0-9a-f]+)['\"]", version_py)
            image = MachO(archive.read(DYLIB))
            found = {
                "commit": commit[1] if commit else "",
                "registered": {k: sorted(v) for k, v in image.mps_registrations().items()},
                "error": image.message_after("' is not currently implemented "),
                "warning": image.message_after("' is not currently supported "),
            }
            extracted.write_text(json.dumps(found, indent=1), encoding="utf-8")
    registered = {source: set(names) for source, names in found["registered"].items()}
    return Release(
        version, functions, found["commit"], registered, found["error"], found["warning"]
    )


# -- the dylib: Mach-O sections, and the strings and functions its arm64 code refers to


class MachO:
    """Just enough of a 64-bit arm64 Mach-O image to follow its string references."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        sections, self.starts = _load_commands(data)
        self.text_addr, text_size, text_offset = sections["__TEXT", "__text"]
        self.cstring = sections["__TEXT", "__cstring"]
        code = np.frombuffer(data, "<u4", text_size // 4, text_offset).astype(np.int64)
        self.code = code
        pcs = self.text_addr + 4 * np.arange(len(code), dtype=np.int64)
        # ADRP x, page; ADD x, x, #offset (up to five instructions apart); ADR x, label
        adrp = (code & 0x9F000000) == 0x90000000
        imm = (((code >> 5) & 0x7FFFF) << 2) | ((code >> 29) & 3)
        imm = np.where(imm & (1 << 20), imm - (1 << 21), imm)
        page = (pcs & ~0xFFF) + (imm << 12)
        add = (code & 0xFFC00000) == 0x91000000
        targets = np.full(len(code), -1, dtype=np.int64)
        first = np.nonzero(adrp)[0]
        for distance in range(1, 6):
            then = first + distance
            keep = then < len(code)
            then, at = then[keep], first[keep]
            ok = add[then] & (((code[then] >> 5) & 31) == (code[at] & 31)) & (targets[then] < 0)
            targets[then[ok]] = page[at[ok]] + ((code[then[ok]] >> 10) & 0xFFF)
        adr = (code & 0x9F000000) == 0x10000000
        self.targets = np.where(adr, pcs + imm, targets)
        branch = (code & 0xFC000000) == 0x94000000  # BL
        offset = code & 0x3FFFFFF
        offset = np.where(offset & (1 << 25), offset - (1 << 26), offset)
        self.calls = np.where(branch, pcs + 4 * offset, -1)
        start, size, _ = self.cstring
        self.string_refs = np.nonzero((self.targets >= start) & (self.targets < start + size))[0]
        self._strings: dict[int, str] = {}
        self._start_set = set(self.starts.tolist())

    def string(self, address: int) -> str:
        if address not in self._strings:
            start, _, offset = self.cstring
            begin = offset + address - start
            self._strings[address] = self.data[begin : self.data.index(b"\0", begin)].decode(
                "utf-8", "replace"
            )
        return self._strings[address]

    def function(self, address: int) -> tuple[int, int]:
        """The instruction range of the function that contains ``address``."""
        after = np.searchsorted(self.starts, address, side="right")
        begin = self.starts[after - 1] if after else self.text_addr
        end = (
            self.starts[after] if after < len(self.starts) else self.text_addr + 4 * len(self.code)
        )
        return int(begin - self.text_addr) // 4, int(end - self.text_addr) // 4

    def strings_in(self, span: tuple[int, int]) -> list[str]:
        refs = self.string_refs
        chosen = refs[(refs >= span[0]) & (refs < span[1])]
        return [self.string(int(self.targets[i])) for i in chosen]

    def mps_registrations(self) -> dict[str, set[str]]:
        """Source file -> the names its ``TORCH_LIBRARY_IMPL(aten, MPS...)`` blocks
        register (registration functions and the helpers they call nearby)."""
        found: dict[str, set[str]] = {}
        for ref in self.string_refs:
            if self.string(int(self.targets[ref])) != "aten":
                continue
            initialiser = self.function(int(self.text_addr + 4 * ref))
            paths = [s for s in self.strings_in(initialiser) if s.startswith("/")]
            path = next((p for p in paths if _mps_source(p)), None)
            if path is None:
                continue
            names = found.setdefault(path.split("/pytorch/", 1)[-1].split("pytorch/", 1)[-1], set())
            for i in range(*initialiser):
                target = int(self.targets[i])
                if target in self._start_set:
                    names.update(self._registered_by(target))
        return found

    def _registered_by(self, function: int) -> list[str]:
        span = self.function(function)
        names = self.strings_in(span)
        for i in range(*span):
            callee = int(self.calls[i])
            if callee in self._start_set and abs(callee - function) < (1 << 20):
                names += self.strings_in(self.function(callee))
        return names

    def message_after(self, marker: str) -> str:
        """The text a ``TORCH_CHECK``/``TORCH_WARN`` of MPSFallback.mm builds around the
        operator's name, with ``{op}`` in its place (and ``{commit}`` for the build's
        commit): its literals follow each other in ``__cstring``, in source order."""
        _, size, offset = self.cstring
        section = self.data[offset : offset + size]
        at = section.find(b"\0" + marker.encode() + b"\0")
        if at < 0:
            return ""
        parts = ["The operator '{op}"]
        for piece in section[at + 1 : at + 2000].split(b"\0")[:12]:
            text = piece.decode("utf-8", "replace")
            if re.fullmatch(r"\w+", text):  # the next function's name: the text ended
                break
            parts.append(text + ("{commit}" if text.endswith("commit hash ") else ""))
            if text.endswith(("on MPS.", "implications.")):
                return "".join(parts)
        # A last literal the linker merged with an identical one elsewhere in the image.
        if parts[-1].endswith("CPU.") and b"\0" + _TAIL + b"\0" in section:
            return "".join(parts) + _TAIL.decode()
        return ""


_TAIL = b" This may have performance implications."


def _mps_source(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return (
        "/ATen/native/mps/" in path
        or "/ATen/mps/" in path
        or bool(re.fullmatch(r"RegisterMPS(_\d+)?\.cpp", name))
    )


def _load_commands(data: bytes) -> tuple[dict[tuple[str, str], tuple[int, int, int]], np.ndarray]:
    magic, _, _, _, count = struct.unpack_from("<IiiII", data, 0)
    if magic != 0xFEEDFACF:
        raise ValueError("not a 64-bit Mach-O image")
    sections: dict[tuple[str, str], tuple[int, int, int]] = {}
    starts: list[int] = []
    offset = 32
    for _ in range(count):
        command, size = struct.unpack_from("<II", data, offset)
        if command == 0x19:  # LC_SEGMENT_64
            segment = data[offset + 8 : offset + 24].rstrip(b"\0").decode()
            (nsections,) = struct.unpack_from("<I", data, offset + 64)
            at = offset + 72
            for _ in range(nsections):
                name = data[at : at + 16].rstrip(b"\0").decode()
                address, length, file_offset = struct.unpack_from("<QQI", data, at + 32)
                sections[segment, name] = (address, length, file_offset)
                at += 80
        elif command == 0x26:  # LC_FUNCTION_STARTS: ULEB128 deltas
            begin, length = struct.unpack_from("<II", data, offset + 8)
            address = value = shift = 0
            for byte in data[begin : begin + length]:
                value |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    if value == 0:
                        break
                    address += value
                    starts.append(address)
                    value = shift = 0
        offset += size
    return sections, np.array(starts, dtype=np.int64)


# -- the table


def columns(releases: list[Release]) -> tuple[dict[str, str], dict, dict, list[str]]:
    """Per operator, one status letter per release; the kernels outside the yaml and the
    fallbacks per release; and the disagreements between the dylib and the yaml."""
    problems: list[str] = []
    outside: dict[str, list[str]] = {}
    fallback: dict[str, list[str]] = {}
    per_release = []
    for release in releases:
        names = {f"{n}" for f in release.functions for n in [f["func"].split("(", 1)[0]]}
        generated: set[str] = set()
        extra: set[str] = set()
        falls: set[str] = set()
        for source, registered in release.registered.items():
            known = registered & names
            if source.endswith(FALLBACK_SOURCE):
                falls |= known - NOT_FALLBACKS
                extra |= known & NOT_FALLBACKS
            elif re.search(r"RegisterMPS(_\d+)?\.cpp$", source):
                generated |= known
            else:
                extra |= known
        column = classify(release.functions, extra, falls)
        yaml_kernels = {
            name for name, letter in classify(release.functions).items() if letter == "K"
        }
        if generated and generated != yaml_kernels:
            problems.append(
                f"{release.version}: RegisterMPS registers {sorted(generated - yaml_kernels)} "
                f"beyond the yaml, lacks {sorted(yaml_kernels - generated)}"
            )
        both = falls & yaml_kernels
        if both:
            problems.append(f"{release.version}: both a kernel and a fallback: {sorted(both)}")
        outside[release.version] = sorted(extra - yaml_kernels)
        fallback[release.version] = sorted(falls - yaml_kernels)
        per_release.append(column)
    every = sorted(set().union(*per_release))
    table = {}
    for name in every:
        letters = "".join(column.get(name, "-") for column in per_release)
        if "M" in letters or "F" in letters or ("K" in letters and "C" in letters):
            table[name] = letters
    return table, outside, fallback, problems


def build(cache: Path, download: bool, refresh: bool = False) -> tuple[dict, list[str]]:
    releases = []
    for version in RELEASES:
        wheel = wheel_for(version, cache, download)
        print(f"torch {version}: {wheel.name}", file=sys.stderr)
        releases.append(read_release(version, wheel, refresh))
    table, outside, fallback, problems = columns(releases)
    messages: dict[str, dict[str, str]] = {}
    previous: dict[str, str] = {}
    for release in releases:
        entry = {"error": release.error, "warning": release.warning}
        if entry != previous:
            messages[release.version] = entry
            previous = entry
    data = {
        "source": "native_functions.yaml and libtorch_cpu.dylib of torch's macOS arm64 "
        "wheels (scripts/mps_coverage.py)",
        "releases": RELEASES,
        "commits": {release.version: release.commit for release in releases},
        "messages": messages,
        "outside_yaml": outside,
        "falls_back": fallback,
        "operators": table,
    }
    return data, problems


def dumps(data: dict) -> str:
    """JSON with one operator per line (reviewable diffs, small file)."""
    head = {key: value for key, value in data.items() if key != "operators"}
    text = json.dumps(head, indent=1, ensure_ascii=False)[:-2]
    lines = [f"  {json.dumps(name)}: {json.dumps(s)}" for name, s in data["operators"].items()]
    return text + ',\n "operators": {\n' + ",\n".join(lines) + "\n }\n}\n"


def report(data: dict) -> str:
    rows = ["release  missing  falls-back"]
    for index, version in enumerate(data["releases"]):
        letters = [statuses[index] for statuses in data["operators"].values()]
        rows.append(f"{version:<8} {letters.count('M'):>7}  {letters.count('F'):>10}")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache/devlint/torch-wheels")
    parser.add_argument("--offline", action="store_true", help="use cached wheels only")
    parser.add_argument("--refresh", action="store_true", help="re-read the dylibs")
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument("--report", action="store_true", help="print counts per release")
    options = parser.parse_args()
    data, problems = build(options.cache, not options.offline, options.refresh)
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    if options.report:
        print(report(data))
    text = dumps(data)
    if options.check:
        same = TABLE.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{TABLE.relative_to(ROOT)} differs", file=sys.stderr)
        return 0 if same else 1
    TABLE.write_text(text, encoding="utf-8")
    print(f"wrote {TABLE.relative_to(ROOT)}: {len(data['operators'])} operators", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
