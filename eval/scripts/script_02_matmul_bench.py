"""Matmul / attention micro-benchmark that runs on CUDA, MPS or CPU.

Usage: python script_02_matmul_bench.py [--sizes 1024 2048 4096] [--dtype bf16]
"""
import argparse
import json
import platform
import time

import numpy as np
import torch
import torch.nn.functional as F

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def get_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    elif torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()
    elif device.type == "mps":
        torch.mps.synchronize()


def describe(device):
    info = {"torch": torch.__version__, "python": platform.python_version(), "device": str(device)}
    if not torch.cuda.is_available():
        info["name"] = platform.processor() or "cpu"
        return info
    info["name"] = torch.cuda.get_device_name(torch.cuda.current_device())
    info["capability"] = torch.cuda.get_device_capability()
    info["gpus"] = [torch.cuda.get_device_properties(i).name for i in range(torch.cuda.device_count())]
    return info


def time_fn(fn, device, iters=20):
    for _ in range(3):
        fn()
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / iters
    sync(device)
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    sync(device)
    return 1000 * (time.perf_counter() - t0) / iters


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096])
    ap.add_argument("--dtype", choices=DTYPES, default="fp32")
    args = ap.parse_args()

    device = get_device()
    dtype = DTYPES[args.dtype]
    print(json.dumps(describe(device), indent=2))

    results = {}
    for n in args.sizes:
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        ms = time_fn(lambda: a @ b, device)
        tflops = 2 * n ** 3 / (ms / 1000) / 1e12
        results[f"matmul_{n}"] = round(tflops, 2)
        print(f"matmul {n}x{n}: {ms:.2f} ms, {tflops:.2f} TFLOP/s")

        q = torch.randn(8, 16, n // 4, 64, device=device, dtype=dtype)
        k, v = torch.randn_like(q), torch.randn_like(q)
        ms = time_fn(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), device)
        results[f"sdpa_{n // 4}"] = round(ms, 3)
        print(f"sdpa seq={n // 4}: {ms:.2f} ms")

        ref = (a.float() @ b.float()).cpu().numpy()
        got = (a @ b).float().cpu().numpy()
        print("max rel err:", float(np.max(np.abs(ref - got)) / np.max(np.abs(ref))))

    if torch.cuda.is_available():
        print(f"peak memory: {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB")
        torch.cuda.empty_cache()
    with open("bench.json", "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
