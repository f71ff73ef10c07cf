"""Stand-in for the tiktoken package (not installed here; it downloads its BPE files).

Written for devlint's runnable corpus: sample.py imports tiktoken at the top but only uses
it when the dataset has no meta.pkl; the corpus's tiny dataset has one, so nothing here is
ever called. This file sits next to sample.py, which puts it first on sys.path.
"""


def get_encoding(name):
    raise RuntimeError(f"tiktoken stand-in: no {name!r} encoding offline (use a meta.pkl)")
