"""Tiny DDPM on 2-D toy data (swiss roll / moons / 8 gaussians).

    python b14_ddpm_toy2d.py --dataset swissroll --steps 20000
"""
import argparse
import math

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import make_moons, make_swiss_roll
from torch.utils.data import DataLoader, TensorDataset


def get_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def toy_data(name, n=50000):
    if name == "swissroll":
        x = make_swiss_roll(n, noise=0.5)[0][:, [0, 2]] / 7.5
    elif name == "moons":
        x = make_moons(n, noise=0.05)[0] * 2 - np.array([1.0, 0.5])
    else:
        centers = np.array([(math.cos(a), math.sin(a)) for a in np.linspace(0, 2 * math.pi, 9)[:-1]])
        x = centers[np.random.randint(0, 8, n)] * 2 + 0.1 * np.random.randn(n, 2)
    return torch.from_numpy(x.astype(np.float32))


class SinusoidalEmbedding(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.half = dim // 2
        self.freqs = torch.arange(self.half, dtype=torch.float32)  # expect: DEV014

    def forward(self, t):
        args = t.float()[:, None] * torch.exp(-math.log(10000.0) * self.freqs / self.half)[None, :]
        return torch.cat([args.sin(), args.cos()], dim=-1)


class Denoiser(nn.Module):
    def __init__(self, hidden=256, temb=64):
        super().__init__()
        self.temb = SinusoidalEmbedding(temb)
        self.net = nn.Sequential(
            nn.Linear(2 + temb, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(),
            nn.Linear(hidden, 2),
        )

    def forward(self, x, t):
        return self.net(torch.cat([x, self.temb(t)], dim=-1))


class Diffusion(nn.Module):
    def __init__(self, model, T=1000, beta_start=1e-4, beta_end=0.02):
        super().__init__()
        self.model = model
        self.T = T
        betas = torch.linspace(beta_start, beta_end, T)
        alphas = 1.0 - betas
        alphas_cumprod = torch.cumprod(alphas, dim=0)
        self.register_buffer("betas", betas)
        self.register_buffer("alphas", alphas)
        self.register_buffer("alphas_cumprod", alphas_cumprod)

    def forward(self, x0):
        """Training loss: predict the noise added at a random step."""
        t = torch.randint(0, self.T, (x0.size(0),), device=x0.device)
        noise = torch.randn(x0.shape)  # expect: DEV013
        ab = self.alphas_cumprod[t][:, None]
        x_t = ab.sqrt() * x0 + (1 - ab).sqrt() * noise
        return F.mse_loss(self.model(x_t, t), noise)

    @torch.no_grad()
    def p_step(self, x, t):
        tt = torch.full((x.size(0),), t, device=x.device, dtype=torch.long)
        eps = self.model(x, tt)
        a, ab, b = self.alphas[t], self.alphas_cumprod[t], self.betas[t]
        mean = (x - b / (1 - ab).sqrt() * eps) / a.sqrt()
        if t == 0:
            return mean
        return mean + b.sqrt() * torch.randn_like(x)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dataset", default="swissroll", choices=["swissroll", "moons", "8gauss"])
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--n-samples", type=int, default=2000)
    args = p.parse_args()

    device = get_device()
    data = toy_data(args.dataset)
    loader = DataLoader(TensorDataset(data), batch_size=args.batch_size, shuffle=True, drop_last=True)
    diffusion = Diffusion(Denoiser()).to(device)
    opt = torch.optim.Adam(diffusion.parameters(), lr=args.lr)
    ema_loss, step = None, 0
    while step < args.steps:
        for (x0,) in loader:
            loss = diffusion(x0.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            ema_loss = loss.item() if ema_loss is None else 0.99 * ema_loss + 0.01 * loss.item()
            step += 1
            if step % 1000 == 0:
                print(f"step {step} loss {ema_loss:.4f}")
            if step >= args.steps:
                break

    diffusion.eval()
    x = torch.randn(args.n_samples, 2, device=device)
    traj = []
    for t in reversed(range(diffusion.T)):
        x = diffusion.p_step(x, t)
        if t % 250 == 0:
            traj.append(x.detach().cpu().numpy())
    x.cpu()  # expect: DEV008
    pts = x.numpy()  # expect: DEV001

    ref = data[torch.randperm(len(data))[: args.n_samples]].numpy()
    fig, axes = plt.subplots(1, len(traj) + 1, figsize=(4 * (len(traj) + 1), 4))
    for ax, snap in zip(axes, traj):
        ax.scatter(snap[:, 0], snap[:, 1], s=2)
    axes[-1].scatter(ref[:, 0], ref[:, 1], s=2, alpha=0.3, label="data")
    axes[-1].scatter(pts[:, 0], pts[:, 1], s=2, alpha=0.5, label="samples")
    axes[-1].legend()
    plt.tight_layout()
    plt.savefig(f"ddpm_{args.dataset}.png")


if __name__ == "__main__":
    main()
