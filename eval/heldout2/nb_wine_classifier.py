#!/usr/bin/env python
# coding: utf-8

# # Wine classification with a small MLP
# Runs on CUDA, Apple MPS or the CPU.

# In[ ]:


import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_wine
from sklearn.metrics import ConfusionMatrixDisplay, confusion_matrix
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from torch.utils.data import DataLoader, TensorDataset


# In[ ]:


device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
print(device)
if str(device).startswith("cuda"):
    print(torch.cuda.get_device_name(device), torch.cuda.current_device())


# In[ ]:


X, y = load_wine(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
scaler = StandardScaler().fit(X_train)
X_train = torch.tensor(scaler.transform(X_train), dtype=torch.float32)
X_test = torch.tensor(scaler.transform(X_test), dtype=torch.float32)
y_train = torch.tensor(y_train)
y_test = torch.tensor(y_test)
train_loader = DataLoader(TensorDataset(X_train, y_train), batch_size=16, shuffle=True,
                          pin_memory=torch.cuda.is_available())
test_loader = DataLoader(TensorDataset(X_test, y_test), batch_size=64)


# In[ ]:


class MLP(nn.Module):
    def __init__(self, d_in, n_classes, hidden=32):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, n_classes)
        self.register_buffer("temperature", torch.ones(1))

    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = F.dropout(h, 0.2, self.training)
        return self.fc2(h) / self.temperature


model = MLP(X_train.shape[1], 3).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)


# In[ ]:


losses = []
for epoch in range(60):
    model.train()
    epoch_loss = 0.0
    for xb, yb in train_loader:
        xb, yb = xb.to(device), yb.to(device)
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        epoch_loss += loss.item() * len(xb)
    losses.append(epoch_loss / len(train_loader.dataset))
plt.plot(losses)
plt.title("training loss")


# In[ ]:


model.eval()
y_true, y_pred, y_prob = [], [], []
with torch.no_grad():
    for xb, yb in test_loader:
        logits = model(xb.to(device))
        y_prob.append(logits.softmax(-1).cpu())
        y_pred.extend(logits.argmax(-1).tolist())
        y_true.extend(yb.tolist())
y_true = np.array(y_true)
y_pred = np.array(y_pred)
probs = torch.cat(y_prob).numpy()
print("accuracy:", (y_true == y_pred).mean())
print("mean max prob:", probs.max(1).mean())


# In[ ]:


cm = confusion_matrix(y_true, y_pred)
ConfusionMatrixDisplay(cm, display_labels=load_wine().target_names).plot(cmap="Blues")


# In[ ]:


# Decision regions in the plane of the first two principal directions of the test set
U, S, V = torch.pca_lowrank(X_test, q=2)
proj = X_test @ V[:, :2]
xx, yy = np.meshgrid(np.linspace(proj[:, 0].min(), proj[:, 0].max(), 200),
                     np.linspace(proj[:, 1].min(), proj[:, 1].max(), 200))
grid = torch.tensor(np.c_[xx.ravel(), yy.ravel()], dtype=torch.float32) @ V[:, :2].T
with torch.no_grad():
    Z = model(grid.to(device)).argmax(1).cpu().numpy().reshape(xx.shape)
plt.contourf(xx, yy, Z, alpha=0.3)
plt.scatter(proj[:, 0].numpy(), proj[:, 1].numpy(), c=y_test.numpy(), s=12)
