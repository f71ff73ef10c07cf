"""Measure DataLoader + host-to-device copy throughput with different worker counts."""
import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset


class RandomImages(Dataset):
    def __init__(self, n, size=224):
        self.n, self.size = n, size

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.rand(3, self.size, self.size, generator=g), i % 1000


def maybe_sync():
    if not torch.cuda.is_available():
        return
    torch.cuda.synchronize()


def describe_gpus():
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        print(f"  [{i}] {torch.cuda.get_device_name(i)}  {props.total_memory / 2**30:.1f} GiB")


def run(loader, device, max_batches):
    n_images = 0
    maybe_sync()
    t0 = time.perf_counter()
    for step, (images, labels) in enumerate(loader):
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        checksum = images.mean() + labels.float().mean()
        n_images += images.size(0)
        if step + 1 == max_batches:
            break
    maybe_sync()
    return n_images / (time.perf_counter() - t0), checksum.item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--bs", type=int, default=128)
    ap.add_argument("--workers", type=int, nargs="+", default=[0, 2, 4, 8])
    ap.add_argument("--batches", type=int, default=100)
    ap.add_argument("--pin", action="store_true")
    args = ap.parse_args()

    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)
    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
    print("device:", device)
    describe_gpus()

    ds = RandomImages(args.n)
    for workers in args.workers:
        loader = DataLoader(
            ds,
            batch_size=args.bs,
            num_workers=workers,
            pin_memory=args.pin and device.type == "cuda",
            persistent_workers=workers > 0,
        )
        ips, checksum = run(loader, device, args.batches)
        print(f"workers={workers:2d}  {ips:8.1f} img/s  (checksum {checksum:.4f})")
        del loader
        torch.cuda.empty_cache()

    batch = torch.rand(args.bs, 3, 224, 224)
    if args.pin and torch.cuda.is_available():
        batch = batch.pin_memory()
    maybe_sync()
    t0 = time.perf_counter()
    for _ in range(20):
        moved = batch.to(device, non_blocking=True)
    maybe_sync()
    gb = batch.numel() * batch.element_size() * 20 / 2**30
    print(f"H2D copy: {gb / (time.perf_counter() - t0):.2f} GiB/s ({moved.device})")


if __name__ == "__main__":
    main()
