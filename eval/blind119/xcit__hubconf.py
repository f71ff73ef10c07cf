# source: https://github.com/facebookresearch/xcit/blob/82f5291f412604970c39a912586e008ec009cdca/hubconf.py
# Copyright (c) 2015-present, Facebook, Inc.
# All rights reserved.
from xcit import *

dependencies = ["torch", "torchvision", "timm"]
