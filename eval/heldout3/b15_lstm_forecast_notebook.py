#!/usr/bin/env python
# coding: utf-8

# # 用 LSTM 预测每日用电量
# 
# 数据：household_power_consumption 按天汇总后的 csv（date, global_active_power）

# In[1]:


import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
import torch.nn as nn
from sklearn.preprocessing import MinMaxScaler
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # expect: DEV004
print("device:", device)
torch.manual_seed(42)


# In[2]:


df = pd.read_csv("daily_power.csv", parse_dates=["date"], index_col="date")
series = df["global_active_power"].astype("float32").values.reshape(-1, 1)
print(df.shape)
df.plot(figsize=(12, 3))

split = int(len(series) * 0.8)
scaler = MinMaxScaler()
train_scaled = scaler.fit_transform(series[:split])
test_scaled = scaler.transform(series[split:])


# In[3]:


WINDOW = 30


def make_windows(arr, window=WINDOW):
    xs, ys = [], []
    for i in range(len(arr) - window):
        xs.append(arr[i:i + window])
        ys.append(arr[i + window])
    return np.array(xs), np.array(ys)


X_train, y_train = make_windows(train_scaled)
X_test, y_test = make_windows(test_scaled)
X_train_t = torch.from_numpy(X_train).float()
y_train_t = torch.from_numpy(y_train).float()
X_test_t = torch.from_numpy(X_test).float()
y_test_t = torch.from_numpy(y_test).float()
print(X_train_t.shape, y_train_t.shape, X_test_t.shape)

train_loader = DataLoader(TensorDataset(X_train_t, y_train_t), batch_size=64, shuffle=True,
                          pin_memory=True)  # expect: DEV005
val_loader = DataLoader(TensorDataset(X_test_t, y_test_t), batch_size=256)


# In[4]:


class LSTMForecaster(nn.Module):
    def __init__(self, input_size=1, hidden_size=64, num_layers=2, dropout=0.2):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, dropout=dropout)
        self.head = nn.Linear(hidden_size, 1)

    def forward(self, x):
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size, device=x.device)
        c0 = torch.zeros_like(h0)
        out, _ = self.lstm(x, (h0, c0))
        return self.head(out[:, -1, :])


model = LSTMForecaster().to(device)
criterion = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
print(sum(p.numel() for p in model.parameters()), "parameters")


# In[5]:


train_hist, val_hist = [], []
for epoch in range(50):
    model.train()
    running = 0.0
    for xb, yb in train_loader:
        xb, yb = xb.to(device), yb.to(device)
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        running += loss.item() * xb.size(0)
    train_hist.append(running / len(train_loader.dataset))

    model.eval()
    val_loss = 0.0
    with torch.no_grad():
        for xb, yb in val_loader:
            xb = xb.to(device)
            pred = model(xb)
            val_loss += criterion(pred, yb).item() * xb.size(0)  # expect: DEV002
    val_hist.append(val_loss / len(val_loader.dataset))
    if epoch % 10 == 0:
        print(f"epoch {epoch:2d}  train {train_hist[-1]:.5f}  val {val_hist[-1]:.5f}")


# In[6]:


plt.figure(figsize=(8, 3))
plt.plot(train_hist, label="train")
plt.plot(val_hist, label="val")
plt.yscale("log")
plt.legend()


# In[7]:


model.eval()
with torch.no_grad():
    preds = model(X_test_t.to(device)).detach().cpu().numpy()
preds_inv = scaler.inverse_transform(preds)
truth_inv = scaler.inverse_transform(y_test_t.numpy())
mae = np.abs(preds_inv - truth_inv).mean()
print(f"test MAE: {mae:.3f} kW")

dates = df.index[split + WINDOW:]
plt.figure(figsize=(12, 4))
plt.plot(dates, truth_inv[:, 0], label="actual")
plt.plot(dates, preds_inv[:, 0], label="predicted")
plt.legend()
plt.title("LSTM forecast, test period")


# In[8]:


torch.save(model.state_dict(), "lstm_power.pt")
torch.cuda.empty_cache()
