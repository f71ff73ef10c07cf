"""Micro-benchmark: training throughput of a few torchvision models on one GPU.

    python bench.py --models resnet50 convnext_tiny --batch-size 64 --amp
"""
import argparse
import json
import sys
import time

import torch
import torch.nn as nn
import torchvision.models as models


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--models", nargs="+", default=["resnet18", "resnet50"])
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--gpu", type=int, default=0)
    p.add_argument("--amp", action="store_true")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--out", default="bench_results.pt")
    return p.parse_args()


def main():
    args = parse_args()
    if not torch.cuda.is_available():
        print("This benchmark needs a CUDA GPU.", file=sys.stderr)
        sys.exit(1)

    torch.cuda.set_device(args.gpu)
    device = torch.device(f"cuda:{args.gpu}")
    props = torch.cuda.get_device_properties(args.gpu)
    print(f"GPU: {torch.cuda.get_device_name(args.gpu)} ({props.total_memory / 2**30:.0f} GiB)")
    torch.backends.cudnn.benchmark = True

    # host -> device bandwidth with pinned memory
    host = torch.empty(64 * 2**20, dtype=torch.float32).pin_memory()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    dev_buf = host.to(device, non_blocking=True)
    torch.cuda.synchronize()
    print(f"H2D bandwidth: {host.numel() * 4 / (time.perf_counter() - t0) / 1e9:.1f} GB/s")
    del dev_buf

    results, last_losses = {}, []
    for name in args.models:
        model = getattr(models, name)(weights=None).cuda()
        if args.channels_last:
            model = model.to(memory_format=torch.channels_last)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        criterion = nn.CrossEntropyLoss()
        x = torch.randn(args.batch_size, 3, 224, 224, device=device)
        y = torch.randint(0, 1000, (args.batch_size,), device="cuda")
        if args.channels_last:
            x = x.to(memory_format=torch.channels_last)

        for _ in range(args.warmup):
            with torch.cuda.amp.autocast(enabled=args.amp):  # expect: DEV009
                loss = criterion(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

        torch.cuda.reset_peak_memory_stats()
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(args.iters):
            with torch.autocast("cuda", dtype=torch.float16, enabled=args.amp):
                loss = criterion(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        end.record()
        torch.cuda.synchronize()

        ms = start.elapsed_time(end) / args.iters
        results[name] = {
            "ms_per_iter": ms,
            "images_per_s": args.batch_size * 1000.0 / ms,
            "peak_mem_gib": torch.cuda.max_memory_allocated() / 2**30,
        }
        last_losses.append(loss.detach())
        print(f"{name:>20s}: {ms:7.2f} ms/iter  {results[name]['images_per_s']:8.1f} img/s")
        del model, optimizer
        torch.cuda.empty_cache()

    losses = torch.stack(last_losses)
    losses.cpu()  # expect: DEV008
    torch.save({"results": results, "final_losses": losses, "gpu": torch.cuda.get_device_name(args.gpu)}, args.out)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
