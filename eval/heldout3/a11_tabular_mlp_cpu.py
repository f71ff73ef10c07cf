"""House-price regression with a small MLP.

The dataset has ~20k rows, so everything runs on the CPU: no device handling needed.
"""
import argparse
import json

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
from sklearn.metrics import mean_absolute_error, r2_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from torch.utils.data import DataLoader, TensorDataset

NUMERIC = ["MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup", "Latitude", "Longitude"]
TARGET = "MedHouseVal"


class MLP(nn.Module):
    def __init__(self, n_in, hidden=(128, 64), dropout=0.1):
        super().__init__()
        layers, prev = [], n_in
        for h in hidden:
            layers += [nn.Linear(prev, h), nn.ReLU(), nn.Dropout(dropout)]
            prev = h
        layers.append(nn.Linear(prev, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x).squeeze(-1)


def load_data(path, seed):
    df = pd.read_csv(path).dropna(subset=NUMERIC + [TARGET])
    X = df[NUMERIC].to_numpy(dtype=np.float32)
    y = np.log1p(df[TARGET].to_numpy(dtype=np.float32))
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=seed)
    scaler = StandardScaler().fit(X_train)
    X_train = scaler.transform(X_train).astype(np.float32)
    X_test = scaler.transform(X_test).astype(np.float32)
    return X_train, X_test, y_train, y_test


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--csv", default="housing.csv")
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--init-from", default="")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    X_train, X_test, y_train, y_test = load_data(args.csv, args.seed)
    X_train_t = torch.from_numpy(X_train)
    y_train_t = torch.from_numpy(y_train)
    X_test_t = torch.tensor(X_test)
    loader = DataLoader(TensorDataset(X_train_t, y_train_t), batch_size=64, shuffle=True, pin_memory=False)

    model = MLP(X_train.shape[1])
    if args.init_from:
        model.load_state_dict(torch.load(args.init_from, weights_only=True))  # expect: DEV007
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=1e-5)
    loss_fn = nn.SmoothL1Loss()

    history = []
    for epoch in range(args.epochs):
        model.train()
        epoch_loss = 0.0
        for xb, yb in loader:
            pred = model(xb)
            loss = loss_fn(pred, yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            epoch_loss += loss.item() * len(xb)
        history.append(epoch_loss / len(loader.dataset))
        if epoch % 10 == 0:
            print(f"epoch {epoch:3d}  train loss {history[-1]:.4f}")

    model.eval()
    with torch.no_grad():
        test_pred = model(X_test_t).numpy()
    # the training-mode prediction is used to estimate MC-dropout uncertainty
    model.train()
    samples = np.stack([model(X_test_t).detach().numpy() for _ in range(20)])
    model.eval()

    y_true = np.expm1(y_test)
    y_hat = np.expm1(test_pred)
    results = {
        "mae": float(mean_absolute_error(y_true, y_hat)),
        "r2": float(r2_score(y_true, y_hat)),
        "mean_mc_std": float(np.expm1(samples).std(axis=0).mean()),
        "final_train_loss": float(np.array(history)[-1]),
    }
    print(json.dumps(results, indent=2))
    torch.save(model.state_dict(), "mlp_housing.pt")


if __name__ == "__main__":
    main()
