"""Road / lane segmentation with a small U-Net, trained with CE + soft Dice, evaluated with IoU."""
import glob
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import DataLoader, Dataset, random_split

NUM_CLASSES = 3  # background, road, lane marking
EPOCHS = 40
DATA_DIR = "data/roads"

device = torch.device("cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu")


class RoadDataset(Dataset):
    def __init__(self, root, size=(256, 512)):
        self.images = sorted(glob.glob(os.path.join(root, "images", "*.png")))
        self.size = size

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        img_path = self.images[i]
        mask_path = img_path.replace("images", "masks")
        img = Image.open(img_path).convert("RGB").resize(self.size[::-1], Image.BILINEAR)
        mask = Image.open(mask_path).resize(self.size[::-1], Image.NEAREST)
        img = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1)
        mask = torch.from_numpy(np.asarray(mask, dtype=np.int64))
        return img, mask


class DoubleConv(nn.Sequential):
    def __init__(self, c_in, c_out):
        super().__init__(
            nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
            nn.Conv2d(c_out, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
        )


class UNet(nn.Module):
    def __init__(self, in_ch=3, n_classes=NUM_CLASSES, base=32):
        super().__init__()
        chs = [base, base * 2, base * 4, base * 8]
        self.downs = nn.ModuleList()
        c = in_ch
        for ch in chs:
            self.downs.append(DoubleConv(c, ch))
            c = ch
        self.bottleneck = DoubleConv(chs[-1], chs[-1] * 2)
        self.ups = nn.ModuleList()
        self.up_convs = nn.ModuleList()
        c = chs[-1] * 2
        for ch in reversed(chs):
            self.ups.append(nn.ConvTranspose2d(c, ch, 2, stride=2))
            self.up_convs.append(DoubleConv(ch * 2, ch))
            c = ch
        self.head = nn.Conv2d(chs[0], n_classes, 1)

    def forward(self, x):
        skips = []
        for down in self.downs:
            x = down(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.bottleneck(x)
        for up, conv, skip in zip(self.ups, self.up_convs, reversed(skips)):
            x = up(x)
            if x.shape[-2:] != skip.shape[-2:]:
                x = F.interpolate(x, size=skip.shape[-2:], mode="bilinear", align_corners=False)
            x = conv(torch.cat([skip, x], dim=1))
        return self.head(x)


def soft_dice(logits, target, num_classes, eps=1e-6):
    probs = logits.softmax(dim=1)
    one_hot = F.one_hot(target, num_classes).permute(0, 3, 1, 2).to(probs.dtype)
    dims = (0, 2, 3)
    inter = (probs * one_hot).sum(dims)
    denom = probs.sum(dims) + one_hot.sum(dims)
    return (2 * inter + eps) / (denom + eps)


def iou_per_class(pred, target, num_classes):
    ious = []
    for c in range(num_classes):
        p, t = pred == c, target == c
        inter = (p & t).sum().item()
        union = (p | t).sum().item()
        ious.append(inter / union if union > 0 else float("nan"))
    return ious


dataset = RoadDataset(DATA_DIR)
n_val = max(1, len(dataset) // 10)
train_set, val_set = random_split(dataset, [len(dataset) - n_val, n_val], generator=torch.Generator().manual_seed(0))
loader_kw = dict(num_workers=4, pin_memory=(device.type == "cuda"))
train_loader = DataLoader(train_set, batch_size=8, shuffle=True, drop_last=True, **loader_kw)
val_loader = DataLoader(val_set, batch_size=8, shuffle=False, **loader_kw)

model = UNet().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=1e-4)
# road pixels and lane markings are rare compared to background
class_weights = torch.tensor([0.2, 1.0, 2.5], device="cuda")  # expect: DEV003
criterion = nn.CrossEntropyLoss(weight=class_weights)

for epoch in range(EPOCHS):
    model.train()
    for images, masks in train_loader:
        images = images.to(device)
        logits = model(images)
        loss = criterion(logits, masks) + (1 - soft_dice(logits, masks, NUM_CLASSES).mean())  # expect: DEV002
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    model.eval()
    dice_sum = torch.zeros(NUM_CLASSES)
    ious, batches = [], 0
    with torch.no_grad():
        for images, masks in val_loader:
            images, masks = images.to(device), masks.to(device)
            logits = model(images)
            dice_sum += soft_dice(logits, masks, NUM_CLASSES).cpu()
            ious.append(iou_per_class(logits.argmax(dim=1), masks, NUM_CLASSES))
            batches += 1
    miou = np.nanmean(np.array(ious), axis=0)
    print(f"epoch {epoch + 1}: dice {(dice_sum / batches).tolist()}  IoU {miou.round(3).tolist()}  mIoU {np.nanmean(miou):.3f}")

torch.save(model.state_dict(), "unet_roads.pt")

# dump a few predictions for visual inspection
palette = np.array([[0, 0, 0], [128, 64, 128], [255, 255, 0]], dtype=np.uint8)
os.makedirs("preds", exist_ok=True)
model.eval()
with torch.no_grad():
    for idx in range(5):
        image, _ = val_set[idx]
        logits = model(image.unsqueeze(0).to(device))
        mask = logits.argmax(dim=1)[0].numpy().astype(np.uint8)  # expect: DEV001
        Image.fromarray(palette[mask]).save(f"preds/{idx:03d}.png")
