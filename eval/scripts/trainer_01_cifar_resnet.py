"""CIFAR-10 trainer with AMP, cosine schedule, checkpointing and early stopping."""
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def pick_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class SmallResNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU())
        self.layer1 = BasicBlock(32, 64, 2)
        self.layer2 = BasicBlock(64, 128, 2)
        self.fc = nn.Linear(128, num_classes)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


class Trainer:
    def __init__(self, model, train_loader, val_loader, epochs=30, lr=0.1, ckpt_dir="checkpoints"):
        self.device = pick_device()
        self.model = model
        self.model.to(self.device)
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.epochs = epochs
        self.criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4, nesterov=True)
        self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer, T_max=epochs)
        self.use_amp = self.device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)
        self.ckpt_dir = ckpt_dir
        os.makedirs(ckpt_dir, exist_ok=True)
        self.best_acc = 0.0
        self.patience = 5
        self.bad_epochs = 0
        self.history = {"train_loss": [], "val_acc": []}

    def train_epoch(self, epoch):
        self.model.train()
        running, seen = 0.0, 0
        start = time.time()
        for step, (images, targets) in enumerate(self.train_loader):
            images = images.to(self.device, non_blocking=True)
            targets = targets.to(self.device, non_blocking=True)
            self.optimizer.zero_grad(set_to_none=True)
            with torch.amp.autocast(device_type=self.device.type, enabled=self.use_amp):
                logits = self.model(images)
                loss = self.criterion(logits, targets)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            running += loss.item() * images.size(0)
            seen += images.size(0)
            if step % 100 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        print(f"epoch {epoch} took {time.time() - start:.1f}s")
        return running / seen

    @torch.no_grad()
    def evaluate(self):
        self.model.eval()
        all_preds, all_targets = [], []
        for images, targets in self.val_loader:
            images = images.to(self.device)
            logits = self.model(images)
            all_preds.append(logits.argmax(dim=1).cpu().numpy())
            all_targets.append(targets.numpy())
        preds = np.concatenate(all_preds)
        truth = np.concatenate(all_targets)
        return float((preds == truth).mean())

    def save(self, name, epoch):
        torch.save(
            {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
             "scaler": self.scaler.state_dict(), "epoch": epoch, "best_acc": self.best_acc},
            os.path.join(self.ckpt_dir, name),
        )

    def load(self, name):
        state = torch.load(os.path.join(self.ckpt_dir, name), map_location=self.device)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scaler.load_state_dict(state["scaler"])
        return state["epoch"]

    def fit(self):
        for epoch in range(self.epochs):
            train_loss = self.train_epoch(epoch)
            acc = self.evaluate()
            self.scheduler.step()
            self.history["train_loss"].append(train_loss)
            self.history["val_acc"].append(acc)
            print(f"epoch {epoch}: train loss {train_loss:.4f} val acc {acc:.4f}")
            if acc > self.best_acc:
                self.best_acc = acc
                self.bad_epochs = 0
                self.save("best.pt", epoch)
            else:
                self.bad_epochs += 1
                if self.bad_epochs >= self.patience:
                    print("early stopping")
                    break
        self.load("best.pt")
        return self.history


def main():
    norm = transforms.Normalize((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616))
    train_tf = transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip(),
                                   transforms.ToTensor(), norm])
    test_tf = transforms.Compose([transforms.ToTensor(), norm])
    train_set = datasets.CIFAR10("./data", train=True, download=True, transform=train_tf)
    val_set = datasets.CIFAR10("./data", train=False, download=True, transform=test_tf)
    pin = torch.cuda.is_available()
    train_loader = DataLoader(train_set, batch_size=128, shuffle=True, num_workers=4, pin_memory=pin)
    val_loader = DataLoader(val_set, batch_size=256, num_workers=4, pin_memory=pin)
    trainer = Trainer(SmallResNet(), train_loader, val_loader)
    history = trainer.fit()
    print("best accuracy:", max(history["val_acc"]))


if __name__ == "__main__":
    main()
