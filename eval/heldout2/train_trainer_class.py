"""CIFAR-10 image classification trainer (ResNet-18, label smoothing, cosine schedule)."""
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
from sklearn.metrics import f1_score
from torch.utils.data import DataLoader
from torchvision import datasets, models, transforms


def get_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


class LabelSmoothingLoss(nn.Module):
    def __init__(self, classes, smoothing=0.1):
        super().__init__()
        self.confidence = 1.0 - smoothing
        self.smoothing = smoothing
        self.cls = classes

    def forward(self, pred, target):
        pred = pred.log_softmax(dim=-1)
        with torch.no_grad():
            true_dist = torch.zeros(pred.size())  # expect: DEV013
            true_dist.fill_(self.smoothing / (self.cls - 1))
            true_dist.scatter_(1, target.data.unsqueeze(1), self.confidence)
        return torch.mean(torch.sum(-true_dist * pred, dim=-1))


@dataclass
class Config:
    epochs: int = 30
    batch_size: int = 128
    lr: float = 0.1
    num_workers: int = 4
    data_dir: str = "./data"


class Trainer:
    def __init__(self, model, cfg: Config):
        self.cfg = cfg
        self.device = get_device()
        self.model = model.to(self.device)
        self.criterion = LabelSmoothingLoss(10, smoothing=0.1)
        self.optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9, weight_decay=5e-4)
        self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer, T_max=cfg.epochs)
        normalize = transforms.Normalize((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616))
        tf_train = transforms.Compose([
            transforms.RandomCrop(32, padding=4),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            normalize,
        ])
        tf_test = transforms.Compose([transforms.ToTensor(), normalize])
        self.train_loader = DataLoader(
            datasets.CIFAR10(cfg.data_dir, train=True, download=True, transform=tf_train),
            batch_size=cfg.batch_size,
            shuffle=True,
            num_workers=cfg.num_workers,
            pin_memory=True,  # expect: DEV005
        )
        self.test_loader = DataLoader(
            datasets.CIFAR10(cfg.data_dir, train=False, transform=tf_test),
            batch_size=256,
            num_workers=cfg.num_workers,
        )

    def train_epoch(self, epoch):
        self.model.train()
        total, correct, running = 0, 0, 0.0
        start = time.time()
        for inputs, targets in self.train_loader:
            inputs = inputs.to(self.device, non_blocking=True)
            targets = targets.to(self.device, non_blocking=True)
            self.optimizer.zero_grad(set_to_none=True)
            outputs = self.model(inputs)
            loss = self.criterion(outputs, targets)
            loss.backward()
            self.optimizer.step()
            running += loss.item() * targets.size(0)
            correct += outputs.argmax(1).eq(targets).sum().item()
            total += targets.size(0)
        torch.cuda.synchronize()  # expect: DEV011
        elapsed = time.time() - start
        print(f"epoch {epoch}: loss {running / total:.4f} acc {correct / total:.4f} ({elapsed:.1f}s)")

    @torch.no_grad()
    def evaluate(self):
        self.model.eval()
        preds, labels = [], []
        for inputs, targets in self.test_loader:
            outputs = self.model(inputs.to(self.device))
            preds.append(outputs.argmax(1).numpy())  # expect: DEV001
            labels.append(targets.numpy())
        preds = np.concatenate(preds)
        labels = np.concatenate(labels)
        acc = (preds == labels).mean()
        f1 = f1_score(labels, preds, average="macro")
        return acc, f1

    def fit(self):
        best = 0.0
        for epoch in range(self.cfg.epochs):
            self.train_epoch(epoch)
            acc, f1 = self.evaluate()
            self.scheduler.step()
            print(f"  test acc {acc:.4f}  macro-F1 {f1:.4f}")
            if acc > best:
                best = acc
                torch.save(self.model.state_dict(), "best.pt")
        return best


if __name__ == "__main__":
    net = models.resnet18(num_classes=10)
    trainer = Trainer(net, Config())
    print("best acc", trainer.fit())
