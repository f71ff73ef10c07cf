"""Micro-benchmark: matmul throughput for several sizes and dtypes."""
import argparse
import platform
import time

import numpy as np
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # expect: DEV004


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def bench(fn, dev, iters, warmup=5):
    for _ in range(warmup):
        fn()
    sync(dev)
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()  # expect: DEV011
    return (time.perf_counter() - t0) / iters


def bench_events(fn, iters):
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1000 / iters


def check_result(a, b, c):
    ref = a.float().cpu() @ b.float().cpu()
    err = np.abs(c.float().numpy() - ref.numpy()).max()  # expect: DEV001
    return float(err)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[512, 1024, 2048, 4096])
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()

    name = torch.cuda.get_device_name(0) if device.type == "cuda" else platform.processor()
    print(f"device: {device} ({name})")
    dtypes = [torch.float32, torch.float16, torch.bfloat16] if device.type == "cuda" else [torch.float32]

    rows = []
    for n in args.sizes:
        for dtype in dtypes:
            a = torch.randn(n, n, device=device, dtype=dtype)
            b = torch.randn(n, n, device=device, dtype=dtype)
            if torch.cuda.is_available():
                sec = bench_events(lambda: a @ b, args.iters)
            else:
                sec = bench(lambda: a @ b, device, args.iters)
            tflops = 2 * n ** 3 / sec / 1e12
            err = check_result(a, b, a @ b) if args.check else float("nan")
            rows.append((n, str(dtype).replace("torch.", ""), sec * 1e3, tflops, err))

    print(f"{'n':>6} {'dtype':>9} {'ms':>9} {'TFLOP/s':>8} {'max err':>9}")
    for n, dt, ms, tf, err in rows:
        print(f"{n:6d} {dt:>9} {ms:9.3f} {tf:8.2f} {err:9.2e}")


if __name__ == "__main__":
    main()
