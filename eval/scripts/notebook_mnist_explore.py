#!/usr/bin/env python
# coding: utf-8

# # MNIST: train a small CNN and look at what it gets wrong

# In[1]:


import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.metrics import ConfusionMatrixDisplay, confusion_matrix
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

get_ipython().run_line_magic('matplotlib', 'inline')


# In[2]:


device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
device


# In[3]:


tfm = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
train_data = datasets.MNIST("data", train=True, download=True, transform=tfm)
test_data = datasets.MNIST("data", train=False, download=True, transform=tfm)
train_loader = DataLoader(train_data, batch_size=128, shuffle=True, pin_memory=torch.cuda.is_available())
test_loader = DataLoader(test_data, batch_size=512)
len(train_data), len(test_data)


# In[4]:


img, label = train_data[0]
plt.imshow(img.squeeze(), cmap="gray")
plt.title(f"label: {label}")


# In[5]:


model = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
)
model = model.to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)


# In[6]:


losses = []
for epoch in range(3):
    for x, y in train_loader:
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print(epoch, np.mean(losses[-100:]))


# In[7]:


plt.plot(np.array(losses))
plt.yscale("log")


# In[8]:


model.eval()
all_preds, all_labels = [], []
with torch.no_grad():
    for x, y in test_loader:
        preds = model(x.to(device)).argmax(1)
        all_preds.append(preds.cpu())
        all_labels.append(y)
y_pred = torch.cat(all_preds).numpy()
y_true = torch.cat(all_labels).numpy()
print("accuracy:", (y_pred == y_true).mean())


# In[9]:


cm = confusion_matrix(y_true, y_pred)
ConfusionMatrixDisplay(cm).plot()


# In[10]:


# one test image and the predicted distribution
img, label = test_data[7]
with torch.no_grad():
    logits = model(img.unsqueeze(0).to(device))
probs = logits.softmax(1).squeeze().cpu().numpy()
fig, (a, b) = plt.subplots(1, 2, figsize=(8, 3))
a.imshow(img.squeeze().numpy(), cmap="gray")
b.bar(range(10), probs)


# In[11]:


wrong = np.where(y_pred != y_true)[0][:16]
fig, axes = plt.subplots(2, 8, figsize=(14, 4))
for ax, idx in zip(axes.flat, wrong):
    img, label = test_data[int(idx)]
    ax.imshow(img.squeeze(), cmap="gray")
    ax.set_title(f"{y_pred[idx]} (true {label})")
    ax.axis("off")


# In[12]:


torch.save(model.state_dict(), "mnist_small.pt")
model.load_state_dict(torch.load("mnist_small.pt", map_location=device))
