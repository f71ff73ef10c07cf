"""The shared analysis: what every rule queries about one file.

Where each question is decided:

- "Is this batch on the CPU?", "where does this value live?": the interpreter, a core
  (``interpreter.py``: state and joins) and one handler per module (``statements.py``,
  ``branches.py``, ``imports.py``, ``definitions.py``, ``expressions.py``, ``calls.py``,
  ``effects.py``;
  ``datasets.py`` where the items of the file's own ``Dataset`` classes are,
  ``module_classes.py`` where its ``nn.Module`` instances are) over the lattice in
  ``values.py``.
- "What does this torch API do to placement?" and "does this module have a device?":
  ``torch_api.py``, the semantics table (``call_effect``, ``STATELESS_MODULES``); the few
  guesses devlint still makes from a name, each with its evidence: ``name_guesses.py``.
- "What does ``from utils import *`` bind, what does ``get_args()`` of a sibling return?":
  ``project_imports.py`` (the project's own modules next to the file, summarised by
  ``analyzer.summarize``; ``imports.py`` binds them).
- "Is this ``if`` a CUDA guard?": ``guards.py`` (availability as a boolean value domain);
  "is this code written for CUDA only?": ``requirements.py``; "does this loop train, does
  this branch run on every iteration?": ``loops.py``.
- What rules read: the query API, ``facts.py`` (records, queries, the tables rules need)
  and ``values.py`` (the lattice), the only modules of the analysis rules import;
  ``analyzer.py`` assembles the interpreter and runs it all.
"""

from devlint.analysis.analyzer import analyze

__all__ = ["analyze"]
