"""Variational auto-encoder on MNIST, with a few sampling utilities
(random samples, latent interpolation, latent export for plotting).
"""
import argparse
import os

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn, optim
from torchvision import datasets, transforms
from torchvision.utils import save_image

LATENT = 20

parser = argparse.ArgumentParser(description="VAE MNIST Example")
parser.add_argument("--batch-size", type=int, default=128)
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--no-cuda", action="store_true", default=False)
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--resume", default="")
args = parser.parse_args()
args.cuda = not args.no_cuda and torch.cuda.is_available()

torch.manual_seed(args.seed)
device = torch.device("cuda" if args.cuda else "cpu")  # expect: DEV004

kwargs = {"num_workers": 1, "pin_memory": True} if args.cuda else {}
train_loader = torch.utils.data.DataLoader(
    datasets.MNIST("../data", train=True, download=True, transform=transforms.ToTensor()),
    batch_size=args.batch_size, shuffle=True, **kwargs)
test_loader = torch.utils.data.DataLoader(
    datasets.MNIST("../data", train=False, transform=transforms.ToTensor()),
    batch_size=args.batch_size, shuffle=False, **kwargs)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 400)
        self.fc21 = nn.Linear(400, LATENT)
        self.fc22 = nn.Linear(400, LATENT)
        self.fc3 = nn.Linear(LATENT, 400)
        self.fc4 = nn.Linear(400, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


model = VAE().to(device)
optimizer = optim.Adam(model.parameters(), lr=1e-3)
if args.resume:
    model.load_state_dict(torch.load(args.resume, map_location=device))


def sample_images(n=64):
    with torch.no_grad():
        z = torch.randn(n, LATENT, device=device)
        return model.decode(z).cpu()


def interpolate(x1, x2, steps=10):
    with torch.no_grad():
        mu1, _ = model.encode(x1.to(device).view(1, -1))
        mu2, _ = model.encode(x2.to(device).view(1, -1))
        alphas = torch.linspace(0, 1, steps, device=device).unsqueeze(1)
        z = (1 - alphas) * mu1 + alphas * mu2
        return model.decode(z).cpu()


def train(epoch):
    model.train()
    train_loss = 0
    for batch_idx, (data, _) in enumerate(train_loader):
        data = data.to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
    print(f"====> Epoch: {epoch} Average loss: {train_loss / len(train_loader.dataset):.4f}")


def test(epoch):
    model.eval()
    test_loss = 0
    with torch.no_grad():
        for i, (data, _) in enumerate(test_loader):
            data = data.to(device)
            recon_batch, mu, logvar = model(data)
            test_loss += loss_function(recon_batch, data, mu, logvar).item()
            if i == 0:
                n = min(data.size(0), 8)
                comparison = torch.cat([data[:n], recon_batch.view(-1, 1, 28, 28)[:n]])
                comparison.cpu()  # expect: DEV008
                save_image(comparison, f"results/reconstruction_{epoch}.png", nrow=n)
    print(f"====> Test set loss: {test_loss / len(test_loader.dataset):.4f}")


def export_latents(path="latents.npz"):
    mus, ys = [], []
    with torch.no_grad():
        for data, y in test_loader:
            mu, _ = model.encode(data.to(device).view(-1, 784))
            mus.append(mu.cpu())
            ys.append(y)
    np.savez(path, mu=torch.cat(mus).numpy(), y=torch.cat(ys).numpy())


if __name__ == "__main__":
    os.makedirs("results", exist_ok=True)
    for epoch in range(1, args.epochs + 1):
        train(epoch)
        test(epoch)
        save_image(sample_images().view(64, 1, 28, 28), f"results/sample_{epoch}.png")
    torch.save(model.state_dict(), "vae.pt")

    x_a, _ = test_loader.dataset[0]
    x_b, _ = test_loader.dataset[1]
    save_image(interpolate(x_a, x_b).view(-1, 1, 28, 28), "results/interpolation.png", nrow=10)
    export_latents()
