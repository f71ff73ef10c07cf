"""The runtime errors of device bugs, as regular expressions searched in PyTorch's messages.

Rules name the ones their bug raises (``Rule.runtime_errors``); ``devlint run`` maps a
failing script to those rules (``devlint.verify.run_script``).
"""

from __future__ import annotations

NUMPY_OF_DEVICE_TENSOR = r"can't convert (cuda|mps)(:\d+)? device type tensor to numpy"
MIXED_DEVICES = (
    r"Expected all tensors to be on the same device|expected self and mask to be on the "
    r"same device|indices should be either on cpu or on the same device"
)
FLOAT64_ON_MPS = r"Cannot convert a MPS Tensor to float64 dtype"
CUDA_CHECKPOINT_WITHOUT_CUDA = r"Attempting to deserialize object on a CUDA device"
NO_CUDA = r"Torch not compiled with CUDA enabled|torch\.cuda\.\w+ requires CUDA support"
MPS_OPERATOR_MISSING = r"is not currently implemented for the MPS device"
