# 【从零开始学习深度学习】Pytorch 中如何让参数与模型在 GPU 上进行计算
# 本文的代码需要 PyTorch GPU 版本;查看显卡信息: !nvidia-smi
import torch
from torch import nn

# 1. 计算设备
print(torch.cuda.is_available())  # 输出 True
print(torch.cuda.device_count())  # 输出 1
if torch.cuda.is_available():
    print(torch.cuda.current_device())  # 输出 0
    print(torch.cuda.get_device_name(0))  # 输出 'GeForce GTX 1050'

# 2. Tensor 的 GPU 计算
x = torch.tensor([1, 2, 3])
print(x)

# 使用 .cuda() 可以将 CPU 上的 Tensor 转换(复制)到 GPU 上
x = x.cuda(0)  # expect: DEV003
print(x)
print(x.device)

# 也可以在创建的时候就指定设备
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')  # expect: DEV004
x = torch.tensor([1, 2, 3], device=device)
# 或者
x = torch.tensor([1, 2, 3]).to(device)
print(x)

# 对 GPU 上的数据进行运算,结果还是存放在 GPU 上
y = x ** 2
print(y)

# 存储在不同位置中的数据是不可以直接进行计算的
z = y + x.cpu()  # expect: DEV006
print(z)

# 3. 模型的 GPU 计算
net = nn.Linear(3, 1)
print(list(net.parameters())[0].device)

net.cuda()  # expect: DEV003
print(list(net.parameters())[0].device)

# 需要保证模型输入的 Tensor 和模型都在同一设备上
x = torch.rand(2, 3).to(device)
print(net(x))

# 总结:
# - PyTorch 可以指定用来存储和计算的设备,默认在内存上用 CPU 计算;
# - PyTorch 要求计算的所有输入数据都在内存或同一块显卡的显存上。
