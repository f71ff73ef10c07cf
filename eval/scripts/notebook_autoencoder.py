#!/usr/bin/env python
# coding: utf-8

# # 自编码器 (AutoEncoder) 压缩 MNIST 到二维
# Mac M1 / 服务器 GPU / CPU 都能跑。

# In[1]:


import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torchvision
from torch.utils.data import DataLoader


# In[2]:


if torch.cuda.is_available():
    device = torch.device("cuda")
elif torch.backends.mps.is_available():
    device = torch.device("mps")
else:
    device = torch.device("cpu")
print(device)

EPOCH = 10
BATCH_SIZE = 64
LR = 0.005
N_TEST_IMG = 5


# In[3]:


train_data = torchvision.datasets.MNIST(root="./mnist/", train=True,
                                        transform=torchvision.transforms.ToTensor(), download=True)
train_loader = DataLoader(train_data, batch_size=BATCH_SIZE, shuffle=True,
                          pin_memory=device.type == "cuda")
plt.imshow(train_data.data[2].numpy(), cmap="gray")
plt.title("%i" % train_data.targets[2])


# In[4]:


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(28 * 28, 128), nn.Tanh(),
            nn.Linear(128, 64), nn.Tanh(),
            nn.Linear(64, 12), nn.Tanh(),
            nn.Linear(12, 2),
        )
        self.decoder = nn.Sequential(
            nn.Linear(2, 12), nn.Tanh(),
            nn.Linear(12, 64), nn.Tanh(),
            nn.Linear(64, 128), nn.Tanh(),
            nn.Linear(128, 28 * 28), nn.Sigmoid(),
        )

    def forward(self, x):
        encoded = self.encoder(x)
        decoded = self.decoder(encoded)
        return encoded, decoded


autoencoder = AutoEncoder().to(device)
optimizer = torch.optim.Adam(autoencoder.parameters(), lr=LR)
loss_func = nn.MSELoss()


# In[5]:


view_data = train_data.data[:N_TEST_IMG].view(-1, 28 * 28).float() / 255.0

for epoch in range(EPOCH):
    for step, (x, b_label) in enumerate(train_loader):
        b_x = x.view(-1, 28 * 28).to(device)
        b_y = x.view(-1, 28 * 28).to(device)
        encoded, decoded = autoencoder(b_x)
        loss = loss_func(decoded, b_y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print("Epoch:", epoch, "| train loss: %.4f" % loss.item())


# In[6]:


# 原图 vs 重建图
with torch.no_grad():
    _, decoded_data = autoencoder(view_data.to(device))
decoded_data = decoded_data.cpu()
f, a = plt.subplots(2, N_TEST_IMG, figsize=(5, 2))
for i in range(N_TEST_IMG):
    a[0][i].imshow(np.reshape(view_data.numpy()[i], (28, 28)), cmap="gray")
    a[1][i].imshow(np.reshape(decoded_data.numpy()[i], (28, 28)), cmap="gray")
plt.show()


# In[7]:


# 二维编码可视化
x = train_data.data[:500].view(-1, 28 * 28).float() / 255.0
x = x.to(device)
with torch.no_grad():
    encoded_data, _ = autoencoder(x)
x = x.cpu()
codes = encoded_data.detach().cpu().numpy()
labels = train_data.targets[:500].numpy()
plt.scatter(codes[:, 0], codes[:, 1], c=labels, cmap="tab10", s=8)
plt.colorbar()
plt.show()
print(x.numpy().shape)


# In[8]:


torch.save(autoencoder.state_dict(), "autoencoder.pt")
state = torch.load("autoencoder.pt", map_location=device)
autoencoder.load_state_dict(state)
