"""Convert a DDP training checkpoint into a slim, CPU-only inference checkpoint.

- strips the ``module.`` prefix that DistributedDataParallel adds
- drops optimizer / scheduler / scaler state
- optionally casts floating-point weights to fp16
- optionally averages in EMA weights
"""
import argparse
import os

import torch


def strip_prefix(state_dict, prefix="module."):
    return {(k[len(prefix):] if k.startswith(prefix) else k): v for k, v in state_dict.items()}


def to_cpu(state_dict, half=False):
    out = {}
    for k, v in state_dict.items():
        if not torch.is_tensor(v):
            out[k] = v
            continue
        v = v.detach().cpu()
        if half and v.is_floating_point():
            v = v.half()
        out[k] = v
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--half", action="store_true")
    ap.add_argument("--ema", default="", help="optional EMA checkpoint to use instead of raw weights")
    ap.add_argument("--key", default="model")
    args = ap.parse_args()

    ckpt = torch.load(args.src)  # expect: DEV007
    state = ckpt[args.key] if args.key in ckpt else ckpt
    state = strip_prefix(state)

    if args.ema:
        ema = torch.load(args.ema, weights_only=True)  # expect: DEV007
        ema_state = strip_prefix(ema.get("ema", ema))
        missing = set(state) - set(ema_state)
        if missing:
            print(f"EMA checkpoint lacks {len(missing)} keys, keeping raw weights for them")
        state = {k: ema_state.get(k, v) for k, v in state.items()}

    state = to_cpu(state, half=args.half)
    meta = {
        "epoch": ckpt.get("epoch"),
        "arch": ckpt.get("arch", "unknown"),
        "dtype": "float16" if args.half else "float32",
    }
    torch.save({"model": state, "meta": meta}, args.dst)

    # sanity check: reload on the CPU and compare key sets
    reloaded = torch.load(args.dst, map_location="cpu")
    assert set(reloaded["model"]) == set(state)
    n_params = sum(v.numel() for v in state.values() if torch.is_tensor(v))
    size_mb = os.path.getsize(args.dst) / 2**20
    print(f"wrote {args.dst}: {len(state)} tensors, {n_params / 1e6:.1f}M params, {size_mb:.1f} MiB")


if __name__ == "__main__":
    main()
