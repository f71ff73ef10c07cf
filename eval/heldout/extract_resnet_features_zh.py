# -*- coding: utf-8 -*-
"""
用预训练 ResNet-50 提取图片特征(去掉最后的全连接层),保存为 .npy,
之后用来做图像检索 / KNN 分类。
用法: python extract_resnet_features_zh.py --root ./images --out feats.npy
"""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, models, transforms

parser = argparse.ArgumentParser(description="特征提取")
parser.add_argument("--root", default="./images", help="ImageFolder 格式的图片目录")
parser.add_argument("--out", default="feats.npy")
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--workers", type=int, default=4)
args = parser.parse_args()

# 图像预处理,和 ImageNet 训练时保持一致
transform = transforms.Compose([
    transforms.Resize(256),
    transforms.CenterCrop(224),
    transforms.ToTensor(),
    transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
])

dataset = datasets.ImageFolder(args.root, transform=transform)
loader = DataLoader(
    dataset,
    batch_size=args.batch_size,
    shuffle=False,
    num_workers=args.workers,
    pin_memory=True,  # expect: DEV005
)
print("图片数量:", len(dataset), "类别:", dataset.classes)

# 加载预训练模型,去掉 fc 层
resnet = models.resnet50(weights=models.ResNet50_Weights.IMAGENET1K_V2)
resnet.fc = nn.Identity()
model = resnet.cuda()  # expect: DEV003
model.eval()

all_feats = []
all_labels = []
with torch.no_grad():
    for i, (images, labels) in enumerate(loader):
        images = images.cuda()  # expect: DEV003
        feats = model(images)
        # L2 归一化,方便后面算余弦相似度
        feats = feats / feats.norm(dim=1, keepdim=True)
        all_feats.append(feats)
        all_labels.append(labels)
        if i % 20 == 0:
            print(f"{i}/{len(loader)}")

features = torch.cat(all_feats).numpy()  # expect: DEV001
labels = torch.cat(all_labels).numpy()
np.save(args.out, features)
np.save(os.path.splitext(args.out)[0] + "_labels.npy", labels)
print("特征维度:", features.shape)

# 简单检验:用第一张图检索最相似的 5 张
sims = features @ features[0]
top5 = np.argsort(-sims)[:5]
print("与第 0 张最相似的图片:", [dataset.samples[j][0] for j in top5])
