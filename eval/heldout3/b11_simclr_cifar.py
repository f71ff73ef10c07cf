"""SimCLR pre-training on CIFAR-10 followed by a linear probe (logistic regression on the
frozen features)."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
import torchvision.transforms as T
from sklearn.linear_model import LogisticRegression
from torch.cuda.amp import GradScaler, autocast
from torch.utils.data import DataLoader


class TwoCrops:
    def __init__(self, transform):
        self.transform = transform

    def __call__(self, x):
        return self.transform(x), self.transform(x)


class SimCLR(nn.Module):
    def __init__(self, proj_dim=128):
        super().__init__()
        backbone = torchvision.models.resnet18(num_classes=10)
        backbone.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        backbone.maxpool = nn.Identity()
        feat_dim = backbone.fc.in_features
        backbone.fc = nn.Identity()
        self.backbone = backbone
        self.projector = nn.Sequential(
            nn.Linear(feat_dim, 512), nn.ReLU(inplace=True), nn.Linear(512, proj_dim))

    def forward(self, x):
        return self.projector(self.backbone(x))


class NTXent(nn.Module):
    def __init__(self, temperature=0.5):
        super().__init__()
        self.register_buffer("temperature", torch.tensor(temperature))

    def forward(self, z1, z2):
        n = z1.size(0)
        z = F.normalize(torch.cat([z1, z2], dim=0), dim=1)
        sim = z @ z.t() / self.temperature
        self_mask = torch.eye(2 * n, dtype=torch.bool, device=z.device)
        sim = sim.masked_fill(self_mask, float("-inf"))
        # the positive of sample i is i + n (and vice versa)
        targets = (torch.arange(2 * n) + n) % (2 * n)  # expect: DEV013
        return F.cross_entropy(sim, targets)


@torch.no_grad()
def extract(model, loader, device):
    model.eval()
    feats, labels = [], []
    for x, y in loader:
        h = model.backbone(x.to(device, non_blocking=True))
        feats.append(h.cpu())
        labels.append(y)
    return torch.cat(feats).numpy(), torch.cat(labels).numpy()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="./data")
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--temperature", type=float, default=0.5)
    p.add_argument("--out", default="simclr_r18.pt")
    args = p.parse_args()

    device = (torch.accelerator.current_accelerator()
              if torch.accelerator.is_available() else torch.device("cpu"))
    use_amp = device.type == "cuda"

    augment = T.Compose([
        T.RandomResizedCrop(32, scale=(0.2, 1.0)),
        T.RandomHorizontalFlip(),
        T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8),
        T.RandomGrayscale(p=0.2),
        T.ToTensor(),
        T.Normalize((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
    ])
    plain = T.Compose([T.ToTensor(), T.Normalize((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616))])
    pretrain_set = torchvision.datasets.CIFAR10(args.data, train=True, download=True,
                                                transform=TwoCrops(augment))
    loader = DataLoader(pretrain_set, batch_size=args.batch_size, shuffle=True, drop_last=True,
                        num_workers=8, pin_memory=device.type == "cuda", persistent_workers=True)

    model = SimCLR().to(device)
    criterion = NTXent(args.temperature).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    scaler = GradScaler(enabled=use_amp)  # expect: DEV009

    for epoch in range(args.epochs):
        model.train()
        running = 0.0
        for (x1, x2), _ in loader:
            x1 = x1.to(device, non_blocking=True)
            x2 = x2.to(device, non_blocking=True)
            with autocast(enabled=use_amp):  # expect: DEV009
                loss = criterion(model(x1), model(x2))
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            running += loss.item()
        scheduler.step()
        print(f"epoch {epoch}: nt-xent {running / len(loader):.4f} lr {scheduler.get_last_lr()[0]:.2e}")
        if (epoch + 1) % 10 == 0:
            torch.save(model.state_dict(), args.out)

    # linear probe
    train_set = torchvision.datasets.CIFAR10(args.data, train=True, transform=plain)
    test_set = torchvision.datasets.CIFAR10(args.data, train=False, transform=plain)
    tr_x, tr_y = extract(model, DataLoader(train_set, batch_size=512, num_workers=8), device)
    te_x, te_y = extract(model, DataLoader(test_set, batch_size=512, num_workers=8), device)
    clf = LogisticRegression(max_iter=2000)
    clf.fit(tr_x, tr_y)
    print(f"linear probe accuracy: {clf.score(te_x, te_y):.4f}")
    np.savez(os.path.splitext(args.out)[0] + "_feats.npz", x=te_x, y=te_y)


if __name__ == "__main__":
    main()
