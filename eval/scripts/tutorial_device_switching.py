# -*- coding: utf-8 -*-
"""
CPU 和 GPU 的切换 (CUDA / MPS / CPU 通用写法)

每次写一堆 if else 比较费劲, 所以把设备选择写成一个函数,
之后统一用 .to(device) 在 CPU 和 GPU 之间切换。
"""
import numpy as np
import torch
import torch.nn as nn


def get_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    elif torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


device = get_device()
print("Device:", device)

# 只有 NVIDIA 显卡才有这些信息
if torch.cuda.is_available():
    print("GPU 数量:", torch.cuda.device_count())
    print("GPU 名称:", torch.cuda.get_device_name(0))

# 默认情况下张量创建在 CPU 上
x = torch.tensor([1.0, 2.0, 3.0])
print(x, x.device)

# 直接在目标设备上创建
r = torch.rand(2, 3, device=device)
print(r, r.device)

# 用 .to() 在 CPU 和 GPU 之间切换
x_gpu = x.to(device)
y = x_gpu * 2 + 1
print(y, y.device)

# 结果转成 numpy 之前先搬回 CPU
y_np = y.cpu().numpy()
print(type(y_np), y_np)

# 两个张量必须在同一个设备上才能计算
z = y + x.to(device)
print(z.sum().item())

# numpy -> tensor -> device
arr = np.linspace(0, 1, 5, dtype=np.float32)
t = torch.from_numpy(arr).to(device)
print((t ** 2).tolist())

# 模型也一样
net = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
net.to(device)
out = net(r)
print(out.detach().cpu().numpy().round(3))

# 计时前同步一下 (只有 CUDA 需要)
if device.type == "cuda":
    torch.cuda.synchronize()
