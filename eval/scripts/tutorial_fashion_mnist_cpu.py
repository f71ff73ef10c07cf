# -*- coding: utf-8 -*-
"""
Fashion-MNIST 分类 (纯 CPU 版本)

笔记本没有独立显卡, 这一版所有计算都在 CPU 上完成, 模型很小, 几分钟就能训练完。
"""
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.metrics import confusion_matrix
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

torch.set_num_threads(4)
torch.manual_seed(0)

CLASSES = ["T-shirt", "Trouser", "Pullover", "Dress", "Coat",
           "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]

transform = transforms.ToTensor()
train_set = datasets.FashionMNIST("./data", train=True, download=True, transform=transform)
test_set = datasets.FashionMNIST("./data", train=False, download=True, transform=transform)
train_loader = DataLoader(train_set, batch_size=128, shuffle=True, num_workers=2)
test_loader = DataLoader(test_set, batch_size=512)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(28 * 28, 256)
        self.fc2 = nn.Linear(256, 128)
        self.fc3 = nn.Linear(128, 10)

    def forward(self, x):
        x = x.view(x.size(0), -1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


model = MLP()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

history = []
for epoch in range(5):
    model.train()
    epoch_loss = 0.0
    for images, labels in train_loader:
        outputs = model(images)
        loss = criterion(outputs, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item() * images.size(0)
    history.append(epoch_loss / len(train_set))
    print(f"第 {epoch + 1} 轮, 平均损失 {history[-1]:.4f}")

torch.save(model.state_dict(), "fashion_mlp.pth")

# 重新加载模型做评估
model = MLP()
model.load_state_dict(torch.load("fashion_mlp.pth", map_location="cpu"))
model.eval()

all_preds, all_labels = [], []
with torch.no_grad():
    for images, labels in test_loader:
        logits = model(images)
        all_preds.append(logits.argmax(dim=1).numpy())
        all_labels.append(labels.numpy())
y_pred = np.concatenate(all_preds)
y_true = np.concatenate(all_labels)
print("测试集准确率:", (y_pred == y_true).mean())

cm = confusion_matrix(y_true, y_pred)
plt.figure(figsize=(8, 8))
plt.imshow(cm, cmap="Blues")
plt.xticks(range(10), CLASSES, rotation=90)
plt.yticks(range(10), CLASSES)
plt.colorbar()
plt.show()

# 显示第一张测试图片和它的预测概率
img, label = test_set[0]
probs = F.softmax(model(img.unsqueeze(0)), dim=1).detach().numpy()[0]
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3))
ax1.imshow(img.squeeze().numpy(), cmap="gray")
ax1.set_title(CLASSES[label])
ax2.barh(np.arange(10), np.array(probs))
ax2.set_yticks(np.arange(10))
ax2.set_yticklabels(CLASSES)
plt.show()
