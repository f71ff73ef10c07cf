"""Micro-benchmarks for matmul / attention / host-to-device copies.

Prints a small table; runs on whatever accelerator torch finds, with the CUDA-only
measurements (events, peak memory, pinned copies) skipped elsewhere.
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F


def pick_device():
    if torch.accelerator.is_available():
        return torch.accelerator.current_accelerator()
    return torch.device("cpu")


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()
    elif device.type == "mps":
        torch.mps.synchronize()


def warmup(fn, n=5):
    for _ in range(n):
        fn()
    torch.cuda.synchronize()  # expect: DEV011


def time_wall(fn, device, iters=50):
    times = []
    for _ in range(iters):
        sync(device)
        t0 = time.perf_counter()
        fn()
        sync(device)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def time_events(fn, iters=50):
    if not torch.cuda.is_available():
        raise RuntimeError("cuda events need a CUDA device")
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters


def peak_memory_mb(fn, device):
    if device.type != "cuda":
        return float("nan")
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    fn()
    torch.cuda.synchronize(device)
    return torch.cuda.max_memory_allocated(device) / 2 ** 20


def bench_h2d(device, numel=64 * 2 ** 20, iters=20):
    if device.type != "cuda":
        return None
    pageable = torch.empty(numel, dtype=torch.float32)
    pinned = torch.empty(numel, dtype=torch.float32).pin_memory()
    out = {}
    for name, src in (("pageable", pageable), ("pinned", pinned)):
        dst = src.to(device, non_blocking=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(iters):
            dst = src.to(device, non_blocking=True)
        torch.cuda.synchronize()
        dt = (time.perf_counter() - t0) / iters
        out[name] = numel * 4 / dt / 1e9
        del dst
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096])
    p.add_argument("--iters", type=int, default=50)
    args = p.parse_args()

    device = pick_device()
    dtype = torch.float16 if torch.cuda.is_available() else torch.float32
    print(f"torch {torch.__version__}  device {device}  dtype {dtype}")
    print(f"current cuda device: {torch.cuda.current_device()}")  # expect: DEV011
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        print(f"{props.name}: {props.total_memory / 2 ** 30:.1f} GiB, "
              f"sm_{props.major}{props.minor}")

    print(f"{'size':>6} {'wall ms':>9} {'event ms':>9} {'TFLOP/s':>8} {'peak MB':>8}")
    for n in args.sizes:
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        fn = lambda: a @ b  # noqa: E731
        warmup(fn)
        ms = time_wall(fn, device, args.iters)
        ev = time_events(fn, args.iters) if device.type == "cuda" else float("nan")
        tflops = 2 * n ** 3 / (ms * 1e-3) / 1e12
        mem = peak_memory_mb(fn, device)
        print(f"{n:>6} {ms:>9.3f} {ev:>9.3f} {tflops:>8.2f} {mem:>8.1f}")

    # scaled dot product attention, (batch, heads, seq, dim)
    q = torch.randn(8, 16, 1024, 64, device=device, dtype=dtype)
    k = torch.randn_like(q)
    v = torch.randn_like(q)
    ms = time_wall(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), device)
    print(f"sdpa: {ms:.3f} ms")

    copies = bench_h2d(device)
    if copies is not None:
        for name, gbps in copies.items():
            print(f"h2d {name}: {gbps:.1f} GB/s")


if __name__ == "__main__":
    main()
