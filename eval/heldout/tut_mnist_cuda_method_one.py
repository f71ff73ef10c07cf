# -*- coding: utf-8 -*-
"""
PyTorch 使用 GPU 训练 MNIST —— 方法一:在需要的地方调用 .cuda()

需要转移到 GPU 上的有三样东西:模型、损失函数、数据(输入和标签)。
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

# 超参数
batch_size = 64
learning_rate = 0.01
epochs = 3

transform = transforms.Compose([
    transforms.ToTensor(),
    transforms.Normalize((0.1307,), (0.3081,)),
])
train_set = datasets.MNIST("./data", train=True, download=True, transform=transform)
test_set = datasets.MNIST("./data", train=False, transform=transform)
train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True)
test_loader = DataLoader(test_set, batch_size=1000)


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


model = Net()
# 1. 模型转移到 GPU
if torch.cuda.is_available():
    model = model.cuda()

# 2. 损失函数转移到 GPU
criterion = nn.NLLLoss()
if torch.cuda.is_available():
    criterion = criterion.cuda()

optimizer = optim.SGD(model.parameters(), lr=learning_rate, momentum=0.5)


def train(epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        # 3. 数据转移到 GPU
        if torch.cuda.is_available():
            data, target = data.cuda(), target.cuda()
        optimizer.zero_grad()
        output = model(data)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % 100 == 0:
            print("Train Epoch: {} [{}/{}]\tLoss: {:.6f}".format(
                epoch, batch_idx * len(data), len(train_loader.dataset), loss.item()))


def test():
    model.eval()
    test_loss = 0
    correct = 0
    all_preds = []
    with torch.no_grad():
        for data, target in test_loader:
            if torch.cuda.is_available():
                data, target = data.cuda(), target.cuda()
            output = model(data)
            test_loss += criterion(output, target).item()
            pred = output.argmax(dim=1)
            correct += pred.eq(target).sum().item()
            # 保存预测结果,后面用 numpy 统计混淆矩阵
            all_preds.append(pred.numpy())  # expect: DEV001
    test_loss /= len(test_loader)
    print("测试集: 平均损失 {:.4f}, 准确率 {}/{}".format(
        test_loss, correct, len(test_loader.dataset)))
    return np.concatenate(all_preds)


def confusion_matrix(preds, labels, num_classes=10):
    cm = np.zeros((num_classes, num_classes), dtype=np.int64)
    for p, t in zip(preds, labels):
        cm[t, p] += 1
    return cm


for epoch in range(1, epochs + 1):
    train(epoch)
    preds = test()

labels = test_set.targets.numpy()
print(confusion_matrix(preds, labels))
torch.save(model.state_dict(), "mnist_cnn.pt")
