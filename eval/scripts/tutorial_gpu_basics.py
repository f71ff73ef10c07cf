# -*- coding: utf-8 -*-
# 【从零开始学深度学习】第 20 课:让参数与模型在 GPU 上进行计算
# 先在终端里跑一下 nvidia-smi 看看显卡信息,然后再运行本脚本。
import torch
from torch import nn

# 1. 计算设备
print(torch.cuda.is_available())      # 输出 True
print(torch.cuda.device_count())      # 查看 GPU 数量, 输出 1
print(torch.cuda.current_device())  # expect: DEV011
print(torch.cuda.get_device_name(0))  # expect: DEV011

# 2. Tensor 的 GPU 计算
x = torch.tensor([1, 2, 3])
print(x)  # tensor([1, 2, 3])

# 使用 .cuda() 可以将 CPU 上的 Tensor 复制到 GPU 上, cuda(0) 和 cuda() 等价
x = x.cuda(0)  # expect: DEV003
print(x)
print(x.device)  # device(type='cuda', index=0)

# 也可以在创建的时候就指定设备
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')  # expect: DEV004
x = torch.tensor([1, 2, 3], device=device)
# 或者
x = torch.tensor([1, 2, 3]).to(device)
print(x)

# 对在 GPU 上的数据进行运算, 结果还是存放在 GPU 上
y = x ** 2
print(y)

# 存储在不同位置中的数据是不可以直接进行计算的
z = y + x.cpu()  # expect: DEV006
print(z)

# 3. 模型的 GPU 计算
net = nn.Linear(3, 1)
print(list(net.parameters())[0].device)  # device(type='cpu')

net.cuda()  # expect: DEV003
print(list(net.parameters())[0].device)  # device(type='cuda', index=0)

# 需要保证模型输入的 Tensor 和模型都在同一设备上, 否则会报错
x = torch.rand(2, 3).cuda()  # expect: DEV003
print(net(x))

# 4. 保存和加载 (加载时直接放到 GPU 上)
torch.save(net.state_dict(), "linear.pt")
state = torch.load("linear.pt", map_location="cuda")  # expect: DEV003
net.load_state_dict(state)
