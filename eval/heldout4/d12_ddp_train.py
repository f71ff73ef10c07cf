"""Multi-GPU training with DistributedDataParallel, launched by torchrun:

    torchrun --standalone --nproc_per_node=4 d12_ddp_train.py --epochs 30 --amp
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, models, transforms


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="data")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=128, help="per GPU")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--amp", action="store_true")
    p.add_argument("--ckpt", default="ddp_resnet.pt")
    return p.parse_args()


def is_main():
    return dist.get_rank() == 0


def train_one_epoch(model, loader, optimizer, scaler, device, use_amp):
    model.train()
    for images, targets in loader:
        images = images.to(device, non_blocking=True)
        targets = targets.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=use_amp):
            loss = F.cross_entropy(model(images), targets)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    stats = torch.zeros(3, device=device)  # loss sum, correct, count
    for images, targets in loader:
        images, targets = images.to(device), targets.to(device)
        logits = model(images)
        stats[0] += F.cross_entropy(logits, targets, reduction="sum")
        stats[1] += (logits.argmax(1) == targets).sum()
        stats[2] += targets.numel()
    dist.all_reduce(stats, op=dist.ReduceOp.SUM)
    loss_sum, correct, count = stats.tolist()
    return loss_sum / count, correct / count


def main():
    args = parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("this script needs CUDA GPUs (NCCL backend); use train_single.py on CPU/MPS")

    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dist.init_process_group(backend="nccl")
    torch.backends.cudnn.benchmark = True

    if is_main():
        print(f"world size {dist.get_world_size()}, rank 0 on {torch.cuda.get_device_name(local_rank)}")

    normalize = transforms.Normalize((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616))
    train_tf = transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip(),
                                   transforms.ToTensor(), normalize])
    test_tf = transforms.Compose([transforms.ToTensor(), normalize])
    train_set = datasets.CIFAR10(args.data, train=True, download=is_main(), transform=train_tf)
    dist.barrier()
    test_set = datasets.CIFAR10(args.data, train=False, transform=test_tf)

    train_sampler = DistributedSampler(train_set, shuffle=True)
    test_sampler = DistributedSampler(test_set, shuffle=False)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler,
                              num_workers=8, pin_memory=True, persistent_workers=True)
    test_loader = DataLoader(test_set, batch_size=256, sampler=test_sampler, num_workers=4, pin_memory=True)

    model = models.resnet18(num_classes=10)
    model = nn.SyncBatchNorm.convert_sync_batchnorm(model).to(device)
    model = DDP(model, device_ids=[local_rank], output_device=local_rank)

    lr = args.lr * dist.get_world_size()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4, nesterov=True)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    scaler = torch.cuda.amp.GradScaler(enabled=args.amp)  # expect: DEV009

    if os.path.exists(args.ckpt):
        state = torch.load(args.ckpt, map_location={"cuda:0": f"cuda:{local_rank}"})
        model.module.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])

    for epoch in range(args.epochs):
        train_sampler.set_epoch(epoch)
        t0 = time.time()
        train_one_epoch(model, train_loader, optimizer, scaler, device, args.amp)
        scheduler.step()
        val_loss, val_acc = evaluate(model, test_loader, device)
        if is_main():
            mem = torch.cuda.max_memory_allocated(device) / 2**30
            print(f"epoch {epoch:3d} | val loss {val_loss:.4f} | acc {val_acc:.4f} | "
                  f"{time.time() - t0:.1f}s | peak mem {mem:.2f} GiB")
            torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict()}, args.ckpt)
        dist.barrier()

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
