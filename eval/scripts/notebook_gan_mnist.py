#!/usr/bin/env python
# coding: utf-8

# # A vanilla GAN on MNIST
#
# Fully-connected generator and discriminator, BCE loss, Adam(0.0002, betas=(0.5, 0.999)).

# In[1]:


import os

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
from torchvision.utils import make_grid, save_image
from tqdm.notebook import tqdm


# In[2]:


latent_dim = 100
batch_size = 128
n_epochs = 50
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # expect: DEV004
os.makedirs("gan_images", exist_ok=True)


# In[3]:


transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5], [0.5])])
mnist = datasets.MNIST("data", train=True, download=True, transform=transform)
dataloader = DataLoader(mnist, batch_size=batch_size, shuffle=True, num_workers=4, pin_memory=True)  # expect: DEV005


# In[4]:


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(
            nn.Linear(latent_dim, 256), nn.LeakyReLU(0.2),
            nn.Linear(256, 512), nn.BatchNorm1d(512), nn.LeakyReLU(0.2),
            nn.Linear(512, 1024), nn.BatchNorm1d(1024), nn.LeakyReLU(0.2),
            nn.Linear(1024, 28 * 28), nn.Tanh(),
        )

    def forward(self, z):
        return self.model(z).view(-1, 1, 28, 28)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(
            nn.Flatten(),
            nn.Linear(28 * 28, 512), nn.LeakyReLU(0.2),
            nn.Linear(512, 256), nn.LeakyReLU(0.2),
            nn.Linear(256, 1), nn.Sigmoid(),
        )

    def forward(self, img):
        return self.model(img)


generator = Generator().to(device)
discriminator = Discriminator().to(device)
adversarial_loss = nn.BCELoss()


# In[5]:


optimizer_G = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
g_losses, d_losses = [], []

for epoch in range(n_epochs):
    for i, (imgs, _) in enumerate(tqdm(dataloader, leave=False)):
        real_imgs = imgs.to(device)
        b = imgs.size(0)
        valid = torch.ones(b, 1, device=device)
        fake = torch.zeros(b, 1, device=device)

        # ---- generator ----
        optimizer_G.zero_grad()
        z = torch.randn(b, latent_dim, device=device)
        gen_imgs = generator(z)
        g_loss = adversarial_loss(discriminator(gen_imgs), valid)
        g_loss.backward()
        optimizer_G.step()

        # ---- discriminator ----
        optimizer_D.zero_grad()
        real_loss = adversarial_loss(discriminator(real_imgs), valid)
        fake_loss = adversarial_loss(discriminator(gen_imgs.detach()), fake)
        d_loss = (real_loss + fake_loss) / 2
        d_loss.backward()
        optimizer_D.step()

    g_losses.append(g_loss.item())
    d_losses.append(d_loss.item())
    save_image(gen_imgs.data[:25], f"gan_images/{epoch}.png", nrow=5, normalize=True)
    print(f"[epoch {epoch}] D loss {d_loss.item():.4f}  G loss {g_loss.item():.4f}")


# In[6]:


plt.figure(figsize=(10, 4))
plt.plot(g_losses, label="G")
plt.plot(d_losses, label="D")
plt.legend()


# In[7]:


# sample some digits from the trained generator
generator.eval()
z = torch.randn(64, latent_dim)
with torch.no_grad():
    samples = generator(z)  # expect: DEV006
grid = make_grid(samples.cpu(), nrow=8, normalize=True)
plt.figure(figsize=(8, 8))
plt.imshow(np.transpose(grid.numpy(), (1, 2, 0)))
plt.axis("off")


# In[8]:


torch.save(generator.state_dict(), "generator.pth")
