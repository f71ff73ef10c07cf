"""Image classification trainer with AMP and checkpoint resume."""
import argparse
import os
import time

import torch
import torch.nn as nn
import torchvision
import torchvision.transforms as T
from torch.utils.data import DataLoader


def pick_device(prefer_cpu=False):
    if prefer_cpu:
        return torch.device("cpu")
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.device = pick_device(cfg.cpu)
        self.model = torchvision.models.resnet18(num_classes=cfg.num_classes).to(self.device)
        self.optimizer = torch.optim.SGD(
            self.model.parameters(), lr=cfg.lr, momentum=0.9, weight_decay=5e-4
        )
        self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer, cfg.epochs)
        self.scaler = torch.cuda.amp.GradScaler(enabled=cfg.amp)  # expect: DEV009
        self.criterion = nn.CrossEntropyLoss()
        self.start_epoch = 0
        self.best_acc = 0.0

    def build_loaders(self):
        tf_train = T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor()])
        tf_test = T.Compose([T.ToTensor()])
        train = torchvision.datasets.CIFAR10(self.cfg.data, train=True, download=True, transform=tf_train)
        test = torchvision.datasets.CIFAR10(self.cfg.data, train=False, download=True, transform=tf_test)
        pin = self.device.type == "cuda"
        return (
            DataLoader(train, batch_size=self.cfg.bs, shuffle=True, num_workers=4, pin_memory=pin),
            DataLoader(test, batch_size=256, num_workers=4, pin_memory=pin),
        )

    def resume(self, path):
        ckpt = torch.load(path)  # expect: DEV007
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self.scaler.load_state_dict(ckpt["scaler"])
        self.start_epoch = ckpt["epoch"] + 1
        self.best_acc = ckpt.get("best_acc", 0.0)

    def save(self, path, epoch):
        torch.save(
            {
                "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scaler": self.scaler.state_dict(),
                "epoch": epoch,
                "best_acc": self.best_acc,
            },
            path,
        )

    def train_one_epoch(self, loader):
        self.model.train()
        total_loss = 0.0
        for images, targets in loader:
            images = images.to(self.device, non_blocking=True)
            targets = targets.to(self.device, non_blocking=True)
            with torch.cuda.amp.autocast(enabled=self.cfg.amp):  # expect: DEV009
                logits = self.model(images)
                loss = self.criterion(logits, targets)
            self.optimizer.zero_grad(set_to_none=True)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            total_loss += loss.item()
        return total_loss / len(loader)

    @torch.no_grad()
    def evaluate(self, loader):
        self.model.eval()
        correct = total = 0
        for images, targets in loader:
            images, targets = images.to(self.device), targets.to(self.device)
            preds = self.model(images).argmax(1)
            correct += (preds == targets).sum().item()
            total += targets.numel()
        return correct / total

    def fit(self):
        train_loader, test_loader = self.build_loaders()
        for epoch in range(self.start_epoch, self.cfg.epochs):
            t0 = time.time()
            loss = self.train_one_epoch(train_loader)
            acc = self.evaluate(test_loader)
            self.scheduler.step()
            print(f"epoch {epoch} loss {loss:.4f} acc {acc:.4f} ({time.time() - t0:.1f}s)")
            if acc > self.best_acc:
                self.best_acc = acc
                self.save(os.path.join(self.cfg.out, "best.pt"), epoch)
            self.save(os.path.join(self.cfg.out, "last.pt"), epoch)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="./data")
    p.add_argument("--out", default="./runs")
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--bs", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--num-classes", type=int, default=10)
    p.add_argument("--amp", action="store_true")
    p.add_argument("--cpu", action="store_true")
    p.add_argument("--resume", default="")
    cfg = p.parse_args()
    os.makedirs(cfg.out, exist_ok=True)
    trainer = Trainer(cfg)
    if cfg.resume:
        trainer.resume(cfg.resume)
    trainer.fit()


if __name__ == "__main__":
    main()
