"""The runtime companion: run the rule fixtures on the devices present (imports torch lazily).

``devlint verify`` (``command.verify``) runs every fixture program of ``devlint.fixtures`` on
each requested device that is present, in child processes (``bootstrap.py``), and checks the
outcome each ``expect.toml`` declares. The pieces:

- ``expectations``: the ``expect.toml`` format and checking an outcome against it;
- ``fixture_set``: finding the shipped fixtures, and devlint's live fix of a program;
- ``devices``: detecting devices (the only torch import on this side), matrix columns;
- ``virtual`` / ``virtual_runtime`` / ``virtual_columns``: the virtual CUDA and MPS device, the
  runtime around it, and the virtual columns;
- ``run_script``: ``devlint run``, a user's script on the virtual device;
- ``agreement``: static findings vs what the runs showed, per rule;
- ``observed``: the record of what runs observed, and observed vs declared;
- ``plan`` / ``runner``: what runs where, batching, timeouts, fallback;
- ``report`` / ``command``: the matrix as text, a rich table or JSON; the click command.
"""

from devlint.verify.fixture_set import fixed_source
from devlint.verify.runner import VerifyOptions, VerifyReport, run_verify

__all__ = ["VerifyOptions", "VerifyReport", "fixed_source", "run_verify"]
