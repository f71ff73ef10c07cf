"""A small reusable Trainer for tabular / embedding classification experiments."""
import json
import logging
import os
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

logger = logging.getLogger(__name__)


@dataclass
class TrainConfig:
    epochs: int = 20
    lr: float = 3e-4
    weight_decay: float = 0.01
    batch_size: int = 256
    use_amp: bool = True
    ckpt_dir: str = "checkpoints"
    resume: str = ""


class Trainer:
    def __init__(self, model, train_loader, val_loader, config, class_weights=None, device=None):
        self.config = config
        self.device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")  # expect: DEV004
        self.model = model.to(self.device)
        self.train_loader = train_loader
        self.val_loader = val_loader
        if class_weights is not None:
            class_weights = torch.as_tensor(class_weights, dtype=torch.float32, device=self.device)
        self.criterion = nn.CrossEntropyLoss(weight=class_weights)
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=config.lr, weight_decay=config.weight_decay
        )
        self.use_amp = config.use_amp and self.device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)
        self.start_epoch = 0
        self.history = []
        if config.resume:
            self._resume(config.resume)

    def _resume(self, path):
        state = torch.load(path)  # expect: DEV007
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.start_epoch = state["epoch"] + 1
        logger.info("resumed from %s (epoch %d)", path, state["epoch"])

    def save(self, epoch):
        os.makedirs(self.config.ckpt_dir, exist_ok=True)
        path = os.path.join(self.config.ckpt_dir, f"epoch_{epoch:03d}.pt")
        torch.save(
            {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(), "epoch": epoch},
            path,
        )
        return path

    def train_epoch(self):
        self.model.train()
        total_loss, n = 0.0, 0
        for x, y in self.train_loader:
            x = x.to(self.device, non_blocking=True)
            self.optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=self.device.type, enabled=self.use_amp):
                logits = self.model(x)
                loss = self.criterion(logits, y)  # expect: DEV002
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            total_loss += loss.item() * x.size(0)
            n += x.size(0)
        return total_loss / n

    @torch.no_grad()
    def validate(self):
        self.model.eval()
        preds, targets = [], []
        for x, y in self.val_loader:
            logits = self.model(x.to(self.device))
            preds.append(logits.argmax(dim=1).cpu())
            targets.append(y)
        preds = torch.cat(preds).numpy()
        targets = torch.cat(targets).numpy()
        return float((preds == targets).mean())

    def fit(self):
        for epoch in range(self.start_epoch, self.config.epochs):
            t0 = time.time()
            train_loss = self.train_epoch()
            val_acc = self.validate()
            if self.device.type == "cuda":
                torch.cuda.synchronize()
                peak_mb = torch.cuda.max_memory_allocated() / 2**20
            else:
                peak_mb = 0.0
            record = {
                "epoch": epoch,
                "train_loss": train_loss,
                "val_acc": val_acc,
                "time": time.time() - t0,
                "peak_mb": peak_mb,
            }
            self.history.append(record)
            logger.info(json.dumps(record))
            self.save(epoch)
        return self.history


def make_loaders(n_samples=20000, n_features=64, n_classes=3, batch_size=256, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 2, size=(n_classes, n_features))
    y = rng.integers(0, n_classes, size=n_samples)
    X = centers[y] + rng.normal(0, 1, size=(n_samples, n_features))
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    split = int(0.8 * n_samples)
    X_t = torch.from_numpy(X.astype(np.float32))
    y_t = torch.from_numpy(y.astype(np.int64))
    pin = torch.cuda.is_available()
    train = DataLoader(TensorDataset(X_t[:split], y_t[:split]), batch_size=batch_size, shuffle=True, pin_memory=pin)
    val = DataLoader(TensorDataset(X_t[split:], y_t[split:]), batch_size=1024, pin_memory=pin)
    return train, val


def main():
    logging.basicConfig(level=logging.INFO)
    config = TrainConfig()
    logger.info("config: %s", asdict(config))
    train_loader, val_loader = make_loaders(batch_size=config.batch_size)
    model = nn.Sequential(
        nn.Linear(64, 256),
        nn.GELU(),
        nn.Dropout(0.1),
        nn.Linear(256, 3),
    )
    trainer = Trainer(model, train_loader, val_loader, config, class_weights=[1.0, 1.5, 1.0])
    history = trainer.fit()
    print("best val acc:", max(h["val_acc"] for h in history))


if __name__ == "__main__":
    main()
