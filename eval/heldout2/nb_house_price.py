#!/usr/bin/env python
# coding: utf-8

# # House prices: a tiny MLP on five features

# In[1]:


import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
import torch.nn as nn


# In[2]:


df = pd.read_csv("train.csv")
features = ["OverallQual", "GrLivArea", "GarageCars", "TotalBsmtSF", "YearBuilt"]
df = df[features + ["SalePrice"]].dropna()
X = df[features].values.astype(np.float32)
y = np.log1p(df["SalePrice"].values.astype(np.float32)).reshape(-1, 1)
X = (X - X.mean(0)) / X.std(0)
df.describe()


# In[3]:


n_train = int(0.8 * len(X))
X_train, X_val = X[:n_train], X[n_train:]
y_train, y_val = y[:n_train], y[n_train:]

device = torch.device("cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu")
X_train_t = torch.tensor(X_train)
y_train_t = torch.tensor(y_train).to(device)
X_val_t = torch.tensor(X_val).to(device)
X_train_t.to(device)  # expect: DEV008


# In[4]:


model = nn.Sequential(nn.Linear(5, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
model.to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.MSELoss()


# In[5]:


history = []
for epoch in range(500):
    model.train()
    pred = model(X_train_t)  # expect: DEV006
    loss = loss_fn(pred, y_train_t)
    opt.zero_grad()
    loss.backward()
    opt.step()
    history.append(loss.item())
plt.plot(history)
plt.yscale("log")


# In[6]:


model.eval()
with torch.no_grad():
    val_pred = model(X_val_t)
rmse = torch.sqrt(((val_pred.cpu() - torch.tensor(y_val)) ** 2).mean()).item()
print("val RMSE (log):", rmse)


# In[7]:


plt.figure(figsize=(5, 5))
plt.scatter(y_val, val_pred.numpy(), s=4)  # expect: DEV001
plt.plot([y_val.min(), y_val.max()], [y_val.min(), y_val.max()], "k--")
plt.xlabel("true log price")
plt.ylabel("predicted log price")


# In[8]:


residuals = y_val - val_pred.cpu().numpy()
plt.hist(residuals.ravel(), bins=50)
print("mean abs residual:", np.abs(residuals).mean())
