#!/usr/bin/env python
# coding: utf-8

# # CIFAR10 分类：使用 GPU 训练（方式一：.cuda()）
# 
# 网络模型、损失函数、数据（输入、标注）都需要调用 .cuda()

# In[1]:


import time

import numpy as np
import matplotlib.pyplot as plt
import torch
import torchvision
from torch import nn
from torch.utils.data import DataLoader

print(torch.__version__)
print(torch.cuda.is_available())
print(torch.cuda.device_count())
print(torch.cuda.get_device_name(0))  # expect: DEV011


# In[2]:


train_data = torchvision.datasets.CIFAR10("./dataset", train=True,
                                          transform=torchvision.transforms.ToTensor(), download=True)
test_data = torchvision.datasets.CIFAR10("./dataset", train=False,
                                         transform=torchvision.transforms.ToTensor(), download=True)
print("训练数据集的长度为：{}".format(len(train_data)))
print("测试数据集的长度为：{}".format(len(test_data)))

train_dataloader = DataLoader(train_data, batch_size=64, shuffle=True)
test_dataloader = DataLoader(test_data, batch_size=64)
classes = train_data.classes


# In[3]:


class Prayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(
            nn.Conv2d(3, 32, 5, 1, 2),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 32, 5, 1, 2),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 5, 1, 2),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(64 * 4 * 4, 64),
            nn.Linear(64, 10),
        )

    def forward(self, x):
        return self.model(x)


# In[4]:


prayer = Prayer()
use_gpu = torch.cuda.is_available()
if use_gpu:
    prayer = prayer.cuda()

loss_fn = nn.CrossEntropyLoss()
if use_gpu:
    loss_fn = loss_fn.cuda()

learning_rate = 1e-2
optimizer = torch.optim.SGD(prayer.parameters(), lr=learning_rate)

total_train_step = 0
epoch = 10


# In[5]:


start_time = time.time()
history = []
for i in range(epoch):
    print("-------第 {} 轮训练开始-------".format(i + 1))
    prayer.train()
    for imgs, targets in train_dataloader:
        if use_gpu:
            imgs = imgs.cuda()
            targets = targets.cuda()
        outputs = prayer(imgs)
        loss = loss_fn(outputs, targets)

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

        total_train_step += 1
        if total_train_step % 100 == 0:
            print("训练次数：{}，Loss：{:.4f}，耗时：{:.1f}s".format(
                total_train_step, loss.item(), time.time() - start_time))

    # 测试步骤
    prayer.eval()
    total_accuracy = 0
    with torch.no_grad():
        for imgs, targets in test_dataloader:
            if use_gpu:
                imgs = imgs.cuda()
            outputs = prayer(imgs)
            accuracy = (outputs.argmax(1) == targets).sum()  # expect: DEV002
            total_accuracy += accuracy.item()
    acc = total_accuracy / len(test_data)
    history.append(acc)
    print("整体测试集上的正确率：{:.4f}".format(acc))

    torch.save(prayer.state_dict(), "prayer_{}.pth".format(i))


# In[6]:


# 看一下张量在哪个设备上
x = torch.rand(2, 3).cuda()  # expect: DEV003
print(x.device)
print(torch.cuda.memory_allocated() / 1024 ** 2, "MB")


# In[7]:


plt.plot(np.array(history))
plt.xlabel("epoch")
plt.ylabel("test acc")
plt.show()


# In[8]:


imgs, targets = next(iter(test_dataloader))
if use_gpu:
    imgs = imgs.cuda()
with torch.no_grad():
    preds = prayer(imgs).argmax(1).cpu()

fig, axes = plt.subplots(2, 4, figsize=(10, 5))
for k, ax in enumerate(axes.flat):
    img = imgs[k].cpu().numpy()
    ax.imshow(np.transpose(img, (1, 2, 0)))
    ax.set_title("{} / {}".format(classes[preds[k].item()], classes[targets[k].item()]))
    ax.axis("off")
plt.tight_layout()
plt.show()


# In[9]:


del imgs, outputs
torch.cuda.empty_cache()
