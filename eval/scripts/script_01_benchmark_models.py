"""Quick throughput benchmark of a few torchvision models at different batch sizes."""
import time

import pandas as pd
import torch
import torchvision.models as models

device = "cuda" if torch.cuda.is_available() else "cpu"  # expect: DEV004
torch.backends.cudnn.benchmark = True
print("PyTorch", torch.__version__)
print("GPU:", torch.cuda.get_device_name(0))  # expect: DEV011

MODELS = {
    "resnet18": models.resnet18,
    "resnet50": models.resnet50,
    "mobilenet_v3_large": models.mobilenet_v3_large,
    "efficientnet_b0": models.efficientnet_b0,
}
BATCH_SIZES = [1, 8, 32, 64]
WARMUP, ITERS = 10, 50


def benchmark(model, batch_size, half=False):
    x = torch.randn(batch_size, 3, 224, 224, device=device)
    if half:
        model, x = model.half(), x.half()
    with torch.inference_mode():
        for _ in range(WARMUP):
            model(x)
        torch.cuda.synchronize()  # expect: DEV011
        start = time.perf_counter()
        for _ in range(ITERS):
            model(x)
        torch.cuda.synchronize()  # expect: DEV011
    elapsed = time.perf_counter() - start
    return ITERS * batch_size / elapsed, 1000 * elapsed / ITERS


rows = []
for name, ctor in MODELS.items():
    model = ctor(weights=None).eval().to(device)
    n_params = sum(p.numel() for p in model.parameters()) / 1e6
    for bs in BATCH_SIZES:
        for half in (False, True):
            try:
                ips, ms = benchmark(model, bs, half)
            except RuntimeError as e:
                print(f"{name} bs={bs} half={half} failed: {e}")
                continue
            rows.append({"model": name, "params_M": round(n_params, 1), "batch": bs, "fp16": half,
                         "img_per_s": round(ips, 1), "ms_per_iter": round(ms, 2)})
            print(rows[-1])
        model.float()
    del model
    torch.cuda.empty_cache()

df = pd.DataFrame(rows)
print(df.pivot_table(index=["model", "fp16"], columns="batch", values="img_per_s"))
df.to_csv("benchmark_results.csv", index=False)
