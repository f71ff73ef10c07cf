# source: https://github.com/amdegroot/ssd.pytorch/blob/5b0b77faa955c1917b0c710d770739ba8fbff9b7/layers/modules/__init__.py
from .l2norm import L2Norm
from .multibox_loss import MultiBoxLoss

__all__ = ['L2Norm', 'MultiBoxLoss']
