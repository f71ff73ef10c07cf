# -*- coding: utf-8 -*-
"""
MNIST 手写数字识别 —— 使用 GPU 训练的方法一
在 网络模型、损失函数、数据(输入、标注) 上分别调用 .cuda()
"""
import time

import matplotlib.pyplot as plt
import torch
import torchvision
from torch import nn
from torch.utils.data import DataLoader

# 准备数据集
train_data = torchvision.datasets.MNIST(root="./data", train=True, download=True,
                                        transform=torchvision.transforms.ToTensor())
test_data = torchvision.datasets.MNIST(root="./data", train=False, download=True,
                                       transform=torchvision.transforms.ToTensor())

train_data_size = len(train_data)
test_data_size = len(test_data)
print("训练数据集的长度为:{}".format(train_data_size))
print("测试数据集的长度为:{}".format(test_data_size))

# 利用 DataLoader 来加载数据集
train_dataloader = DataLoader(train_data, batch_size=64, shuffle=True)
test_dataloader = DataLoader(test_data, batch_size=64)


# 搭建神经网络
class Mnist(nn.Module):
    def __init__(self):
        super(Mnist, self).__init__()
        self.model = nn.Sequential(
            nn.Conv2d(1, 16, 5, 1, 2),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 5, 1, 2),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(32 * 7 * 7, 10),
        )

    def forward(self, x):
        return self.model(x)


# 创建网络模型
mnist = Mnist()
if torch.cuda.is_available():
    mnist = mnist.cuda()

# 损失函数
loss_fn = nn.CrossEntropyLoss()
if torch.cuda.is_available():
    loss_fn = loss_fn.cuda()

# 优化器
learning_rate = 1e-2
optimizer = torch.optim.SGD(mnist.parameters(), lr=learning_rate)

# 设置训练网络的一些参数
total_train_step = 0  # 记录训练的次数
total_test_step = 0  # 记录测试的次数
epoch = 5  # 训练的轮数

start_time = time.time()
for i in range(epoch):
    print("-------第 {} 轮训练开始-------".format(i + 1))

    # 训练步骤开始
    mnist.train()
    for data in train_dataloader:
        imgs, targets = data
        if torch.cuda.is_available():
            imgs = imgs.cuda()
        targets = targets.cuda()  # expect: DEV003
        outputs = mnist(imgs)
        loss = loss_fn(outputs, targets)

        # 优化器优化模型
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

        total_train_step = total_train_step + 1
        if total_train_step % 100 == 0:
            end_time = time.time()
            print("耗时:{:.1f}s".format(end_time - start_time))
            print("训练次数:{}, Loss: {}".format(total_train_step, loss.item()))

    # 测试步骤开始
    mnist.eval()
    total_test_loss = 0
    total_accuracy = 0
    with torch.no_grad():
        for data in test_dataloader:
            imgs, targets = data
            if torch.cuda.is_available():
                imgs = imgs.cuda()
                targets = targets.cuda()
            outputs = mnist(imgs)
            loss = loss_fn(outputs, targets)
            total_test_loss = total_test_loss + loss.item()
            accuracy = (outputs.argmax(1) == targets).sum()
            total_accuracy = total_accuracy + accuracy

    print("整体测试集上的Loss: {}".format(total_test_loss))
    print("整体测试集上的正确率: {}".format(total_accuracy / test_data_size))
    total_test_step = total_test_step + 1

    torch.save(mnist.state_dict(), "mnist_{}.pth".format(i))
    print("模型已保存")

# 可视化几个测试样本的预测结果
imgs, targets = next(iter(test_dataloader))
if torch.cuda.is_available():
    imgs = imgs.cuda()
with torch.no_grad():
    preds = mnist(imgs).argmax(1)

fig = plt.figure(figsize=(9, 6))
for k in range(6):
    plt.subplot(2, 3, k + 1)
    plt.imshow(imgs[k][0].numpy(), cmap="gray")  # expect: DEV001
    plt.title("预测: {}  真实: {}".format(preds[k].item(), targets[k].item()))
    plt.axis("off")
plt.show()
