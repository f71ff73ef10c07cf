"""Day-ahead electricity load forecasting with an LSTM encoder (hourly data, 24-step horizon).

    python c04_load_forecasting_lstm.py --csv data/load.csv --epochs 30 --amp
"""
import argparse

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def make_windows(series, lookback, horizon):
    X, Y = [], []
    for i in range(len(series) - lookback - horizon + 1):
        X.append(series[i:i + lookback])
        Y.append(series[i + lookback:i + lookback + horizon, 0])
    return np.stack(X).astype(np.float32), np.stack(Y).astype(np.float32)


class Forecaster(nn.Module):
    def __init__(self, n_features, hidden=128, num_layers=2, horizon=24, noise_std=0.02, dropout=0.1):
        super().__init__()
        self.num_layers = num_layers
        self.hidden = hidden
        self.noise_std = noise_std
        self.lstm = nn.LSTM(n_features, hidden, num_layers, batch_first=True, dropout=dropout)
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, horizon))

    def forward(self, x):
        if self.training and self.noise_std > 0:
            # input jitter as a cheap regulariser
            x = x + torch.randn(x.shape) * self.noise_std  # expect: DEV013
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden, device=x.device)
        c0 = torch.zeros_like(h0)
        out, _ = self.lstm(x, (h0, c0))
        return self.head(out[:, -1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", default="data/load.csv")
    ap.add_argument("--lookback", type=int, default=168)
    ap.add_argument("--horizon", type=int, default=24)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--bs", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--amp", action="store_true")
    ap.add_argument("--save", default="forecaster.pt")
    ap.add_argument("--plot", action="store_true")
    args = ap.parse_args()

    if torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    df = pd.read_csv(args.csv, parse_dates=["timestamp"]).sort_values("timestamp")
    df["hour_sin"] = np.sin(2 * np.pi * df.timestamp.dt.hour / 24)
    df["hour_cos"] = np.cos(2 * np.pi * df.timestamp.dt.hour / 24)
    values = df[["load", "temperature", "hour_sin", "hour_cos"]].to_numpy(dtype=np.float32)

    split = int(len(values) * 0.8)
    mean, std = values[:split].mean(0), values[:split].std(0) + 1e-8
    values = (values - mean) / std
    X_train, y_train = make_windows(values[:split], args.lookback, args.horizon)
    X_val, y_val = make_windows(values[split - args.lookback:], args.lookback, args.horizon)
    print(f"train windows {len(X_train)}, val windows {len(X_val)}")

    train_ds = TensorDataset(torch.from_numpy(X_train), torch.from_numpy(y_train))
    train_loader = DataLoader(train_ds, batch_size=args.bs, shuffle=True, drop_last=True,
                              pin_memory=torch.cuda.is_available())
    X_val_t = torch.from_numpy(X_val)
    y_val_t = torch.from_numpy(y_val)

    model = Forecaster(n_features=values.shape[1], horizon=args.horizon).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=2)
    criterion = nn.MSELoss()
    use_amp = args.amp and device.type == "cuda"
    scaler = torch.cuda.amp.GradScaler(enabled=use_amp)  # expect: DEV009

    best = float("inf")
    for epoch in range(args.epochs):
        model.train()
        epoch_loss = 0.0
        for xb, yb in train_loader:
            xb, yb = xb.to(device), yb.to(device)
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                loss = criterion(model(xb), yb)
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            epoch_loss += loss.item() * xb.size(0)

        model.eval()
        with torch.no_grad():
            preds = model(X_val_t.to(device))
        val_mse = criterion(preds.cpu(), y_val_t).item()
        val_mae = (preds - y_val_t).abs().mean().item()  # expect: DEV006
        sched.step(val_mse)
        print(f"epoch {epoch + 1:02d}  train {epoch_loss / len(train_ds):.4f}  "
              f"val mse {val_mse:.4f}  mae {val_mae:.4f}")
        if val_mse < best:
            best = val_mse
            torch.save({"model": model.state_dict(), "mean": mean, "std": std, "args": vars(args)}, args.save)

    if args.plot:
        import matplotlib.pyplot as plt

        fc = preds[0].cpu().numpy() * std[0] + mean[0]
        gt = y_val[0] * std[0] + mean[0]
        plt.plot(gt, label="actual")
        plt.plot(fc, label="forecast")
        plt.legend()
        plt.savefig("forecast.png", dpi=120)


if __name__ == "__main__":
    main()
