"""Micro-benchmarks: matmul, conv and host-to-device copies on the available accelerator."""
import argparse
import random
import time

import numpy as np
import torch
import torch.nn as nn


def seed_everything(seed=1234):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def get_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()
    elif device.type == "mps":
        torch.mps.synchronize()


def check_correctness(device, n=256):
    a = torch.randn(n, n)
    b = torch.randn(n, n)
    expected = a @ b
    got = a.to(device) @ b.to(device)
    return (got - expected).abs().max().item()  # expect: DEV006


def time_matmul(device, n=4096, iters=50):
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    for _ in range(5):
        a @ b
    sync(device)
    start = time.perf_counter()
    for _ in range(iters):
        c = a @ b
    sync(device)
    elapsed = time.perf_counter() - start
    tflops = 2 * n ** 3 * iters / elapsed / 1e12
    return elapsed / iters * 1e3, tflops, c.float().mean().item()


def time_conv(device, batch=64, iters=30):
    conv = nn.Conv2d(64, 128, 3, padding=1).to(device)
    x = torch.randn(batch, 64, 56, 56, device=device)
    with torch.no_grad():
        for _ in range(3):
            conv(x)
        torch.cuda.synchronize()  # expect: DEV011
        t0 = time.time()
        for _ in range(iters):
            y = conv(x)
        torch.cuda.synchronize()  # expect: DEV011
    return (time.time() - t0) / iters * 1e3, tuple(y.shape)


def time_h2d(device, mb=256):
    host = torch.empty(mb * 2**20 // 4).pin_memory()  # expect: DEV005
    start = time.perf_counter()
    dev = host.to(device, non_blocking=True)
    sync(device)
    elapsed = time.perf_counter() - start
    return mb / 1024 / elapsed, dev.numel()


def time_cuda_events(device, iters=100):
    """CUDA events measure device-side time."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    x = torch.randn(8192, 8192, device=device)
    start.record()
    for _ in range(iters):
        x = torch.relu(x)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()

    seed_everything(args.seed)
    device = get_device()
    print("device:", device)
    if str(device).startswith("cuda"):
        print("gpu:", torch.cuda.get_device_name(device))
        torch.backends.cuda.matmul.allow_tf32 = True

    print(f"max abs error vs CPU: {check_correctness(device):.2e}")
    ms, tflops, _ = time_matmul(device, args.size)
    print(f"matmul {args.size}: {ms:.2f} ms/iter, {tflops:.2f} TFLOP/s")
    conv_ms, shape = time_conv(device)
    print(f"conv: {conv_ms:.2f} ms/iter, out {shape}")
    gbps, _ = time_h2d(device)
    print(f"h2d: {gbps:.1f} GB/s")
    if device.type == "cuda":
        print(f"relu (events): {time_cuda_events(device):.3f} ms/iter")


if __name__ == "__main__":
    main()
