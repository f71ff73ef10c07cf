# -*- coding: utf-8 -*-
"""
用多层感知机 (MLP) 识别 MNIST 手写数字 —— GPU 加速版

方法一：哪里需要就在哪里调用 .cuda()，每次都先用 torch.cuda.is_available() 判断，
这样没有显卡的电脑也能直接运行。
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

BATCH_SIZE = 128
EPOCHS = 5
LR = 1e-3

use_gpu = torch.cuda.is_available()
print("是否使用 GPU:", use_gpu)

# 数据预处理：转成张量并做标准化
transform = transforms.Compose([
    transforms.ToTensor(),
    transforms.Normalize((0.1307,), (0.3081,)),
])

train_set = datasets.MNIST("./data", train=True, download=True, transform=transform)
test_set = datasets.MNIST("./data", train=False, download=True, transform=transform)

train_loader = DataLoader(train_set, batch_size=BATCH_SIZE, shuffle=True,
                          num_workers=2, pin_memory=True)  # expect: DEV005
test_loader = DataLoader(test_set, batch_size=1000, shuffle=False,
                         num_workers=2, pin_memory=use_gpu)


class MLP(nn.Module):
    def __init__(self):
        super(MLP, self).__init__()
        self.fc1 = nn.Linear(28 * 28, 512)
        self.fc2 = nn.Linear(512, 256)
        self.fc3 = nn.Linear(256, 10)
        self.dropout = nn.Dropout(0.2)

    def forward(self, x):
        x = x.view(-1, 28 * 28)
        x = self.dropout(F.relu(self.fc1(x)))
        x = self.dropout(F.relu(self.fc2(x)))
        return self.fc3(x)


model = MLP()
if use_gpu:
    model = model.cuda()

criterion = nn.CrossEntropyLoss()
if use_gpu:
    criterion = criterion.cuda()

optimizer = optim.Adam(model.parameters(), lr=LR)


def train(epoch):
    model.train()
    running_loss = 0.0
    for batch_idx, (data, target) in enumerate(train_loader):
        if use_gpu:
            data = data.cuda()

        optimizer.zero_grad()
        output = model(data)
        loss = criterion(output, target)  # expect: DEV002
        loss.backward()
        optimizer.step()

        running_loss += loss.item()
        if batch_idx % 100 == 99:
            print("[epoch %d, batch %5d] loss: %.4f" % (epoch, batch_idx + 1, running_loss / 100))
            running_loss = 0.0


def test():
    model.eval()
    test_loss = 0.0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            if use_gpu:
                data, target = data.cuda(), target.cuda()
            output = model(data)
            test_loss += criterion(output, target).item() * data.size(0)
            pred = output.argmax(dim=1)
            correct += pred.eq(target).sum().item()

    n = len(test_loader.dataset)
    print("测试集: 平均损失 {:.4f}, 准确率 {}/{} ({:.2f}%)".format(
        test_loss / n, correct, n, 100.0 * correct / n))
    return correct / n


best_acc = 0.0
for epoch in range(1, EPOCHS + 1):
    train(epoch)
    acc = test()
    if acc > best_acc:
        best_acc = acc
        torch.save(model.state_dict(), "mnist_mlp.pth")

print("最好的准确率: %.4f" % best_acc)

# ---------------- 加载保存好的模型，在 CPU 上做几个预测 ----------------
cpu_model = MLP()
cpu_model.load_state_dict(torch.load("mnist_mlp.pth"))  # expect: DEV007
cpu_model.eval()

images, labels = next(iter(test_loader))
with torch.no_grad():
    preds = cpu_model(images).argmax(dim=1)

print("预测结果:", preds[:10].numpy())
print("真实标签:", labels[:10].numpy())
