"""Stand-in for torchvision in devlint's runnable corpus (written for the corpus).

pytorch/examples' mnist/main.py needs ``torchvision.datasets.MNIST`` (a download) and three
transforms. This package, next to main.py and so first on sys.path, provides just those,
with a tiny generated data set, so that main.py runs unchanged and offline. Where the real
torchvision is installed, this stand-in still wins, on purpose: the corpus never downloads.
"""

from . import datasets, transforms

__all__ = ["datasets", "transforms"]
