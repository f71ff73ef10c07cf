"""Tabular regression (house prices) with a feature-normalising MLP and a Trainer class."""
import json
import os

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Standardize(nn.Module):
    """Feature normalisation whose statistics travel with the model."""

    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32))
        self.register_buffer("std", torch.as_tensor(std, dtype=torch.float32).clamp_min(1e-6))

    def forward(self, x):
        return (x - self.mean) / self.std


class ResidualMLP(nn.Module):
    def __init__(self, n_features, hidden=256, n_blocks=3, dropout=0.1, mean=None, std=None):
        super().__init__()
        self.norm = Standardize(mean, std)
        self.inp = nn.Linear(n_features, hidden)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, hidden), nn.GELU(), nn.Dropout(dropout))
            for _ in range(n_blocks)
        )
        self.out = nn.Linear(hidden, 1)
        self.log_scale = nn.Parameter(torch.zeros(1))

    def forward(self, x, missing=None):
        if missing is None:
            missing = torch.zeros(x.shape, dtype=torch.bool, device=x.device)
        x = self.norm(x).masked_fill(missing, 0.0)
        h = self.inp(x)
        for block in self.blocks:
            h = h + block(h)
        return self.out(h).squeeze(-1) * self.log_scale.exp()


class Trainer:
    def __init__(self, model, lr=1e-3, weight_decay=1e-5, patience=10, out_dir="runs/tabular"):
        if torch.accelerator.is_available():
            self.device = torch.accelerator.current_accelerator()
        else:
            self.device = torch.device("cpu")
        self.model = model.to(self.device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr, weight_decay=weight_decay)
        self.scheduler = torch.optim.lr_scheduler.OneCycleLR(self.optimizer, max_lr=lr * 10, total_steps=10_000)
        self.loss_fn = nn.HuberLoss(delta=1.0)
        self.patience = patience
        self.out_dir = out_dir
        os.makedirs(out_dir, exist_ok=True)

    def log_gpu_memory(self):
        if self.device.type != "cuda":
            return
        name = torch.cuda.get_device_name(self.device)
        peak = torch.cuda.max_memory_allocated(self.device) / 2 ** 20
        print(f"{name}: peak {peak:.0f} MiB")

    def train_epoch(self, loader):
        self.model.train()
        losses = []
        for features, target in loader:
            features = features.to(self.device)
            target = target.to(self.device)
            pred = self.model(features)
            loss = self.loss_fn(pred, target)
            self.optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(self.model.parameters(), 5.0)
            self.optimizer.step()
            self.scheduler.step()
            losses.append(loss.detach())
        return torch.stack(losses).mean().item()

    @torch.no_grad()
    def predict(self, loader):
        self.model.eval()
        outputs = []
        for features, _ in loader:
            outputs.append(self.model(features.to(self.device)).detach().cpu())
        return torch.cat(outputs).numpy()

    def evaluate(self, loader, y_true):
        y_pred = self.predict(loader)
        rmse = float(np.sqrt(np.mean((y_pred - y_true) ** 2)))
        mae = float(np.mean(np.abs(y_pred - y_true)))
        return {"rmse": rmse, "mae": mae}

    def fit(self, train_loader, val_loader, y_val, epochs=200):
        best, wait = float("inf"), 0
        for epoch in range(epochs):
            train_loss = self.train_epoch(train_loader)
            metrics = self.evaluate(val_loader, y_val)
            print(f"epoch {epoch:3d} train {train_loss:.4f} val rmse {metrics['rmse']:.4f}")
            if metrics["rmse"] < best:
                best, wait = metrics["rmse"], 0
                torch.save(self.model.state_dict(), os.path.join(self.out_dir, "best.pt"))
            else:
                wait += 1
                if wait > self.patience:
                    break
        self.model.load_state_dict(torch.load(os.path.join(self.out_dir, "best.pt"), map_location="cpu"))
        self.log_gpu_memory()
        return best


def make_loader(x, y, shuffle):
    ds = TensorDataset(torch.from_numpy(x).float(), torch.from_numpy(y).float())
    return DataLoader(ds, batch_size=512, shuffle=shuffle, pin_memory=torch.cuda.is_available())


if __name__ == "__main__":
    df = pd.read_csv("train.csv")
    y = np.log1p(df.pop("SalePrice").to_numpy(dtype=np.float32))
    x = df.select_dtypes("number").fillna(0).to_numpy(dtype=np.float32)
    split = int(0.8 * len(x))
    model = ResidualMLP(x.shape[1], mean=x[:split].mean(0), std=x[:split].std(0))
    trainer = Trainer(model)
    best = trainer.fit(make_loader(x[:split], y[:split], True), make_loader(x[split:], y[split:], False), y[split:])
    with open(os.path.join(trainer.out_dir, "metrics.json"), "w") as f:
        json.dump({"best_rmse": best}, f)
