"""Mixed-precision training loop that runs on CUDA, MPS and CPU."""
import argparse
import contextlib

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def pick_device(name):
    if name != "auto":
        return torch.device(name)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


class ResidualMLP(nn.Module):
    def __init__(self, dim, depth=4, num_classes=10):
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim * 4), nn.GELU(), nn.Linear(dim * 4, dim))
            for _ in range(depth)
        )
        self.head = nn.Linear(dim, num_classes)
        self.register_buffer("step_count", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        for blk in self.blocks:
            x = x + blk(x)
        if self.training:
            self.step_count += 1
        return self.head(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="auto")
    parser.add_argument("--amp", action="store_true")
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--bs", type=int, default=512)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()

    device = pick_device(args.device)
    use_amp = args.amp and device.type in ("cuda", "cpu")
    amp_dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp and device.type == "cuda")

    X = torch.randn(20000, args.dim)
    y = X[:, :10].argmax(1)
    loader = DataLoader(TensorDataset(X, y), batch_size=args.bs, shuffle=True,
                        pin_memory=device.type == "cuda")

    model = ResidualMLP(args.dim).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    criterion = nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        model.train()
        for xb, yb in loader:
            xb = xb.to(device, non_blocking=True)
            yb = yb.to(device, non_blocking=True)
            if use_amp:
                ctx = torch.autocast(device_type=device.type, dtype=amp_dtype)
            else:
                ctx = contextlib.nullcontext()
            with ctx:
                loss = criterion(model(xb), yb)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
        print(f"epoch {epoch}: loss {loss.item():.4f}, steps {int(model.step_count)}")
        if device.type == "cuda":
            print(f"  peak memory {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")
            torch.cuda.reset_peak_memory_stats()

    model.eval()
    with torch.no_grad(), torch.amp.autocast(device.type, enabled=use_amp, dtype=amp_dtype):
        acc = (model(X[:2000].to(device)).argmax(1).cpu() == y[:2000]).float().mean()
    print(f"train-set accuracy {acc.item():.3f}")


if __name__ == "__main__":
    main()
