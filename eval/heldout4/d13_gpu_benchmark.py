"""Quick-and-dirty GPU benchmarking helpers: matmul throughput, a conv net forward
pass and host->device copy bandwidth. Prints a small table.

    python d13_gpu_benchmark.py --sizes 1024 2048 4096 --dtype fp16
"""
import argparse
import time

import torch
import torch.nn as nn

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def pick_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def print_env(device):
    print(f"torch {torch.__version__}, device {device}")
    print(f"gpu: {torch.cuda.get_device_name()}")  # expect: DEV011
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        print(f"  [{i}] {props.name}: {props.total_memory / 2**30:.1f} GiB, sm_{props.major}{props.minor}")


def warmup_gpu(iters=20):
    x = torch.randn(2048, 2048, device="cuda")  # expect: DEV003
    for _ in range(iters):
        y = x @ x
    del x, y


def benchmark(fn, device, iters=50, warmup=5):
    """Return milliseconds per call of fn()."""
    for _ in range(warmup):
        fn()
    if device.type == "cuda":
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
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
    return (time.perf_counter() - t0) * 1000.0 / iters


def peak_memory_mb(device):
    if device.type != "cuda":
        return float("nan")
    return torch.cuda.max_memory_allocated(device) / 2**20


def h2d_bandwidth(size_mb=256, iters=20):
    """GB/s for pageable and pinned host->device copies, or None without CUDA."""
    if not torch.cuda.is_available():
        return None
    dev = torch.device("cuda")
    host = torch.empty(size_mb * 2**20, dtype=torch.uint8)
    pinned = host.pin_memory()
    out = {}
    for name, buf in [("pageable", host), ("pinned", pinned)]:
        ms = benchmark(lambda: buf.to(dev, non_blocking=True), dev, iters=iters)
        out[name] = size_mb / 1024 / (ms / 1000)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096])
    parser.add_argument("--dtype", choices=list(DTYPES), default="fp16")
    args = parser.parse_args()
    dtype = DTYPES[args.dtype]

    device = pick_device()
    print_env(device)
    warmup_gpu()
    torch.backends.cuda.matmul.allow_tf32 = True

    print(f"{'n':>6} {'ms':>9} {'TFLOP/s':>9}")
    for n in args.sizes:
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        bias = torch.randn(n, dtype=dtype)
        ms = benchmark(lambda: a @ b + bias, device)  # expect: DEV006
        tflops = 2 * n ** 3 / (ms / 1000) / 1e12
        print(f"{n:>6} {ms:>9.3f} {tflops:>9.2f}")

    model = nn.Sequential(
        nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(),
        nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 1000),
    ).to(device).eval()
    images = torch.randn(64, 3, 224, 224, device=device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    with torch.inference_mode():
        ms = benchmark(lambda: model(images), device, iters=20)
    print(f"conv net fwd (bs=64): {ms:.2f} ms/iter, {64 / (ms / 1000):.0f} img/s, "
          f"peak mem {peak_memory_mb(device):.0f} MiB")

    bw = h2d_bandwidth()
    if bw is not None:
        print(", ".join(f"H2D {k}: {v:.1f} GB/s" for k, v in bw.items()))


if __name__ == "__main__":
    main()
