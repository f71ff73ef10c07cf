"""The corpora: the timm and transformers wheels, downloaded once and unzipped as projects."""

from __future__ import annotations

import os
import re
import shutil
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from devlint_bench.common import COMPLETE, CORPORA_DIR, WHEELS, BenchError
from devlint_bench.tools import reason, run_quiet

CORPORA = ("timm", "transformers")
# The corpus directory is made its own project: `.git` stops the gitignore-aware tools
# (devlint, Fixit, ruff) from applying this repository's .gitignore, which ignores
# bench/.cache/ (Fixit then checks nothing at all); the two files stop the configuration
# search of devlint and Fixit from reaching this repository's pyproject.toml.
MARKERS = {
    "devlint.toml": "# bench: the corpus is its own project, with devlint's defaults\n",
    "fixit.toml": "# bench: the corpus is its own project, with Fixit's defaults\n"
    "[tool.fixit]\nroot = true\n",
}


def _cached_wheel(package: str) -> Path | None:
    pattern = re.compile(rf"{re.escape(package)}-\d[^-]*-.*\.whl", re.IGNORECASE)
    wheels = [path for path in WHEELS.glob("*.whl") if pattern.fullmatch(path.name)]
    return max(wheels, key=lambda path: path.stat().st_mtime) if wheels else None


def fetch_wheel(package: str, python: str) -> Path:
    """The package's wheel, downloaded once with `pip download --no-deps`."""
    cached = _cached_wheel(package)
    if cached is not None:
        return cached
    WHEELS.mkdir(parents=True, exist_ok=True)
    print(f"downloading the {package} wheel ...", file=sys.stderr, flush=True)
    command = [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    command += ["--disable-pip-version-check", "--dest", str(WHEELS), package]
    code, output = run_quiet(command)
    wheel = _cached_wheel(package)
    if code != 0 or wheel is None:
        raise BenchError(f"cannot download the {package} wheel: {reason(output)}")
    return wheel


def extract_corpus(wheel: Path) -> Path:
    """The wheel's .py files (not its .dist-info), unzipped once."""
    target = CORPORA_DIR / wheel.name.removesuffix(".whl")
    if (target / COMPLETE).exists():
        return target
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(target, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                name = PurePosixPath(info.filename)
                if (
                    info.is_dir()
                    or name.suffix != ".py"
                    or name.is_absolute()
                    or ".." in name.parts
                    or name.parts[0].endswith(".dist-info")
                ):
                    continue
                destination = partial.joinpath(*name.parts)
                destination.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as source, open(destination, "wb") as sink:
                    shutil.copyfileobj(source, sink)
    except (zipfile.BadZipFile, OSError) as error:
        shutil.rmtree(partial, ignore_errors=True)
        raise BenchError(f"cannot unzip {wheel.name}: {error} (delete it and rerun)") from None
    (partial / ".git").mkdir()
    for marker, text in MARKERS.items():
        (partial / marker).write_text(text, encoding="utf-8")
    (partial / COMPLETE).write_text(wheel.name + "\n", encoding="utf-8")
    partial.rename(target)
    return target


@dataclass
class Corpus:
    name: str
    wheel: Path
    path: Path
    files: int
    lines: int
    small_file: Path
    small_file_lines: int
    torch_imports: str = "not checked"  # what `devlint check small_file` imports of torch


def prepare_corpus(name: str, python: str) -> Corpus:
    wheel = fetch_wheel(name, python)
    path = extract_corpus(wheel)
    sizes: list[tuple[int, str]] = []
    for directory, subdirs, files in os.walk(path):
        subdirs[:] = sorted(d for d in subdirs if d != ".git")
        for file in sorted(files):
            if file.endswith(".py"):
                full = os.path.join(directory, file)
                with open(full, "rb") as handle:
                    data = handle.read()
                unterminated = bool(data) and not data.endswith(b"\n")
                sizes.append((data.count(b"\n") + unterminated, full))
    if not sizes:
        raise BenchError(f"{wheel.name} holds no .py files")
    by_size = sorted(sizes)
    small_lines, small = by_size[len(by_size) // 2]  # a typical file: the median size
    return Corpus(
        name=name,
        wheel=wheel,
        path=path,
        files=len(sizes),
        lines=sum(size for size, _ in sizes),
        small_file=Path(small),
        small_file_lines=small_lines,
    )
