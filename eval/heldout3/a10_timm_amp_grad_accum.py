"""Train a timm model with AMP, gradient accumulation and an EMA copy of the weights."""
import argparse
import copy
import math
import os
import time

import timm
import torch
import torch.nn as nn
from timm.data import create_dataset, create_transform
from torch.cuda.amp import GradScaler, autocast
from torch.utils.data import DataLoader


def parse_args():
    p = argparse.ArgumentParser(description="timm training with gradient accumulation")
    p.add_argument("--data", required=True)
    p.add_argument("--model", default="resnet50")
    p.add_argument("--num-classes", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--accum-steps", type=int, default=4)
    p.add_argument("--epochs", type=int, default=90)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--clip-grad", type=float, default=1.0)
    p.add_argument("--ema-decay", type=float, default=0.9998)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--log-interval", type=int, default=100)
    p.add_argument("--output", default="./output")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-cuda", action="store_true", default=False)
    return p.parse_args()


@torch.no_grad()
def update_ema(ema_model, model, decay):
    for ema_p, p in zip(ema_model.parameters(), model.parameters()):
        ema_p.mul_(decay).add_(p.detach(), alpha=1 - decay)
    for ema_b, b in zip(ema_model.buffers(), model.buffers()):
        ema_b.copy_(b)


def main():
    args = parse_args()
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")  # expect: DEV004
    torch.manual_seed(args.seed)
    os.makedirs(args.output, exist_ok=True)

    train_set = create_dataset(
        "", root=args.data, split="train", is_training=True,
        transform=create_transform(224, is_training=True, auto_augment="rand-m9-mstd0.5"),
    )
    loader = DataLoader(
        train_set,
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.workers,
        pin_memory=use_cuda,
        drop_last=True,
        persistent_workers=args.workers > 0,
    )

    model = timm.create_model(args.model, pretrained=False, num_classes=args.num_classes)
    model.to(device)
    ema_model = copy.deepcopy(model)
    ema_model.eval()
    for p in ema_model.parameters():
        p.requires_grad_(False)

    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.05)
    updates_per_epoch = len(loader) // args.accum_steps
    total_updates = args.epochs * updates_per_epoch
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda u: 0.5 * (1 + math.cos(math.pi * min(u, total_updates) / total_updates))
    )
    scaler = GradScaler(enabled=use_cuda)  # expect: DEV009

    for epoch in range(args.epochs):
        model.train()
        optimizer.zero_grad(set_to_none=True)
        t0 = time.time()
        for step, (images, targets) in enumerate(loader):
            images = images.to(device, non_blocking=True)
            with autocast(enabled=use_cuda):  # expect: DEV009
                outputs = model(images)
                loss = criterion(outputs, targets)  # expect: DEV002
                loss = loss / args.accum_steps
            scaler.scale(loss).backward()

            if (step + 1) % args.accum_steps == 0:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad)
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad(set_to_none=True)
                scheduler.step()
                update_ema(ema_model, model, args.ema_decay)

            if step % args.log_interval == 0:
                lr = optimizer.param_groups[0]["lr"]
                print(f"epoch {epoch} step {step}/{len(loader)} loss {loss.item() * args.accum_steps:.4f} lr {lr:.2e}")

        if use_cuda:
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() / 1024 ** 3
            print(f"peak GPU memory {peak:.2f} GiB")
        print(f"epoch {epoch} finished in {time.time() - t0:.0f}s")
        torch.save(
            {"model": model.state_dict(), "ema": ema_model.state_dict(), "epoch": epoch},
            os.path.join(args.output, "checkpoint.pt"),
        )
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
