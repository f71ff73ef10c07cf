"""Tabular regression (California housing) with train()/evaluate() helpers."""
import argparse

import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import fetch_california_housing
from sklearn.model_selection import train_test_split
from torch.utils.data import DataLoader, TensorDataset


class Standardize(nn.Module):
    """Feature scaling that travels with the model (buffers follow .to())."""

    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32))
        self.register_buffer("std", torch.as_tensor(std, dtype=torch.float32))

    def forward(self, x):
        return (x - self.mean) / self.std


class MLP(nn.Module):
    def __init__(self, in_features, mean, std, hidden=128, p=0.1):
        super().__init__()
        self.norm = Standardize(mean, std)
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden),
            nn.GELU(),
            nn.Dropout(p),
            nn.Linear(hidden, hidden),
            nn.GELU(),
            nn.Linear(hidden, 1),
        )
        self.log_scale = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        x = self.norm(x)
        if self.training:
            noise = torch.randn(x.shape, device=x.device) * 0.01
        else:
            noise = torch.zeros_like(x)
        return self.net(x + noise).squeeze(-1) * self.log_scale.exp()


def train(model, device, loader, optimizer, loss_fn):
    model.train()
    total = 0.0
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item() * xb.size(0)
    return total / len(loader.dataset)


@torch.no_grad()
def evaluate(model, device, loader):
    model.eval()
    preds, targets = [], []
    for xb, yb in loader:
        preds.append(model(xb.to(device)).cpu())
        targets.append(yb)
    preds = torch.cat(preds)
    targets = torch.cat(targets)
    mse = torch.mean((preds - targets) ** 2).item()
    return mse, preds.numpy(), targets.numpy()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--cpu", action="store_true", help="force CPU")
    args = parser.parse_args()

    if args.cpu:
        device = torch.device("cpu")
    elif torch.cuda.is_available():
        device = torch.device("cuda")
    elif torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")

    data = fetch_california_housing()
    X_train, X_test, y_train, y_test = train_test_split(
        data.data.astype(np.float32), data.target.astype(np.float32), test_size=0.2, random_state=0
    )
    mean, std = X_train.mean(0), X_train.std(0)
    train_ds = TensorDataset(torch.from_numpy(X_train), torch.from_numpy(y_train))
    test_ds = TensorDataset(torch.from_numpy(X_test), torch.from_numpy(y_test))
    use_cuda = device.type == "cuda"
    train_loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True, pin_memory=use_cuda)
    test_loader = DataLoader(test_ds, batch_size=1024, pin_memory=use_cuda)

    model = MLP(X_train.shape[1], mean, std)
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    loss_fn = nn.MSELoss()

    for epoch in range(args.epochs):
        train_loss = train(model, device, train_loader, optimizer, loss_fn)
        mse, _, _ = evaluate(model, device, test_loader)
        print(f"epoch {epoch:3d}  train {train_loss:.4f}  test mse {mse:.4f}")

    _, preds, targets = evaluate(model, device, test_loader)
    np.savetxt("preds.csv", np.stack([preds, targets], 1), delimiter=",")


if __name__ == "__main__":
    main()
