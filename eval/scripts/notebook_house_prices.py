#!/usr/bin/env python
# coding: utf-8

# # House prices: an MLP baseline
# Kaggle "House Prices - Advanced Regression Techniques", numeric features only.

# In[1]:


import numpy as np
import pandas as pd
import torch
import torch.nn as nn
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from torch.utils.data import DataLoader, TensorDataset


# In[2]:


df = pd.read_csv("input/train.csv")
df_test = pd.read_csv("input/test.csv")
num_cols = [c for c in df.select_dtypes(include=[np.number]).columns if c not in ("Id", "SalePrice")]
X = df[num_cols].fillna(df[num_cols].median()).values
y = np.log1p(df["SalePrice"].values).reshape(-1, 1)
X_sub = df_test[num_cols].fillna(df[num_cols].median()).values
df.shape, len(num_cols)


# In[3]:


X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=42)
scaler = StandardScaler().fit(X_train)
X_train, X_test, X_sub = scaler.transform(X_train), scaler.transform(X_test), scaler.transform(X_sub)


# In[4]:


device = 'cuda' if torch.cuda.is_available() else 'cpu'  # expect: DEV004
device


# In[5]:


# the whole data set fits on the GPU, so move it once
X_train_t = torch.tensor(X_train, dtype=torch.float32).to(device)
y_train_t = torch.tensor(y_train, dtype=torch.float32).to(device)
X_test_t = torch.tensor(X_test, dtype=torch.float32).to(device)
train_loader = DataLoader(TensorDataset(X_train_t, y_train_t), batch_size=64, shuffle=True)


# In[6]:


model = nn.Sequential(
    nn.Linear(X_train.shape[1], 128), nn.ReLU(), nn.Dropout(0.1),
    nn.Linear(128, 64), nn.ReLU(),
    nn.Linear(64, 1),
).to(device)
loss_fn = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)


# In[7]:


best = float("inf")
for epoch in range(200):
    model.train()
    for xb, yb in train_loader:
        pred = model(xb)
        loss = loss_fn(pred, yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        val_loss = loss_fn(model(X_test_t), torch.tensor(y_test, dtype=torch.float32, device=device)).item()
    if val_loss < best:
        best = val_loss
        torch.save(model.state_dict(), "best_model.pt")
    if epoch % 20 == 0:
        print(epoch, round(loss.item(), 4), round(val_loss, 4))


# In[8]:


preds = model(X_test_t)
rmse = np.sqrt(mean_squared_error(y_test, np.asarray(preds.detach())))  # expect: DEV001
print("RMSE (log):", rmse)


# In[9]:


model.load_state_dict(torch.load("best_model.pt"))  # expect: DEV007
model.eval()


# In[10]:


with torch.no_grad():
    preds = model(torch.tensor(X_sub, dtype=torch.float32).to(device)).cpu().numpy().ravel()
submission = pd.DataFrame({"Id": df_test["Id"], "SalePrice": np.expm1(preds)})
submission.to_csv("submission.csv", index=False)
submission.head()
