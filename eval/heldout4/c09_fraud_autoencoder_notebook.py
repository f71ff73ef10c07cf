#!/usr/bin/env python
# coding: utf-8

# # Credit card fraud detection with an autoencoder
#
# Train only on normal transactions and flag the ones with a high reconstruction error.

# In[1]:


import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
import torch
import torch.nn as nn
from sklearn.metrics import classification_report, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from torch.utils.data import DataLoader, TensorDataset


# In[2]:


df = pd.read_csv("/kaggle/input/creditcardfraud/creditcard.csv")
print(df.shape, df["Class"].mean())
df.head()


# In[3]:


df["Amount"] = np.log1p(df["Amount"])
features = df.drop(columns=["Time", "Class"]).values.astype(np.float32)
labels = df["Class"].values

X_train_all, X_test, y_train_all, y_test = train_test_split(
    features, labels, test_size=0.2, stratify=labels, random_state=42
)
X_train = X_train_all[y_train_all == 0]
X_train, X_val = train_test_split(X_train, test_size=0.1, random_state=42)
scaler = StandardScaler().fit(X_train)
X_train, X_val, X_test = (scaler.transform(a).astype(np.float32) for a in (X_train, X_val, X_test))


# In[4]:


device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')  # expect: DEV004
device


# In[5]:


class AutoEncoder(nn.Module):
    def __init__(self, n_in, hidden=(20, 10, 4)):
        super().__init__()
        enc, dec = [], []
        dims = [n_in, *hidden]
        for a, b in zip(dims[:-1], dims[1:]):
            enc += [nn.Linear(a, b), nn.Tanh()]
        rdims = dims[::-1]
        for a, b in zip(rdims[:-1], rdims[1:]):
            dec += [nn.Linear(a, b), nn.Tanh()]
        self.encoder = nn.Sequential(*enc)
        self.decoder = nn.Sequential(*dec[:-1])

    def forward(self, x):
        return self.decoder(self.encoder(x))


model = AutoEncoder(X_train.shape[1]).to(device)
criterion = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-5)
model


# In[6]:


train_loader = DataLoader(TensorDataset(torch.from_numpy(X_train)), batch_size=256, shuffle=True,
                          pin_memory=torch.cuda.is_available())
X_val_t = torch.from_numpy(X_val)

history = []
for epoch in range(30):
    model.train()
    total = 0.0
    for (xb,) in train_loader:
        xb = xb.to(device)
        recon = model(xb)
        loss = criterion(recon, xb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item() * len(xb)
    model.eval()
    with torch.no_grad():
        val_loss = criterion(model(X_val_t.to(device)), X_val_t).item()  # expect: DEV006
    history.append((total / len(X_train), val_loss))
    print(f"epoch {epoch:02d}  train {history[-1][0]:.5f}  val {val_loss:.5f}")


# In[7]:


plt.plot([h[0] for h in history], label="train")
plt.plot([h[1] for h in history], label="val")
plt.yscale("log")
plt.legend()
plt.show()


# In[8]:


def reconstruction_error(model, X, batch_size=4096):
    errs = []
    model.eval()
    with torch.no_grad():
        for i in range(0, len(X), batch_size):
            xb = torch.from_numpy(X[i:i + batch_size]).to(device)
            err = ((model(xb) - xb) ** 2).mean(dim=1)
            errs.append(err.cpu())
    return torch.cat(errs).numpy()


val_err = reconstruction_error(model, X_val)
threshold = np.percentile(val_err, 99)
test_err = reconstruction_error(model, X_test)
print("threshold:", threshold)
print("ROC AUC:", roc_auc_score(y_test, test_err))
print(classification_report(y_test, (test_err > threshold).astype(int), digits=4))


# In[9]:


# which features are reconstructed worst on the fraud cases?
fraud = torch.from_numpy(X_test[y_test == 1]).to(device)
with torch.no_grad():
    recon = model(fraud)
per_feature = np.abs(recon.numpy() - X_test[y_test == 1]).mean(axis=0)  # expect: DEV001
cols = df.drop(columns=["Time", "Class"]).columns
pd.Series(per_feature, index=cols).sort_values(ascending=False).head(10).plot.barh()
plt.show()


# In[10]:


torch.save(model.state_dict(), "fraud_ae.pt")
