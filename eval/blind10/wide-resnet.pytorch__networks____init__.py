# source: https://github.com/meliketoy/wide-resnet.pytorch/blob/292b3ede0651e349dd566f9c23408aa572f1bd92/networks/__init__.py
from .lenet import *
from .vggnet import *
from .resnet import *
from .wide_resnet import *
