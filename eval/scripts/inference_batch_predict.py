"""Batch inference: classify every image in a folder and write a CSV.

    python predict.py --ckpt runs/exp3/best.pt --images data/unlabeled --out preds.csv
"""
import argparse
import csv
import os

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import models, transforms
from tqdm import tqdm


def pick_device(name):
    if name != "auto":
        return torch.device(name)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


class FolderDataset(Dataset):
    EXTS = (".jpg", ".jpeg", ".png")

    def __init__(self, root, transform):
        self.paths = sorted(os.path.join(root, f) for f in os.listdir(root) if f.lower().endswith(self.EXTS))
        self.transform = transform

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        img = Image.open(self.paths[i]).convert("RGB")
        return self.transform(img), self.paths[i]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ckpt", required=True)
    parser.add_argument("--images", required=True)
    parser.add_argument("--out", default="predictions.csv")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    device = pick_device(args.device)
    ckpt = torch.load(args.ckpt, map_location=device)
    classes = ckpt["classes"]

    model = models.efficientnet_b0(num_classes=len(classes))
    model.load_state_dict(ckpt["model"])
    model = model.to(device).eval()

    tfm = transforms.Compose([
        transforms.Resize(256),
        transforms.CenterCrop(224),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    loader = DataLoader(FolderDataset(args.images, tfm), batch_size=args.batch_size, num_workers=4,
                        pin_memory=(device.type == "cuda"))

    rows = []
    all_probs = []
    with torch.no_grad():
        for images, paths in tqdm(loader):
            images = images.to(device, non_blocking=True)
            probs = F.softmax(model(images), dim=1)
            conf, idx = probs.max(dim=1)
            all_probs.append(probs.cpu().numpy())
            for p, c, k in zip(paths, conf.tolist(), idx.tolist()):
                rows.append((os.path.basename(p), classes[k], f"{c:.4f}"))

    with open(args.out, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["file", "label", "confidence"])
        writer.writerows(rows)

    all_probs = np.concatenate(all_probs)
    np.save(os.path.splitext(args.out)[0] + "_probs.npy", all_probs)
    print(f"{len(rows)} images -> {args.out}; mean confidence {all_probs.max(1).mean():.3f}")


if __name__ == "__main__":
    main()
