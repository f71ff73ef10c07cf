"""devlint: find and fix device bugs in PyTorch code."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("devlint")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"
