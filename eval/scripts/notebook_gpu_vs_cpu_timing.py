#!/usr/bin/env python
# coding: utf-8

# # GPU 到底比 CPU 快多少?
# 用矩阵乘法做一个简单的对比实验。

# In[1]:


import time

import matplotlib.pyplot as plt
import numpy as np
import torch

print(torch.__version__)
print(torch.cuda.is_available())
print(torch.cuda.get_device_name(0))  # expect: DEV011


# In[2]:


sizes = [256, 512, 1024, 2048, 4096]
cpu_times, gpu_times = [], []


# In[3]:


for n in sizes:
    a = torch.randn(n, n)
    start = time.time()
    for _ in range(10):
        c = a @ a
    cpu_times.append((time.time() - start) / 10)
cpu_times


# In[4]:


for n in sizes:
    a = torch.randn(n, n, device="cuda")  # expect: DEV003
    c = a @ a  # warm-up
    torch.cuda.synchronize()  # expect: DEV011
    start = time.time()
    for _ in range(10):
        c = a @ a
    torch.cuda.synchronize()  # expect: DEV011
    gpu_times.append((time.time() - start) / 10)
gpu_times


# In[5]:


# 结果是否一致?
a_cpu = torch.randn(1024, 1024)
a_gpu = a_cpu.cuda()  # expect: DEV003
diff = np.abs((a_cpu @ a_cpu).numpy() - (a_gpu @ a_gpu).cpu().numpy()).max()
print("max abs diff:", diff)


# In[6]:


speedup = np.array(cpu_times) / np.array(gpu_times)
plt.figure(figsize=(6, 4))
plt.bar([str(n) for n in sizes], speedup)
plt.xlabel("matrix size")
plt.ylabel("speed-up (CPU time / GPU time)")
plt.show()


# In[7]:


del a, c, a_gpu
torch.cuda.empty_cache()
