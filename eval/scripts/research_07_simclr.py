"""SimCLR pre-training on STL-10 unlabeled + linear probe."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from sklearn.linear_model import LogisticRegression
from torch.utils.data import DataLoader
from torchvision import transforms

parser = argparse.ArgumentParser(description="SimCLR")
parser.add_argument("--data", default="./datasets")
parser.add_argument("--epochs", default=100, type=int)
parser.add_argument("--batch-size", default=256, type=int)
parser.add_argument("--lr", default=3e-4, type=float)
parser.add_argument("--temperature", default=0.07, type=float)
parser.add_argument("--out-dim", default=128, type=int)
parser.add_argument("--gpu", default=0, type=int, help="GPU index")
parser.add_argument("--fp16", action="store_true")


class TwoViews:
    def __init__(self, size=96):
        self.t = transforms.Compose([
            transforms.RandomResizedCrop(size), transforms.RandomHorizontalFlip(),
            transforms.RandomApply([transforms.ColorJitter(0.8, 0.8, 0.8, 0.2)], p=0.8),
            transforms.RandomGrayscale(p=0.2), transforms.GaussianBlur(9), transforms.ToTensor()])

    def __call__(self, x):
        return self.t(x), self.t(x)


class SimCLRNet(nn.Module):
    def __init__(self, out_dim=128):
        super().__init__()
        self.encoder = torchvision.models.resnet18(weights=None, num_classes=out_dim)
        dim_mlp = self.encoder.fc.in_features
        self.encoder.fc = nn.Identity()
        self.projector = nn.Sequential(nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), nn.Linear(dim_mlp, out_dim))

    def forward(self, x):
        return self.projector(self.encoder(x))


class NTXentLoss(nn.Module):
    def __init__(self, temperature=0.07):
        super().__init__()
        self.temperature = temperature

    def forward(self, z1, z2):
        n = z1.size(0)
        z = F.normalize(torch.cat([z1, z2], dim=0), dim=1)
        sim = z @ z.t() / self.temperature
        self_mask = torch.eye(2 * n, dtype=torch.bool)  # expect: DEV013
        sim = sim.masked_fill(self_mask, -1e9)
        targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])  # expect: DEV013
        return F.cross_entropy(sim, targets)


@torch.no_grad()
def extract(encoder, loader, device):
    encoder.eval()
    feats, labels = [], []
    for x, y in loader:
        feats.append(encoder(x.to(device)).cpu())
        labels.append(y)
    return torch.cat(feats).numpy(), torch.cat(labels).numpy()


def main():
    args = parser.parse_args()
    device = torch.device(f"cuda:{args.gpu}" if torch.cuda.is_available() else "cpu")  # expect: DEV004
    torch.backends.cudnn.benchmark = True

    unlabeled = torchvision.datasets.STL10(args.data, split="unlabeled", transform=TwoViews(), download=True)
    loader = DataLoader(unlabeled, batch_size=args.batch_size, shuffle=True, num_workers=12, drop_last=True)
    model = SimCLRNet(args.out_dim).to(device)
    criterion = NTXentLoss(args.temperature).to(device)
    optimizer = torch.optim.Adam(model.parameters(), args.lr, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=len(loader) * args.epochs)
    scaler = torch.amp.GradScaler(device.type, enabled=args.fp16)

    for epoch in range(args.epochs):
        model.train()
        for (x1, x2), _ in loader:
            x1, x2 = x1.to(device, non_blocking=True), x2.to(device, non_blocking=True)
            with torch.autocast(device.type, enabled=args.fp16):
                loss = criterion(model(x1), model(x2))
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")
        torch.save(model.state_dict(), f"simclr_{epoch:03d}.pt")

    plain = transforms.ToTensor()
    train = torchvision.datasets.STL10(args.data, split="train", transform=plain)
    test = torchvision.datasets.STL10(args.data, split="test", transform=plain)
    x_tr, y_tr = extract(model.encoder, DataLoader(train, batch_size=512), device)
    x_te, y_te = extract(model.encoder, DataLoader(test, batch_size=512), device)
    clf = LogisticRegression(max_iter=2000).fit(x_tr, y_tr)
    print("linear probe accuracy:", np.mean(clf.predict(x_te) == y_te))


if __name__ == "__main__":
    main()
