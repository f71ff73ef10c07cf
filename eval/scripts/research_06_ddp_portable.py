"""Portable training entry point: single process on a laptop (cpu/mps), or torchrun with
NCCL on a GPU node. Same code path either way."""
import argparse
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default=None, help="override: cpu, mps, cuda:1, ...")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--resume", default=None)
    p.add_argument("--list-gpus", action="store_true")
    return p.parse_args()


def setup(args):
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    distributed = int(os.environ.get("WORLD_SIZE", 1)) > 1
    if args.device:
        device = torch.device(args.device)
    elif torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    elif torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")
    if distributed:
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    return device, distributed, local_rank


def list_gpus():
    if not torch.cuda.is_available():
        sys.exit("no CUDA devices visible")
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        print(f"[{i}] {torch.cuda.get_device_name(i)} {props.total_memory / 2**30:.1f} GiB")
    print("current:", torch.cuda.current_device())


class MLPClassifier(nn.Module):
    def __init__(self, d_in, n_classes, hidden=512):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                                 nn.Linear(hidden, n_classes))

    def forward(self, x):
        return self.net(x)


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    logits, labels = [], []
    for x, y in loader:
        logits.append(model(x.to(device)).float().cpu())
        labels.append(y)
    logits, labels = torch.cat(logits), torch.cat(labels)
    acc = (logits.argmax(1) == labels).float().mean().item()
    return acc, F.softmax(logits, dim=1).numpy()


def main():
    args = parse_args()
    if args.list_gpus:
        list_gpus()
        return
    device, distributed, local_rank = setup(args)
    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)

    data = np.load("features.npz")
    train_ds = TensorDataset(torch.from_numpy(data["x_train"]).float(), torch.from_numpy(data["y_train"]).long())
    val_ds = TensorDataset(torch.from_numpy(data["x_val"]).float(), torch.from_numpy(data["y_val"]).long())
    sampler = DistributedSampler(train_ds) if distributed else None
    train_loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=sampler is None, sampler=sampler,
                              num_workers=2, pin_memory=device.type == "cuda")
    val_loader = DataLoader(val_ds, batch_size=1024)

    model = MLPClassifier(train_ds.tensors[0].shape[1], int(train_ds.tensors[1].max()) + 1)
    model.to(device)
    if args.resume:
        model.load_state_dict(torch.load(args.resume, map_location=device))
    if distributed:
        model = DDP(model, device_ids=[local_rank] if device.type == "cuda" else None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)

    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        model.train()
        for x, y in train_loader:
            x = x.to(device, non_blocking=True)
            y = y.to(device, non_blocking=True)
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        if not distributed or dist.get_rank() == 0:
            acc, probs = evaluate(model, val_loader, device)
            print(f"epoch {epoch}: loss {loss.item():.4f} val acc {acc:.4f}")
            np.save("val_probs.npy", probs)
            state = model.module.state_dict() if distributed else model.state_dict()
            torch.save(state, "mlp.pt")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
