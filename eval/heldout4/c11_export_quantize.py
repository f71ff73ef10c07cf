"""Export utilities for the patch classifier: TorchScript, ONNX, dynamic int8 quantisation, latency.

    python c11_export_quantize.py checkpoints/patchvit_best.pt --out-dir export/
"""
import argparse
import copy
import os
import time

import numpy as np
import torch
import torch.nn as nn


class PatchClassifier(nn.Module):
    """Small ViT-style classifier used by the inference service (mirrors models/patch_vit.py)."""

    def __init__(self, img_size=96, patch=8, dim=192, depth=4, heads=3, n_classes=10):
        super().__init__()
        self.dim = dim
        n_patches = (img_size // patch) ** 2
        self.patch_embed = nn.Conv2d(3, dim, patch, stride=patch)
        self.pos = nn.Parameter(torch.zeros(1, n_patches + 1, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 4, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, n_classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        cls = torch.zeros(x.size(0), 1, self.dim)  # expect: DEV013
        x = torch.cat([cls, x], dim=1) + self.pos
        x = self.encoder(x)
        return self.head(self.norm(x[:, 0]))


def load_model(ckpt_path):
    model = PatchClassifier()
    state = torch.load(ckpt_path)  # expect: DEV007
    if "state_dict" in state:
        state = {k.removeprefix("module."): v for k, v in state["state_dict"].items()}
    model.load_state_dict(state)
    return model.eval()


def export_torchscript(model, path, example):
    traced = torch.jit.trace(model, example)
    traced = torch.jit.freeze(traced)
    traced.save(path)
    reloaded = torch.jit.load(path, map_location="cpu")
    with torch.no_grad():
        ref = model(example)
        out = reloaded(example)
    np.testing.assert_allclose(ref.numpy(), out.numpy(), rtol=1e-4, atol=1e-5)
    return traced


def export_onnx(model, path, example):
    torch.onnx.export(
        model,
        (example,),
        path,
        input_names=["images"],
        output_names=["logits"],
        dynamic_axes={"images": {0: "batch"}, "logits": {0: "batch"}},
        opset_version=17,
    )


def quantize_dynamic(model):
    return torch.ao.quantization.quantize_dynamic(copy.deepcopy(model), {nn.Linear}, dtype=torch.qint8)


def model_size_mb(model):
    tmp = "_size_probe.pt"
    torch.save(model.state_dict(), tmp)
    size = os.path.getsize(tmp) / 1e6
    os.remove(tmp)
    return size


def benchmark(model, example, device, iters=100, warmup=10):
    model = model.to(device)
    example = example.to(device)
    with torch.inference_mode():
        for _ in range(warmup):
            model(example)
        torch.cuda.synchronize()  # expect: DEV011
        start = time.perf_counter()
        for _ in range(iters):
            model(example)
        torch.cuda.synchronize()  # expect: DEV011
    return (time.perf_counter() - start) / iters * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ckpt")
    ap.add_argument("--out-dir", default="export")
    ap.add_argument("--img-size", type=int, default=96)
    ap.add_argument("--skip-bench", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)

    model = load_model(args.ckpt)
    example = torch.randn(1, 3, args.img_size, args.img_size)
    export_torchscript(model, os.path.join(args.out_dir, "model.ts"), example)
    export_onnx(model, os.path.join(args.out_dir, "model.onnx"), example)

    qmodel = quantize_dynamic(model)
    with torch.no_grad():
        diff = (model(example) - qmodel(example)).abs().max().item()
    torch.save(qmodel.state_dict(), os.path.join(args.out_dir, "model_int8.pt"))
    print(f"fp32 {model_size_mb(model):.1f} MB | int8 {model_size_mb(qmodel):.1f} MB | max |diff| {diff:.4f}")

    if args.skip_bench:
        return
    cpu = torch.device("cpu")
    print(f"fp32 cpu : {benchmark(copy.deepcopy(model), example, cpu):.2f} ms")
    print(f"int8 cpu : {benchmark(qmodel, example, cpu):.2f} ms")
    if torch.cuda.is_available():
        gpu = torch.device("cuda")
        print(f"fp32 cuda: {benchmark(copy.deepcopy(model), example, gpu):.2f} ms")


if __name__ == "__main__":
    main()
