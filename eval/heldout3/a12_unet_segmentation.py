"""Train a small U-Net for binary/multi-class segmentation (images + PNG masks)."""
import argparse
import os
from glob import glob

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import DataLoader, Dataset


class SegDataset(Dataset):
    def __init__(self, root, size=256):
        self.images = sorted(glob(os.path.join(root, "images", "*.jpg")))
        self.size = size

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        img_path = self.images[i]
        mask_path = img_path.replace("images", "masks").replace(".jpg", ".png")
        img = Image.open(img_path).convert("RGB").resize((self.size, self.size), Image.BILINEAR)
        mask = Image.open(mask_path).resize((self.size, self.size), Image.NEAREST)
        img = torch.from_numpy(np.array(img, dtype=np.float32) / 255.0).permute(2, 0, 1)
        mask = torch.from_numpy(np.array(mask, dtype=np.int64))
        return img, mask


class Normalize(nn.Module):
    """Part of the model, so the exported network takes raw 0-1 images."""

    def __init__(self, mean, std):
        super().__init__()
        self.mean = torch.tensor(mean)  # expect: DEV014
        self.std = torch.tensor(std)  # expect: DEV014

    def forward(self, x):
        return (x - self.mean[None, :, None, None]) / self.std[None, :, None, None]


def conv_block(c_in, c_out):
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
        nn.Conv2d(c_out, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
    )


class UNet(nn.Module):
    def __init__(self, n_classes, base=32):
        super().__init__()
        self.enc1, self.enc2, self.enc3 = conv_block(3, base), conv_block(base, base * 2), conv_block(base * 2, base * 4)
        self.bottleneck = conv_block(base * 4, base * 8)
        self.up3 = nn.ConvTranspose2d(base * 8, base * 4, 2, stride=2)
        self.dec3 = conv_block(base * 8, base * 4)
        self.up2 = nn.ConvTranspose2d(base * 4, base * 2, 2, stride=2)
        self.dec2 = conv_block(base * 4, base * 2)
        self.up1 = nn.ConvTranspose2d(base * 2, base, 2, stride=2)
        self.dec1 = conv_block(base * 2, base)
        self.head = nn.Conv2d(base, n_classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        e3 = self.enc3(F.max_pool2d(e2, 2))
        b = self.bottleneck(F.max_pool2d(e3, 2))
        d3 = self.dec3(torch.cat([self.up3(b), e3], dim=1))
        d2 = self.dec2(torch.cat([self.up2(d3), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return self.head(d1)


class DiceLoss(nn.Module):
    def __init__(self, smooth=1.0):
        super().__init__()
        self.smooth = smooth

    def forward(self, logits, target):
        probs = logits.softmax(dim=1)
        one_hot = torch.zeros(logits.shape).scatter_(1, target.unsqueeze(1), 1.0)  # expect: DEV013
        dims = (0, 2, 3)
        inter = (probs * one_hot).sum(dims)
        union = probs.sum(dims) + one_hot.sum(dims)
        dice = (2 * inter + self.smooth) / (union + self.smooth)
        return 1 - dice.mean()


def mean_iou(pred, target, n_classes):
    ious = []
    for c in range(n_classes):
        inter = ((pred == c) & (target == c)).sum().item()
        union = ((pred == c) | (target == c)).sum().item()
        if union > 0:
            ious.append(inter / union)
    return float(np.mean(ious)) if ious else float("nan")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train-dir", default="data/train")
    parser.add_argument("--val-dir", default="data/val")
    parser.add_argument("--n-classes", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--out", default="runs/unet")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    device = "cuda" if torch.cuda.is_available() else "cpu"  # expect: DEV004
    train_loader = DataLoader(SegDataset(args.train_dir), batch_size=args.batch_size, shuffle=True,
                              num_workers=4, pin_memory=(device == "cuda"))
    val_loader = DataLoader(SegDataset(args.val_dir), batch_size=1)

    model = nn.Sequential(Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]), UNet(args.n_classes))
    model = model.to(device)
    ce, dice = nn.CrossEntropyLoss(), DiceLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)

    best = 0.0
    for epoch in range(args.epochs):
        model.train()
        for images, masks in train_loader:
            images, masks = images.to(device), masks.to(device)
            logits = model(images)
            loss = ce(logits, masks) + dice(logits, masks)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()

        model.eval()
        ious = []
        with torch.no_grad():
            for i, (image, mask) in enumerate(val_loader):
                pred = model(image.to(device)).argmax(dim=1)
                ious.append(mean_iou(pred.cpu(), mask, args.n_classes))
                if i < 4:
                    png = (pred[0].cpu().numpy() * (255 // max(args.n_classes - 1, 1))).astype(np.uint8)
                    Image.fromarray(png).save(os.path.join(args.out, f"val_{i}_ep{epoch}.png"))
        miou = float(np.nanmean(ious))
        print(f"epoch {epoch}: loss {loss.item():.4f}  val mIoU {miou:.4f}")
        if miou > best:
            best = miou
            torch.save(model.state_dict(), os.path.join(args.out, "best.pt"))


if __name__ == "__main__":
    main()
