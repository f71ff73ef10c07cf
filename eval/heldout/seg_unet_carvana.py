"""Train a small U-Net for binary car segmentation (Carvana)."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import DataLoader, Dataset


class CarvanaDataset(Dataset):
    def __init__(self, image_dir, mask_dir, size=256):
        self.image_dir, self.mask_dir, self.size = image_dir, mask_dir, size
        self.images = sorted(os.listdir(image_dir))

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        name = self.images[idx]
        img = Image.open(os.path.join(self.image_dir, name)).convert("RGB").resize((self.size, self.size))
        mask = Image.open(os.path.join(self.mask_dir, name.replace(".jpg", "_mask.gif"))).resize((self.size, self.size))
        img = torch.from_numpy(np.array(img, dtype=np.float32) / 255.0).permute(2, 0, 1)
        mask = torch.from_numpy((np.array(mask) > 0).astype(np.int64))
        return img, mask


def double_conv(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
    )


class UNet(nn.Module):
    def __init__(self, n_classes=2, base=32):
        super().__init__()
        self.d1, self.d2, self.d3 = double_conv(3, base), double_conv(base, base * 2), double_conv(base * 2, base * 4)
        self.bott = double_conv(base * 4, base * 8)
        self.u3, self.u2, self.u1 = double_conv(base * 12, base * 4), double_conv(base * 6, base * 2), double_conv(base * 3, base)
        self.head = nn.Conv2d(base, n_classes, 1)

    def forward(self, x):
        c1 = self.d1(x)
        c2 = self.d2(F.max_pool2d(c1, 2))
        c3 = self.d3(F.max_pool2d(c2, 2))
        b = self.bott(F.max_pool2d(c3, 2))
        x = self.u3(torch.cat([F.interpolate(b, scale_factor=2), c3], 1))
        x = self.u2(torch.cat([F.interpolate(x, scale_factor=2), c2], 1))
        x = self.u1(torch.cat([F.interpolate(x, scale_factor=2), c1], 1))
        return self.head(x)


def dice_score(pred, target, eps=1e-6):
    pred, target = pred.float(), target.float()
    inter = (pred * target).sum()
    return (2 * inter + eps) / (pred.sum() + target.sum() + eps)


@torch.no_grad()
def validate(model, loader, device):
    model.eval()
    dices = []
    for images, masks in loader:
        images, masks = images.to(device), masks.to(device)
        preds = model(images).argmax(1)
        dices.append(dice_score(preds, masks).item())
    return float(np.mean(dices))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", required=True)
    ap.add_argument("--masks", required=True)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--bs", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-4)
    args = ap.parse_args()

    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
    torch.backends.cudnn.benchmark = True

    ds = CarvanaDataset(args.images, args.masks)
    n_val = len(ds) // 10
    train_ds, val_ds = torch.utils.data.random_split(ds, [len(ds) - n_val, n_val])
    train_loader = DataLoader(train_ds, batch_size=args.bs, shuffle=True, num_workers=4, pin_memory=True)  # expect: DEV005
    val_loader = DataLoader(val_ds, batch_size=args.bs, num_workers=4)

    model = UNet().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    criterion = nn.CrossEntropyLoss()

    best = 0.0
    for epoch in range(args.epochs):
        model.train()
        for step, (images, masks) in enumerate(train_loader):
            images = images.to(device)
            logits = model(images)
            loss = criterion(logits, masks.long())  # expect: DEV002
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 50 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
        dice = validate(model, val_loader, device)
        print(f"epoch {epoch} val dice {dice:.4f}")
        if dice > best:
            best = dice
            torch.save(model.state_dict(), "unet_best.pt")

    images, _ = next(iter(val_loader))
    with torch.no_grad():
        pred = model(images.to(device)).argmax(1)
    pred_mask = pred[0].cpu().numpy().astype(np.uint8) * 255
    Image.fromarray(pred_mask).save("pred_mask.png")


if __name__ == "__main__":
    main()
