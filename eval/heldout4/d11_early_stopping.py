"""Training loop with early stopping, top-k checkpointing and resume support.

    python d11_early_stopping.py --epochs 100 --patience 8
    python d11_early_stopping.py --resume checkpoints/last.pt
"""
import argparse
import heapq
import os

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, random_split
from torchvision import datasets, transforms


class EarlyStopping:
    """Stop training when the validation loss has not improved for `patience` epochs."""

    def __init__(self, patience=7, delta=0.0, path="checkpoints/best.pt", verbose=True):
        self.patience = patience
        self.delta = delta
        self.path = path
        self.verbose = verbose
        self.counter = 0
        self.best_loss = np.inf
        self.early_stop = False

    def __call__(self, val_loss, model):
        if val_loss < self.best_loss - self.delta:
            if self.verbose:
                print(f"val loss improved {self.best_loss:.5f} -> {val_loss:.5f}, saving model")
            self.best_loss = val_loss
            torch.save(model.state_dict(), self.path)
            self.counter = 0
        else:
            self.counter += 1
            if self.verbose:
                print(f"EarlyStopping counter: {self.counter} / {self.patience}")
            if self.counter >= self.patience:
                self.early_stop = True

    def restore_best(self, model, device):
        model.load_state_dict(torch.load(self.path, map_location=device))


class TopKCheckpoint:
    """Keep the k checkpoints with the lowest validation loss on disk."""

    def __init__(self, dirpath="checkpoints", k=3):
        self.dirpath = dirpath
        self.k = k
        self.heap = []  # (-val_loss, path)
        os.makedirs(dirpath, exist_ok=True)

    def __call__(self, epoch, val_loss, model, optimizer):
        path = os.path.join(self.dirpath, f"epoch{epoch:03d}_loss{val_loss:.4f}.pt")
        state = {"epoch": epoch, "model": model.state_dict(),
                 "optimizer": optimizer.state_dict(), "val_loss": val_loss}
        torch.save(state, os.path.join(self.dirpath, "last.pt"))
        if len(self.heap) < self.k or -self.heap[0][0] > val_loss:
            torch.save(state, path)
            heapq.heappush(self.heap, (-val_loss, path))
            if len(self.heap) > self.k:
                _, worst = heapq.heappop(self.heap)
                os.remove(worst)


def resume(path, model, optimizer):
    ckpt = torch.load(path)  # expect: DEV007
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    print(f"resumed from {path} (epoch {ckpt['epoch']}, val loss {ckpt['val_loss']:.4f})")
    return ckpt["epoch"] + 1


def build_model():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.3), nn.Linear(128, 10),
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--patience", type=int, default=8)
    parser.add_argument("--resume", default=None)
    args = parser.parse_args()

    if torch.cuda.is_available():
        device = torch.device("cuda")
    elif torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")

    full = datasets.FashionMNIST("data", train=True, download=True, transform=transforms.ToTensor())
    train_set, val_set = random_split(full, [54000, 6000], generator=torch.Generator().manual_seed(0))
    train_loader = DataLoader(train_set, batch_size=128, shuffle=True, num_workers=4,
                              pin_memory=(device.type == "cuda"))
    val_loader = DataLoader(val_set, batch_size=512, num_workers=4)

    model = build_model()
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=3)
    # shirts (class 6) are the hardest class, weight them a bit more
    class_weights = torch.ones(10)
    class_weights[6] = 2.0
    criterion = nn.CrossEntropyLoss(weight=class_weights.cuda())  # expect: DEV003

    start_epoch = resume(args.resume, model, optimizer) if args.resume else 0
    stopper = EarlyStopping(patience=args.patience)
    checkpointer = TopKCheckpoint()

    for epoch in range(start_epoch, args.epochs):
        model.train()
        for x, y in train_loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()

        model.eval()
        val_loss = 0.0
        with torch.no_grad():
            for x, y in val_loader:
                val_loss += criterion(model(x.to(device)), y).item() * x.size(0)  # expect: DEV002
        val_loss /= len(val_set)
        scheduler.step(val_loss)
        print(f"epoch {epoch}: val_loss={val_loss:.4f} lr={optimizer.param_groups[0]['lr']:.2e}")

        checkpointer(epoch, val_loss, model, optimizer)
        stopper(val_loss, model)
        if stopper.early_stop:
            print("early stopping")
            break

    stopper.restore_best(model, device)
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
