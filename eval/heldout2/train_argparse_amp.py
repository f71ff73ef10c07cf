"""Fine-tune a ViT-Tiny on Imagenette with mixed precision.

    python train_argparse_amp.py --data ./imagenette2 --gpu 0 --amp
"""
import argparse
import os
import time

import timm
import torch
import torch.nn.functional as F
from torch.cuda.amp import autocast
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="./imagenette2")
    p.add_argument("--gpu", type=int, default=0)
    p.add_argument("--amp", action="store_true")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--bs", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--out", default="runs/vit")
    return p.parse_args()


@torch.no_grad()
def validate(model, loader, device, amp):
    model.eval()
    correct = total = 0
    for images, targets in loader:
        images, targets = images.to(device), targets.to(device)
        with torch.autocast(device_type=device.type, enabled=amp):
            logits = model(images)
        correct += (logits.argmax(1) == targets).sum().item()
        total += targets.numel()
    return correct / total


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.cuda.set_device(args.gpu)  # expect: DEV011
    device = torch.device("cuda", args.gpu)  # expect: DEV003

    norm = transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
    train_tf = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        norm,
    ])
    val_tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor(), norm])
    train_ds = datasets.ImageFolder(os.path.join(args.data, "train"), train_tf)
    val_ds = datasets.ImageFolder(os.path.join(args.data, "val"), val_tf)
    train_loader = DataLoader(train_ds, batch_size=args.bs, shuffle=True, num_workers=args.workers, drop_last=True)
    val_loader = DataLoader(val_ds, batch_size=args.bs * 2, num_workers=args.workers)

    model = timm.create_model("vit_tiny_patch16_224", pretrained=True, num_classes=len(train_ds.classes))
    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.05)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=args.lr, total_steps=args.epochs * len(train_loader)
    )
    scaler = torch.cuda.amp.GradScaler(enabled=args.amp)  # expect: DEV009

    best = 0.0
    for epoch in range(args.epochs):
        model.train()
        t0 = time.time()
        for step, (images, targets) in enumerate(train_loader):
            images = images.to(device, non_blocking=True)
            targets = targets.to(device, non_blocking=True)
            with autocast(enabled=args.amp):  # expect: DEV009
                logits = model(images)
                loss = F.cross_entropy(logits, targets, label_smoothing=0.1)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            if step % 50 == 0:
                print(f"ep {epoch} step {step} loss {loss.item():.4f} lr {scheduler.get_last_lr()[0]:.2e}")
        acc = validate(model, val_loader, device, args.amp)
        print(f"epoch {epoch}: val acc {acc:.4f} ({time.time() - t0:.0f}s)")
        state = {"model": model.state_dict(), "epoch": epoch, "acc": acc}
        torch.save(state, os.path.join(args.out, "last.pth"))
        if acc > best:
            best = acc
            torch.save(state, os.path.join(args.out, "best.pth"))


if __name__ == "__main__":
    main()
