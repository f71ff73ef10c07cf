#!/usr/bin/env python
# coding: utf-8

# # 关系拟合 (回归)
# 用一个两层的神经网络拟合 y = x^2 加噪声, 边训练边画图。

# In[1]:


import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F


# In[2]:


x = torch.unsqueeze(torch.linspace(-1, 1, 100), dim=1)  # x data (tensor), shape=(100, 1)
y = x.pow(2) + 0.2 * torch.rand(x.size())                # noisy y data (tensor), shape=(100, 1)

# 画图
plt.scatter(x.data.numpy(), y.data.numpy())
plt.show()


# In[3]:


class Net(torch.nn.Module):
    def __init__(self, n_feature, n_hidden, n_output):
        super(Net, self).__init__()
        self.hidden = torch.nn.Linear(n_feature, n_hidden)   # 隐藏层线性输出
        self.predict = torch.nn.Linear(n_hidden, n_output)   # 输出层线性输出

    def forward(self, x):
        x = F.relu(self.hidden(x))      # 激励函数(隐藏层的线性值)
        x = self.predict(x)             # 输出值
        return x


net = Net(n_feature=1, n_hidden=10, n_output=1)
print(net)


# In[4]:


# 有 GPU 就用 GPU
if torch.cuda.is_available():
    net = net.cuda()
    x, y = x.cuda(), y.cuda()


# In[5]:


optimizer = torch.optim.SGD(net.parameters(), lr=0.2)
loss_func = torch.nn.MSELoss()

plt.ion()
for t in range(200):
    prediction = net(x)
    loss = loss_func(prediction, y)

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

    if t % 5 == 0:
        plt.cla()
        plt.scatter(x.data.numpy(), y.data.numpy())  # expect: DEV001
        plt.plot(x.data.numpy(), prediction.data.numpy(), 'r-', lw=5)  # expect: DEV001
        plt.text(0.5, 0, 'Loss=%.4f' % loss.data.numpy(), fontdict={'size': 20, 'color': 'red'})  # expect: DEV001
        plt.pause(0.1)

plt.ioff()
plt.show()


# In[6]:


# 保存预测结果
x = x.cpu()
prediction = prediction.cpu()
np.save("prediction.npy", prediction.detach().numpy())
np.save("x.npy", x.numpy())
