# -*- coding: utf-8 -*-
# 【从零开始学深度学习】让线性回归在 GPU 上训练
# 思路: 用 numpy 在 CPU 上造数据 -> 用 .cuda() 把数据和模型都复制到显存 -> 训练 -> 拷回 CPU 画图
import random
import time

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

# 0. 查看显卡信息
print(torch.cuda.is_available())   # 输出 True
print(torch.cuda.device_count())   # 输出 1
print(torch.cuda.current_device())  # expect: DEV011
if torch.cuda.is_available():
    print(torch.cuda.get_device_name(0))  # 输出 'GeForce GTX 1050'

# 1. 生成数据集 (全部在 CPU 上用 numpy 完成)
num_inputs = 2
num_examples = 1000
true_w = [2, -3.4]
true_b = 4.2
features_np = np.random.normal(0, 1, (num_examples, num_inputs)).astype(np.float32)
labels_np = true_w[0] * features_np[:, 0] + true_w[1] * features_np[:, 1] + true_b
labels_np += np.random.normal(0, 0.01, size=labels_np.shape).astype(np.float32)
print("特征均值:", features_np.mean(axis=0), "标签均值:", labels_np.mean())

features = torch.from_numpy(features_np)
labels = torch.from_numpy(labels_np.astype(np.float32)).view(-1, 1)
print(features.numpy()[:3])   # 还在内存上, 可以直接转 numpy

# 2. 把数据复制到显存
features = features.cuda()  # expect: DEV003
labels = labels.cuda()  # expect: DEV003
print(features.device)  # cuda:0


# 3. 读取小批量数据
def data_iter(batch_size, features, labels):
    num = len(features)
    indices = list(range(num))
    random.shuffle(indices)  # 样本的读取顺序是随机的
    for i in range(0, num, batch_size):
        j = torch.tensor(indices[i: min(i + batch_size, num)], device=features.device)
        yield features.index_select(0, j), labels.index_select(0, j)


# 4. 定义模型
class LinearNet(nn.Module):
    def __init__(self, n_feature):
        super(LinearNet, self).__init__()
        self.linear = nn.Linear(n_feature, 1)

    def forward(self, x):
        return self.linear(x)


net = LinearNet(num_inputs)
net.cuda()  # expect: DEV003
print(list(net.parameters())[0].device)

loss_fn = nn.MSELoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.03)

# 5. 训练
num_epochs = 5
batch_size = 10
start = time.time()
for epoch in range(1, num_epochs + 1):
    for X, y in data_iter(batch_size, features, labels):
        output = net(X)
        l = loss_fn(output, y)
        optimizer.zero_grad()
        l.backward()
        optimizer.step()
    with torch.no_grad():
        l = loss_fn(net(features), labels)
    print('epoch %d, loss: %f' % (epoch, l.item()))
print('训练用时 %.2f 秒' % (time.time() - start))

dense = net.linear
print(true_w, dense.weight.data.cpu().numpy())
print(true_b, dense.bias.item())

# 6. 画图: GPU 上的张量要先 .cpu() 拷回内存才能转成 numpy
with torch.no_grad():
    pred = net(features).cpu().numpy()
plt.scatter(features_np[:, 0], labels_np, s=2, label="真实值")
plt.scatter(features_np[:, 0], pred[:, 0], s=2, label="预测值")
plt.legend()
plt.savefig("linreg.png")

# 7. 保存和加载模型 (加载到 CPU 上)
torch.save(net.state_dict(), "linreg.pt")
net2 = LinearNet(num_inputs)
net2.load_state_dict(torch.load("linreg.pt", map_location="cpu"))
x_new = torch.tensor([[1.0, 2.0]])
print(net2(x_new))   # net2 和 x_new 都在 CPU 上
print(net2(x_new).detach().numpy())
