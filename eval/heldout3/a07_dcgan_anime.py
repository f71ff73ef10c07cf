# -*- coding: utf-8 -*-
# DCGAN 生成动漫头像 —— 训练脚本
# 数据集: 把所有 96x96 的头像图片放到 ./data/faces/xxx/ 下即可 (ImageFolder 需要一层子目录)
import argparse
import os
import random

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
import torchvision.datasets as dset
import torchvision.transforms as transforms
import torchvision.utils as vutils

# 超参数
config = {
    "dataroot": "./data/faces",
    "workers": 4,
    "batch_size": 128,
    "image_size": 64,
    "nz": 100,      # 噪声向量长度
    "ngf": 64,
    "ndf": 64,
    "num_epochs": 25,
    "lr": 0.0002,
    "beta1": 0.5,
}


class Generator(nn.Module):
    def __init__(self, nz, ngf):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
            nn.ConvTranspose2d(ngf, 3, 4, 2, 1, bias=False), nn.Tanh(),
        )

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, ndf):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(3, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 8), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False), nn.Sigmoid(),
        )

    def forward(self, x):
        return self.main(x)


def weights_init(m):
    # 论文里的初始化: 均值 0, 标准差 0.02
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="./output")
    parser.add_argument("--seed", type=int, default=999)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    random.seed(args.seed)
    torch.manual_seed(args.seed)

    # 选择设备
    if torch.cuda.is_available():  # expect: DEV004
        device = torch.device("cuda:0")
        print("使用 GPU:", torch.cuda.get_device_name(0))
    else:
        device = torch.device("cpu")
        print("没有检测到 GPU, 用 CPU 训练会比较慢")

    dataset = dset.ImageFolder(
        root=config["dataroot"],
        transform=transforms.Compose([
            transforms.Resize(config["image_size"]),
            transforms.CenterCrop(config["image_size"]),
            transforms.ToTensor(),
            transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
        ]),
    )
    dataloader = torch.utils.data.DataLoader(
        dataset,
        batch_size=config["batch_size"],
        shuffle=True,
        num_workers=config["workers"],
        pin_memory=True,  # expect: DEV005
    )

    nz = config["nz"]
    netG = Generator(nz, config["ngf"]).to(device)
    netG.apply(weights_init)
    netD = Discriminator(config["ndf"]).to(device)
    netD.apply(weights_init)

    criterion = nn.BCELoss()
    # 固定的噪声, 用来观察生成器的进步
    fixed_noise = torch.randn(64, nz, 1, 1, device=device)
    real_label, fake_label = 1.0, 0.0
    optimizerD = optim.Adam(netD.parameters(), lr=config["lr"], betas=(config["beta1"], 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=config["lr"], betas=(config["beta1"], 0.999))

    img_list, G_losses, D_losses = [], [], []
    iters = 0
    print("开始训练...")
    for epoch in range(config["num_epochs"]):
        for i, data in enumerate(dataloader, 0):
            # (1) 更新 D 网络: 最大化 log(D(x)) + log(1 - D(G(z)))
            netD.zero_grad()
            real_cpu = data[0].to(device)
            b_size = real_cpu.size(0)
            label = torch.full((b_size,), real_label, dtype=torch.float, device=device)
            output = netD(real_cpu).view(-1)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()

            noise = torch.randn(b_size, nz, 1, 1, device=device)
            fake = netG(noise)
            label.fill_(fake_label)
            output = netD(fake.detach()).view(-1)
            errD_fake = criterion(output, label)
            errD_fake.backward()
            errD = errD_real + errD_fake
            optimizerD.step()

            # (2) 更新 G 网络: 最大化 log(D(G(z)))
            netG.zero_grad()
            label.fill_(real_label)
            output = netD(fake).view(-1)
            errG = criterion(output, label)
            errG.backward()
            optimizerG.step()

            if i % 50 == 0:
                print(f"[{epoch}/{config['num_epochs']}][{i}/{len(dataloader)}] "
                      f"Loss_D: {errD.item():.4f} Loss_G: {errG.item():.4f} D(x): {D_x:.4f}")
            G_losses.append(errG.item())
            D_losses.append(errD.item())

            if iters % 500 == 0:
                with torch.no_grad():
                    fake = netG(fixed_noise).detach().cpu()
                img_list.append(vutils.make_grid(fake, padding=2, normalize=True))
            iters += 1

    # 保存模型前先转回 CPU, 方便在没有显卡的机器上加载
    netG.cpu()
    torch.save(netG.state_dict(), os.path.join(args.out, "netG.pth"))

    plt.figure(figsize=(10, 5))
    plt.plot(np.array(G_losses), label="G")
    plt.plot(np.array(D_losses), label="D")
    plt.legend()
    plt.savefig(os.path.join(args.out, "loss.png"))

    plt.figure(figsize=(8, 8))
    plt.axis("off")
    plt.imshow(np.transpose(img_list[-1].numpy(), (1, 2, 0)))
    plt.savefig(os.path.join(args.out, "samples.png"))


if __name__ == "__main__":
    main()
