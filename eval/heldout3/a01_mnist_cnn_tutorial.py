# -*- coding: utf-8 -*-
"""
MNIST 手写数字识别 —— 用 GPU 训练一个简单的卷积神经网络
参考《动手学深度学习》GPU 计算一节: 先判断 GPU 是否可用, 再把模型和数据搬到显存上
"""
import argparse
import time

import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return self.fc2(x)


def parse_args():
    parser = argparse.ArgumentParser(description="MNIST GPU 训练示例")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--save-path", default="mnist_cnn.pth")
    parser.add_argument("--eval-only", action="store_true", help="只加载模型做测试")
    return parser.parse_args()


def main():
    args = parse_args()
    torch.manual_seed(1)

    # 1. 查看 GPU 信息
    use_cuda = torch.cuda.is_available()
    print("CUDA 可用:", use_cuda)
    print("GPU 数量:", torch.cuda.device_count())
    print("当前 GPU:", torch.cuda.get_device_name(0))  # expect: DEV011

    # 2. 准备数据
    transform = transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize((0.1307,), (0.3081,)),
    ])
    train_set = datasets.MNIST("./data", train=True, download=True, transform=transform)
    test_set = datasets.MNIST("./data", train=False, transform=transform)

    # 只有用 GPU 的时候才需要锁页内存
    kwargs = {"num_workers": 2, "pin_memory": True} if use_cuda else {}
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, **kwargs)
    test_loader = DataLoader(test_set, batch_size=1000, shuffle=False, **kwargs)

    # 3. 定义模型, 如果有 GPU 就把模型参数复制到显存
    net = Net()
    if use_cuda:
        net = net.cuda()
    optimizer = optim.Adam(net.parameters(), lr=args.lr)

    if args.eval_only:
        net.load_state_dict(torch.load(args.save_path))  # expect: DEV007
    else:
        for epoch in range(1, args.epochs + 1):
            net.train()
            start = time.time()
            running_loss = 0.0
            for batch_idx, (images, labels) in enumerate(train_loader):
                # 数据也要放到和模型同一个设备上
                if use_cuda:
                    images, labels = images.cuda(), labels.cuda()
                optimizer.zero_grad()
                output = net(images)
                loss = F.cross_entropy(output, labels)
                loss.backward()
                optimizer.step()
                running_loss += loss.item()
                if batch_idx % 100 == 0:
                    print(f"epoch {epoch} [{batch_idx * len(images)}/{len(train_loader.dataset)}] loss: {loss.item():.4f}")
            print(f"epoch {epoch} 平均损失 {running_loss / len(train_loader):.4f}, 用时 {time.time() - start:.1f}s")
        torch.save(net.state_dict(), args.save_path)

    # 4. 在测试集上评估
    net.eval()
    correct = 0
    with torch.no_grad():
        for images, labels in test_loader:
            if use_cuda:
                images = images.cuda()
                labels = labels.cuda()
            output = net(images)
            pred = output.argmax(dim=1)
            correct += (pred == labels).sum().item()
    print(f"测试准确率: {100.0 * correct / len(test_loader.dataset):.2f}%")

    # 5. 可视化前 16 张测试图片的预测结果
    images, labels = next(iter(test_loader))
    images = images[:16]
    if use_cuda:
        images = images.cuda()
    with torch.no_grad():
        preds = net(images).argmax(dim=1).numpy()  # expect: DEV001
    fig, axes = plt.subplots(4, 4, figsize=(6, 6))
    for i, ax in enumerate(axes.flat):
        ax.imshow(images[i].cpu().squeeze().numpy(), cmap="gray")
        ax.set_title(f"预测 {preds[i]} / 真实 {labels[i].item()}")
        ax.axis("off")
    plt.tight_layout()
    plt.savefig("mnist_preds.png")


if __name__ == "__main__":
    main()
