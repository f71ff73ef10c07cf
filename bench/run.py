"""The peer benchmark: devlint against its floor, its libcst peers and ruff, on real code.

Downloads the ``timm`` and ``transformers`` wheels (cached in ``bench/.cache/``), and
times, as whole processes and several times each: bare ``libcst.parse_module`` of every
file on the same number of processes (the floor), devlint cold and warm, devlint on one
file next to ``python -c "import libcst, click"``, TorchFix and Fixit (each in its own
throwaway virtualenv) and ruff with every rule. See ``bench/README.md``.

    python bench/run.py [--corpus timm|transformers|all] [--repeat N] [--jobs N]
                        [--no-peers] [--peers-on timm|transformers|all] [--quick]
                        [--peer-timeout S] [--timeout S] [--json FILE]

The code is the ``devlint_bench`` package beside this file, one job a module: ``common``
(paths, errors, the measured environment), ``measure`` (timing one process tree),
``corpora`` (wheels unzipped as projects), ``tools`` (devlint, ruff and the peers'
virtualenvs), ``rows`` (the commands of one corpus, run round-robin), ``report``
(tables, scaling, targets, JSON) and ``__main__`` (options and the run).
"""

import sys

from devlint_bench.__main__ import run  # bench/ is on sys.path: this script's folder

if __name__ == "__main__":
    sys.exit(run())
