"""devlint's log (the ``devlint`` logger), with the ``logging`` package imported only when
something is logged: a check that warns of nothing never imports it.

The command line says how the log is shown (``configure``); that is applied to the
logger when it is first asked for afterwards, in the process that logs (a forked worker
too), exactly as it would have been at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import logging

NAME = "devlint"
_pending: tuple[bool, bool] | None = None  # (quiet, verbose), to apply at the next logger()
_verbose = False


def configure(quiet: bool, verbose: bool) -> None:
    """devlint's log lines go to stderr: `warning: ...` (an invalid `# noqa`), and with
    ``verbose`` `info: ...`; ``quiet`` keeps them all back."""
    global _pending, _verbose
    _pending, _verbose = (quiet, verbose), verbose and not quiet


def shows_info() -> bool:
    """Whether `info: ...` lines are shown (``--verbose``): else there is no need to log them."""
    return _pending is None or _verbose


def logger() -> logging.Logger:
    """The ``devlint`` logger, set up as the command line last said."""
    global _pending
    import logging
    import sys

    found = logging.getLogger(NAME)
    if _pending is not None:
        quiet, verbose = _pending
        _pending = None
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
        found.handlers = [handler]
        found.propagate = False
        found.setLevel(logging.ERROR if quiet else logging.INFO if verbose else logging.WARNING)
        logging.addLevelName(logging.WARNING, "warning")
        logging.addLevelName(logging.INFO, "info")
    return found
