# -*- coding: utf-8 -*-
# PyTorch 中 CPU 和 GPU(CUDA / MPS)的切换
import numpy as np
import torch

# 1、验证 CUDA / MPS 可用性
print("CUDA 可用:", torch.cuda.is_available())
print("MPS 可用:", torch.backends.mps.is_available())

if torch.cuda.is_available():
    print("CUDA 版本:", torch.version.cuda)
    print("GPU 数量:", torch.cuda.device_count())
    print("GPU 名称:", torch.cuda.get_device_name(0))
    print("GPU 显存: %.2f GB" % (torch.cuda.get_device_properties(0).total_memory / 1e9))

# 2、默认情况下,张量创建在 CPU 上
t = torch.tensor([1.0, 2.0, 3.0])
print(t, t.device)

# 3、如果事先知道 GPU 的可用状态,可以直接在 GPU 上创建
if torch.cuda.is_available():
    x = torch.rand(3, device="cuda")
    print("Device: cuda", x)
elif torch.backends.mps.is_available():
    x = torch.rand(3, device="mps")
    print("Device: mps", x)
else:
    x = torch.rand(3)
    print("Device: cpu", x)

# 每次写一堆 if else 比较费劲,可以用三元表达式简写
device_name = (
    "cuda" if torch.cuda.is_available()
    else "mps" if torch.backends.mps.is_available()
    else "cpu"
)
device = torch.device(device_name)

# 4、用 .to 在 CPU 和 GPU 之间切换
t_gpu = t.to(device)
print(t_gpu, t_gpu.device)
t_back = t_gpu.to("cpu")
print(t_back.numpy())
print(t_gpu.cpu().numpy())
print(t_gpu.tolist())
print(t_gpu.sum().item())

# 在 GPU 上运算,结果仍在 GPU 上
y = t_gpu * 2 + 1
w = torch.ones(3, device=device)
print((y * w).mean().item())

# 注意:张量的 .to() 不是原地操作,需要重新赋值
t = t.to(device)
z = t + y
print(z.cpu())

# 多块 GPU 时逐块查看
for i in range(torch.cuda.device_count()):
    print(i, torch.cuda.get_device_name(i))

# 5、和 NumPy 互转
arr = np.arange(6, dtype=np.float32).reshape(2, 3)
g = torch.from_numpy(arr).to(device)
back = g.detach().cpu().numpy()
print(np.allclose(arr, back))

# 标量张量(0 维)可以和任意设备上的张量一起计算
scale = torch.tensor(2.0)
print((g * scale).cpu())
print(np.asarray(g.mean(dim=0).cpu()))
