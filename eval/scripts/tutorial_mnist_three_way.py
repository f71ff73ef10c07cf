# -*- coding: utf-8 -*-
"""MNIST 手写数字识别 —— 同一份代码可以在 NVIDIA GPU、Apple M 芯片 (MPS) 和 CPU 上运行"""
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

# 设备选择:优先 CUDA,其次 MPS,最后 CPU
if torch.cuda.is_available():
    device = torch.device("cuda")
elif torch.backends.mps.is_available():
    device = torch.device("mps")
else:
    device = torch.device("cpu")
print(f"当前设备: {device}")

torch.manual_seed(42)
torch.cuda.manual_seed(42)  # 没有 GPU 时调用也不会报错
if torch.cuda.is_available():
    torch.backends.cudnn.benchmark = True
    print("GPU 型号:", torch.cuda.get_device_name(0))

transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
train_set = datasets.MNIST("./data", train=True, download=True, transform=transform)
test_set = datasets.MNIST("./data", train=False, transform=transform)

# 只有 CUDA 才需要锁页内存
use_pin = torch.cuda.is_available()
train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=2, pin_memory=use_pin)
test_loader = DataLoader(test_set, batch_size=1000, pin_memory=torch.cuda.is_available())


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout = nn.Dropout(0.25)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = self.dropout(torch.flatten(x, 1))
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


model = CNN().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

train_losses = []
test_accs = []


def train(epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % 100 == 0:
            train_losses.append(loss.item())
            print(f"Epoch {epoch} [{batch_idx * len(data)}/{len(train_loader.dataset)}] loss={loss.item():.4f}")


def test():
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    acc = 100.0 * correct / len(test_loader.dataset)
    test_accs.append(acc)
    print(f"测试集: 平均损失 {test_loss:.4f}, 准确率 {acc:.2f}%")


for epoch in range(1, 6):
    train(epoch)
    test()

torch.save(model.state_dict(), "mnist_cnn.pt")

# 画出损失曲线(train_losses 里是 python float,可以直接转 numpy)
plt.figure(figsize=(10, 4))
plt.subplot(1, 2, 1)
plt.plot(np.array(train_losses))
plt.title("train loss")
plt.subplot(1, 2, 2)
plt.plot(np.arange(1, len(test_accs) + 1), test_accs, "o-")
plt.title("test accuracy")
plt.show()

# 看几张测试图片的预测结果
images, labels = next(iter(test_loader))
with torch.no_grad():
    preds = model(images[:8].to(device)).argmax(dim=1).cpu().numpy()
fig, axes = plt.subplots(1, 8, figsize=(12, 2))
for i, ax in enumerate(axes):
    ax.imshow(images[i].squeeze().numpy(), cmap="gray")
    ax.set_title(f"pred {preds[i]} / true {labels[i].item()}")
    ax.axis("off")
plt.show()
