"""Export the trained text-CNN for CPU serving (TorchScript + raw numpy weights) and check
that every visible GPU produces the same logits as the CPU export."""
import argparse
import json
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class TextCNN(nn.Module):
    def __init__(self, vocab_size=30000, emb=128, n_filters=100, kernel_sizes=(3, 4, 5), n_classes=4):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, emb, padding_idx=0)
        self.convs = nn.ModuleList(nn.Conv1d(emb, n_filters, k) for k in kernel_sizes)
        self.fc = nn.Linear(n_filters * len(kernel_sizes), n_classes)

    def forward(self, ids):
        pad_mask = (ids != 0).unsqueeze(1)
        x = self.emb(ids).transpose(1, 2) * pad_mask
        pooled = [F.relu(conv(x)).amax(dim=2) for conv in self.convs]
        return self.fc(torch.cat(pooled, dim=1))


def gpu_latency(model, example, iters=100):
    assert torch.cuda.is_available(), "--gpu-latency needs a CUDA device"
    gpu_model = TextCNN()
    gpu_model.load_state_dict(model.state_dict())
    gpu_model = gpu_model.to("cuda").eval()
    x = example.to("cuda")
    with torch.no_grad():
        for _ in range(10):
            gpu_model(x)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(iters):
            gpu_model(x)
        torch.cuda.synchronize()
    return 1000 * (time.perf_counter() - t0) / iters


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", default="textcnn.pt")
    ap.add_argument("--out", default="export")
    ap.add_argument("--gpu-latency", action="store_true")
    args = ap.parse_args()

    device = torch.device("cpu")
    model = TextCNN()
    model.load_state_dict(torch.load(args.ckpt, map_location=device))
    model.to(device)
    model.eval()

    example = torch.randint(1, 30000, (8, 64), device=device)
    with torch.no_grad():
        reference = model(example)
    ref_np = reference.numpy()
    np.save(f"{args.out}/reference_logits.npy", ref_np)

    traced = torch.jit.trace(model, example)
    traced.save(f"{args.out}/textcnn_cpu.pt")
    weights = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    np.savez(f"{args.out}/textcnn_weights.npz", **weights)

    report = {"cpu_probs": F.softmax(reference, dim=1).numpy().round(4).tolist(), "gpus": []}
    for i in range(torch.cuda.device_count()):
        dev = torch.device("cuda", i)
        replica = TextCNN()
        replica.load_state_dict(model.state_dict())
        replica.to(dev).eval()
        with torch.no_grad():
            out = replica(example.to(dev)).cpu()
        report["gpus"].append({
            "name": torch.cuda.get_device_name(i),
            "max_abs_diff": float((out - reference).abs().max()),
            "argmax_equal": bool(np.array_equal(out.argmax(1).numpy(), ref_np.argmax(1))),
        })
    if args.gpu_latency:
        report["gpu_latency_ms"] = gpu_latency(model, example)
    with open(f"{args.out}/export_report.json", "w") as f:
        json.dump(report, f, indent=2)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
