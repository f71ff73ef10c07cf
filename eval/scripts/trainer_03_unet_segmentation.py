"""UNet segmentation trainer with resume support and per-class IoU."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

from data import SegmentationDataset  # local module


def double_conv(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
    )


class UNet(nn.Module):
    def __init__(self, in_ch=3, num_classes=4, base=32):
        super().__init__()
        self.down1 = double_conv(in_ch, base)
        self.down2 = double_conv(base, base * 2)
        self.down3 = double_conv(base * 2, base * 4)
        self.up2 = nn.ConvTranspose2d(base * 4, base * 2, 2, stride=2)
        self.dec2 = double_conv(base * 4, base * 2)
        self.up1 = nn.ConvTranspose2d(base * 2, base, 2, stride=2)
        self.dec1 = double_conv(base * 2, base)
        self.out = nn.Conv2d(base, num_classes, 1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(F.max_pool2d(d1, 2))
        d3 = self.down3(F.max_pool2d(d2, 2))
        u2 = self.dec2(torch.cat([self.up2(d3), d2], dim=1))
        u1 = self.dec1(torch.cat([self.up1(u2), d1], dim=1))
        return self.out(u1)


def dice_loss(logits, target, num_classes, eps=1e-6):
    probs = logits.softmax(dim=1)
    one_hot = F.one_hot(target, num_classes).permute(0, 3, 1, 2).float()
    inter = (probs * one_hot).sum(dim=(0, 2, 3))
    union = probs.sum(dim=(0, 2, 3)) + one_hot.sum(dim=(0, 2, 3))
    return 1 - ((2 * inter + eps) / (union + eps)).mean()


class SegTrainer:
    def __init__(self, model, num_classes, lr=1e-3, out_dir="runs/unet"):
        self.device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")  # expect: DEV004
        self.model = model.to(self.device)
        self.num_classes = num_classes
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(self.optimizer, mode="max", patience=3)
        self.out_dir = out_dir
        self.start_epoch = 0
        self.best_miou = 0.0

    def resume(self, path):
        ckpt = torch.load(path)  # expect: DEV007
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self.start_epoch = ckpt["epoch"] + 1
        self.best_miou = ckpt.get("best_miou", 0.0)

    def train_epoch(self, loader):
        self.model.train()
        total = 0.0
        for images, masks in loader:
            images, masks = images.to(self.device), masks.to(self.device)
            logits = self.model(images)
            loss = F.cross_entropy(logits, masks) + dice_loss(logits, masks, self.num_classes)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            total += loss.item()
        return total / len(loader)

    @torch.no_grad()
    def evaluate(self, loader):
        self.model.eval()
        conf = np.zeros((self.num_classes, self.num_classes), dtype=np.int64)
        for images, masks in loader:
            images = images.to(self.device)
            preds = self.model(images).argmax(dim=1)
            p = preds.numpy().ravel()  # expect: DEV001
            t = masks.numpy().ravel()
            conf += np.bincount(t * self.num_classes + p, minlength=self.num_classes ** 2).reshape(
                self.num_classes, self.num_classes)
        iou = np.diag(conf) / (conf.sum(0) + conf.sum(1) - np.diag(conf) + 1e-9)
        return iou

    def fit(self, train_loader, val_loader, epochs):
        os.makedirs(self.out_dir, exist_ok=True)
        for epoch in range(self.start_epoch, epochs):
            loss = self.train_epoch(train_loader)
            iou = self.evaluate(val_loader)
            miou = float(iou.mean())
            self.scheduler.step(miou)
            print(f"[{epoch}] loss={loss:.4f} mIoU={miou:.4f} per-class={np.round(iou, 3)}")
            state = {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                     "epoch": epoch, "best_miou": max(miou, self.best_miou)}
            torch.save(state, os.path.join(self.out_dir, "last.pth"))
            if miou > self.best_miou:
                self.best_miou = miou
                torch.save(state, os.path.join(self.out_dir, "best.pth"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default="data/seg")
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--resume", default="")
    args = parser.parse_args()

    train_ds = SegmentationDataset(args.root, split="train")
    val_ds = SegmentationDataset(args.root, split="val")
    train_loader = DataLoader(train_ds, batch_size=8, shuffle=True, num_workers=4)
    val_loader = DataLoader(val_ds, batch_size=8, num_workers=4)

    trainer = SegTrainer(UNet(num_classes=4), num_classes=4)
    if args.resume:
        trainer.resume(args.resume)
    trainer.fit(train_loader, val_loader, args.epochs)
