"""Minimal DDPM on CIFAR-10 (research code)."""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.cuda.amp import GradScaler, autocast
from torchvision.utils import save_image


class TimeEmbedding(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, t):
        half = self.dim // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, device=t.device) / half)
        args = t.float()[:, None] * freqs[None]
        return torch.cat([args.sin(), args.cos()], dim=-1)


class TinyUNet(nn.Module):
    def __init__(self, ch=64, tdim=128):
        super().__init__()
        self.temb = nn.Sequential(TimeEmbedding(tdim), nn.Linear(tdim, ch), nn.SiLU())
        self.inc = nn.Conv2d(3, ch, 3, padding=1)
        self.down = nn.Conv2d(ch, ch * 2, 4, 2, 1)
        self.mid = nn.Conv2d(ch * 2, ch * 2, 3, padding=1)
        self.up = nn.ConvTranspose2d(ch * 2, ch, 4, 2, 1)
        self.out = nn.Conv2d(ch * 2, 3, 3, padding=1)

    def forward(self, x, t):
        h = self.inc(x) + self.temb(t)[:, :, None, None]
        d = F.silu(self.down(h))
        d = F.silu(self.mid(d))
        u = F.silu(self.up(d))
        return self.out(torch.cat([u, h], dim=1))


class GaussianDiffusion(nn.Module):
    def __init__(self, model, timesteps=1000, beta_start=1e-4, beta_end=0.02):
        super().__init__()
        self.model = model
        self.timesteps = timesteps
        betas = np.linspace(beta_start, beta_end, timesteps, dtype=np.float64)
        alphas = 1.0 - betas
        self.register_buffer("betas", torch.tensor(betas, dtype=torch.float32))
        self.register_buffer("sqrt_recip_alphas", torch.tensor(np.sqrt(1.0 / alphas), dtype=torch.float32))
        self.alpha_bar = torch.tensor(np.cumprod(alphas), dtype=torch.float32)  # expect: DEV014

    def forward(self, x0):
        b = x0.shape[0]
        t = torch.randint(0, self.timesteps, (b,), device=x0.device)
        noise = torch.randn(x0.shape)  # expect: DEV013
        a_bar = self.alpha_bar[t].view(b, 1, 1, 1)
        x_t = a_bar.sqrt() * x0 + (1 - a_bar).sqrt() * noise
        return F.mse_loss(self.model(x_t, t), noise)

    @torch.no_grad()
    def sample(self, n, device):
        x = torch.randn(n, 3, 32, 32, device=device)
        for i in reversed(range(self.timesteps)):
            t = torch.full((n,), i, device=device, dtype=torch.long)
            eps = self.model(x, t)
            beta = self.betas[i]
            x = self.sqrt_recip_alphas[i] * (x - beta / (1 - self.alpha_bar[i]).sqrt() * eps)
            if i > 0:
                x = x + beta.sqrt() * torch.randn_like(x)
        return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--bs", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--amp", action="store_true")
    args = ap.parse_args()

    if torch.cuda.is_available():
        device = torch.device("cuda")
    elif torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")

    tf = torchvision.transforms.Compose([
        torchvision.transforms.RandomHorizontalFlip(),
        torchvision.transforms.ToTensor(),
        torchvision.transforms.Normalize((0.5,) * 3, (0.5,) * 3),
    ])
    ds = torchvision.datasets.CIFAR10("data", train=True, download=True, transform=tf)
    loader = torch.utils.data.DataLoader(ds, batch_size=args.bs, shuffle=True, drop_last=True, num_workers=4)

    diffusion = GaussianDiffusion(TinyUNet()).to(device)
    opt = torch.optim.Adam(diffusion.parameters(), lr=args.lr)
    scaler = GradScaler(enabled=args.amp)  # expect: DEV009

    for epoch in range(args.epochs):
        for x, _ in loader:
            x = x.to(device)
            with autocast(enabled=args.amp):  # expect: DEV009
                loss = diffusion(x)
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        print(f"epoch {epoch} loss {loss.item():.4f}")
        torch.save(diffusion.state_dict(), "ddpm.pt")

    samples = diffusion.sample(64, device)
    samples = (samples.clamp(-1, 1) + 1) / 2
    save_image(samples, "ddpm_samples.png", nrow=8)
    np.save("ddpm_samples.npy", samples.cpu().numpy())


if __name__ == "__main__":
    main()
