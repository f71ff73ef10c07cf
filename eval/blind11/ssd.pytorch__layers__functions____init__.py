# source: https://github.com/amdegroot/ssd.pytorch/blob/5b0b77faa955c1917b0c710d770739ba8fbff9b7/layers/functions/__init__.py
from .detection import Detect
from .prior_box import PriorBox


__all__ = ['Detect', 'PriorBox']
