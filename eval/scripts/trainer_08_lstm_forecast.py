"""Multi-step load forecasting with a stacked LSTM (sliding windows over a CSV series)."""
import numpy as np
import pandas as pd
import torch
import torch.nn as nn
from sklearn.preprocessing import StandardScaler
from torch.utils.data import DataLoader, Dataset


class WindowDataset(Dataset):
    def __init__(self, series, window=96, horizon=24):
        self.series = torch.as_tensor(series, dtype=torch.float32)
        self.window = window
        self.horizon = horizon

    def __len__(self):
        return len(self.series) - self.window - self.horizon + 1

    def __getitem__(self, i):
        x = self.series[i: i + self.window]
        y = self.series[i + self.window: i + self.window + self.horizon, 0]
        return x, y


class LSTMForecaster(nn.Module):
    def __init__(self, n_features, hidden=128, num_layers=2, horizon=24, dropout=0.2):
        super().__init__()
        self.hidden = hidden
        self.num_layers = num_layers
        self.lstm = nn.LSTM(n_features, hidden, num_layers, batch_first=True, dropout=dropout)
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, horizon))

    def forward(self, x):
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden)  # expect: DEV013
        c0 = torch.zeros(self.num_layers, x.size(0), self.hidden)  # expect: DEV013
        out, _ = self.lstm(x, (h0, c0))
        return self.head(out[:, -1])


class EarlyStopping:
    def __init__(self, patience=7, min_delta=1e-4):
        self.patience = patience
        self.min_delta = min_delta
        self.best = np.inf
        self.counter = 0

    def step(self, value):
        if value < self.best - self.min_delta:
            self.best = value
            self.counter = 0
            return False
        self.counter += 1
        return self.counter >= self.patience


class Trainer:
    def __init__(self, model, lr=1e-3, ckpt="lstm_best.pt"):
        self.model = model.cuda()  # expect: DEV003
        self.criterion = nn.MSELoss()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(self.optimizer, factor=0.5, patience=3)
        self.stopper = EarlyStopping()
        self.ckpt = ckpt

    def train_epoch(self, loader):
        self.model.train()
        losses = []
        for x, y in loader:
            x, y = x.cuda(), y.cuda()  # expect: DEV003
            loss = self.criterion(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer.step()
            losses.append(loss.item())
        return float(np.mean(losses))

    @torch.no_grad()
    def validate(self, loader):
        self.model.eval()
        preds, trues = [], []
        for x, y in loader:
            preds.append(self.model(x.cuda()).cpu().numpy())  # expect: DEV003
            trues.append(y.numpy())
        preds, trues = np.concatenate(preds), np.concatenate(trues)
        return float(np.mean((preds - trues) ** 2)), preds

    def fit(self, train_loader, val_loader, epochs=100):
        for epoch in range(epochs):
            train_mse = self.train_epoch(train_loader)
            val_mse, _ = self.validate(val_loader)
            self.scheduler.step(val_mse)
            print(f"epoch {epoch:3d} train {train_mse:.5f} val {val_mse:.5f}")
            if val_mse <= self.stopper.best:
                torch.save(self.model.state_dict(), self.ckpt)
            if self.stopper.step(val_mse):
                print(f"early stop at epoch {epoch}")
                break
        self.model.load_state_dict(torch.load(self.ckpt))  # expect: DEV007


if __name__ == "__main__":
    df = pd.read_csv("load.csv", parse_dates=["timestamp"]).set_index("timestamp")
    scaler = StandardScaler()
    values = scaler.fit_transform(df[["load", "temperature", "humidity"]].to_numpy())
    cut = int(len(values) * 0.8)
    train_loader = DataLoader(WindowDataset(values[:cut]), batch_size=64, shuffle=True)
    val_loader = DataLoader(WindowDataset(values[cut:]), batch_size=256)
    trainer = Trainer(LSTMForecaster(n_features=3))
    trainer.fit(train_loader, val_loader)
    _, preds = trainer.validate(val_loader)
    load_mean, load_std = scaler.mean_[0], scaler.scale_[0]
    np.save("forecast.npy", preds * load_std + load_mean)
