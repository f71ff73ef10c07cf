"""
Tutorial: working with tensors on the GPU
=========================================

In this lesson we check which devices are available, create tensors on the GPU,
move them back and forth, and convert results to NumPy.
"""
import numpy as np
import torch

# ---------------------------------------------------------------
# 1. What do we have?
# ---------------------------------------------------------------
print("CUDA available:", torch.cuda.is_available())
print("GPU count:", torch.cuda.device_count())
if torch.cuda.is_available():
    print("Current GPU:", torch.cuda.current_device())
    print("GPU name:", torch.cuda.get_device_name(0))
print("MPS available:", torch.backends.mps.is_available())

# ---------------------------------------------------------------
# 2. Creating tensors directly on the GPU
# ---------------------------------------------------------------
a = torch.ones(3, 3, device="cuda")  # expect: DEV003
b = torch.rand(3, 3).to(a.device)
c = a + b
print(c, c.device)

# ---------------------------------------------------------------
# 3. Moving tensors between devices
# ---------------------------------------------------------------
d = torch.arange(9, dtype=torch.float32).reshape(3, 3)
d.to(a.device)  # expect: DEV008
e = c + d  # expect: DEV006
print(e)

# A Python number or a 0-dim tensor can be combined with a GPU tensor
scale = torch.tensor(0.5)
f = c * scale + 1.0
print(f)

# ---------------------------------------------------------------
# 4. Back to NumPy
# ---------------------------------------------------------------
arr = c.numpy()  # expect: DEV001
arr_ok = c.cpu().numpy()
print(type(arr_ok), arr_ok.dtype)

g = torch.from_numpy(np.eye(3, dtype=np.float32))
h = g.to(a.device) @ c
print(h.cpu().numpy())

# ---------------------------------------------------------------
# 5. The portable way: pick a device once
# ---------------------------------------------------------------
device = torch.device(
    "cuda" if torch.cuda.is_available()
    else "mps" if torch.backends.mps.is_available()
    else "cpu"
)
x = torch.randn(4, 4, device=device)
w = torch.randn(4, 4).to(device)
y = (x @ w).relu()
print(y.sum().item(), y.mean(dim=0).tolist())
print(y.detach().cpu().numpy().round(2))
