# -*- coding: utf-8 -*-
"""
PyTorch 入门(二)：在 GPU 上训练一个线性回归模型

参考博客《从零开始学习深度学习》系列整理，原文用 CPU 训练，这里改成 GPU 版本。
运行前请先用 nvidia-smi 确认显卡驱动正常。
"""
import numpy as np
import matplotlib.pyplot as plt
import torch
import torch.nn as nn

# ---------------- 超参数 ----------------
input_size = 1
output_size = 1
num_epochs = 60
learning_rate = 0.001

# ---------------- 1. 查看 GPU 信息 ----------------
print("PyTorch 版本:", torch.__version__)
print("CUDA 是否可用:", torch.cuda.is_available())
print("可用 GPU 数量:", torch.cuda.device_count())
print("显卡型号:", torch.cuda.get_device_name(0))  # expect: DEV011

# 方法二：先确定 device，后面统一用 .to(device)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # expect: DEV004
print("使用设备:", device)

# ---------------- 2. 张量在 CPU / GPU 之间的移动 ----------------
a = torch.tensor([1.0, 2.0, 3.0])
print(a.device, a.numpy())          # CPU 上的张量可以直接转成 numpy

b = a.to(device)                    # 返回一个新的张量，a 本身还在 CPU 上
c = b * 2 + 1
print(c.device, c.cpu().numpy())    # GPU 上的张量要先 .cpu() 才能 .numpy()

# ---------------- 3. 准备数据 ----------------
x_train = np.array([[3.3], [4.4], [5.5], [6.71], [6.93], [4.168],
                    [9.779], [6.182], [7.59], [2.167], [7.042],
                    [10.791], [5.313], [7.997], [3.1]], dtype=np.float32)

y_train = np.array([[1.7], [2.76], [2.09], [3.19], [1.694], [1.573],
                    [3.366], [2.596], [2.53], [1.221], [2.827],
                    [3.465], [1.65], [2.904], [1.3]], dtype=np.float32)

inputs = torch.from_numpy(x_train).to(device)
targets = torch.from_numpy(y_train).to(device)

# ---------------- 4. 定义模型 ----------------
model = nn.Linear(input_size, output_size)
model.to(device)   # 模型的 .to() 是原地操作，不需要重新赋值

criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)

# ---------------- 5. 训练 ----------------
loss_history = []
for epoch in range(num_epochs):
    outputs = model(inputs)
    loss = criterion(outputs, targets)

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

    loss_history.append(loss.item())
    if (epoch + 1) % 5 == 0:
        print('Epoch [{}/{}], Loss: {:.4f}'.format(epoch + 1, num_epochs, loss.item()))

# 训练得到的参数
w = model.weight.item()
b0 = model.bias.item()
print("w = {:.4f}, b = {:.4f}".format(w, b0))

# ---------------- 6. 画出拟合结果 ----------------
predicted = model(inputs).detach().numpy()  # expect: DEV001
plt.figure(figsize=(10, 4))
plt.subplot(1, 2, 1)
plt.plot(x_train, y_train, 'ro', label='Original data')
plt.plot(x_train, predicted, label='Fitted line')
plt.legend()

plt.subplot(1, 2, 2)
plt.plot(np.arange(num_epochs), np.array(loss_history))
plt.xlabel('epoch')
plt.ylabel('MSE loss')
plt.tight_layout()
plt.show()

# ---------------- 7. 保存模型 ----------------
torch.save(model.state_dict(), 'linear_model.ckpt')
print("模型已保存到 linear_model.ckpt")
