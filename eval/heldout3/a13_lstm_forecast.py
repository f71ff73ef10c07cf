"""LSTM forecaster for a univariate series (e.g. hourly electricity load).

Reads a CSV with a `value` column, trains on sliding windows, plots the validation fit
and an autoregressive forecast.
"""
import argparse

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def make_windows(series, window):
    xs, ys = [], []
    for i in range(len(series) - window):
        xs.append(series[i:i + window])
        ys.append(series[i + window])
    return np.array(xs, dtype=np.float32)[..., None], np.array(ys, dtype=np.float32)[:, None]


class LSTMForecaster(nn.Module):
    def __init__(self, input_size=1, hidden_size=64, num_layers=2, dropout=0.2):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, dropout=dropout)
        self.head = nn.Linear(hidden_size, 1)

    def forward(self, x):
        # x: (batch, seq_len, input_size)
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size)  # expect: DEV013
        c0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size)  # expect: DEV013
        out, _ = self.lstm(x, (h0, c0))
        return self.head(out[:, -1, :])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--csv", default="load.csv")
    parser.add_argument("--window", type=int, default=48)
    parser.add_argument("--horizon", type=int, default=24)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args()

    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
    print("device:", device)

    raw = pd.read_csv(args.csv)["value"].to_numpy(dtype=np.float32)
    split = int(len(raw) * 0.8)
    mu, sigma = raw[:split].mean(), raw[:split].std()
    series = (raw - mu) / sigma

    X_train, y_train = make_windows(series[:split], args.window)
    X_val, y_val = make_windows(series[split - args.window:], args.window)
    print("train windows:", X_train.shape, "val windows:", X_val.shape)

    train_loader = DataLoader(
        TensorDataset(torch.from_numpy(X_train), torch.from_numpy(y_train)),
        batch_size=args.batch_size,
        shuffle=True,
        pin_memory=torch.cuda.is_available(),
    )
    X_val_t = torch.from_numpy(X_val)
    y_val_t = torch.from_numpy(y_val)

    model = LSTMForecaster().to(device)
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    for epoch in range(args.epochs):
        model.train()
        total = 0.0
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            total += loss.item() * x.size(0)

        model.eval()
        with torch.no_grad():
            val_pred = model(X_val_t.to(device))
            val_loss = criterion(val_pred, y_val_t)  # expect: DEV006
        print(f"epoch {epoch:02d}  train {total / len(X_train):.4f}  val {val_loss.item():.4f}")

    # autoregressive forecast from the last window
    window = torch.from_numpy(series[-args.window:].copy()).view(1, -1, 1).to(device)
    future = []
    with torch.no_grad():
        for _ in range(args.horizon):
            nxt = model(window)
            future.append(nxt.item())
            window = torch.cat([window[:, 1:, :], nxt.view(1, 1, 1)], dim=1)
    future = np.array(future) * sigma + mu

    fitted = val_pred.cpu().numpy()[:, 0] * sigma + mu
    actual = y_val_t.numpy()[:, 0] * sigma + mu
    plt.figure(figsize=(12, 4))
    plt.plot(actual, label="actual")
    plt.plot(fitted, label="fitted")
    plt.plot(np.arange(len(actual), len(actual) + args.horizon), future, label="forecast")
    plt.legend()
    plt.savefig("forecast.png", dpi=120)


if __name__ == "__main__":
    main()
