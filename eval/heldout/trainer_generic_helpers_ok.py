"""A small, reusable training loop: helpers take the model and device as arguments."""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.metrics import classification_report, confusion_matrix
from torch.utils.data import DataLoader, random_split
from torchvision import datasets, transforms


def get_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def train_step(model, batch, optimizer, device):
    x, y = batch
    x, y = x.to(device), y.to(device)
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@torch.no_grad()
def predict(model, loader, device):
    model.eval()
    preds, gts = [], []
    for x, y in loader:
        logits = model(x.to(device))
        preds.append(logits.argmax(1).cpu())
        gts.append(y)
    return torch.cat(gts).numpy(), torch.cat(preds).numpy()


class Trainer:
    def __init__(self, model, device=None, lr=1e-3):
        self.device = device or get_device()
        self.model = model.to(self.device)
        self.use_cuda = self.device.type == "cuda"
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.history = []

    def fit(self, train_loader, epochs):
        for epoch in range(epochs):
            self.model.train()
            t0 = time.time()
            losses = [train_step(self.model, batch, self.optimizer, self.device) for batch in train_loader]
            if self.use_cuda:
                torch.cuda.synchronize()
            self.history.append(float(np.mean(losses)))
            print(f"epoch {epoch}: loss={self.history[-1]:.4f} time={time.time() - t0:.1f}s")

    def save(self, path):
        torch.save({"model": self.model.state_dict(), "history": self.history}, path)

    def load(self, path):
        state = torch.load(path, map_location=self.device)
        self.model.load_state_dict(state["model"])
        self.history = state["history"]


class MLP(nn.Module):
    def __init__(self, hidden=256):
        super().__init__()
        self.net = nn.Sequential(
            nn.Flatten(),
            nn.Linear(28 * 28, hidden),
            nn.ReLU(),
            nn.Dropout(0.2),
            nn.Linear(hidden, 10),
        )

    def forward(self, x):
        return self.net(x)


if __name__ == "__main__":
    tf = transforms.ToTensor()
    full = datasets.FashionMNIST("data", train=True, download=True, transform=tf)
    train_ds, val_ds = random_split(full, [55000, 5000])
    device = get_device()
    kwargs = {"num_workers": 2, "pin_memory": True} if device.type == "cuda" else {}
    train_loader = DataLoader(train_ds, batch_size=128, shuffle=True, **kwargs)
    val_loader = DataLoader(val_ds, batch_size=512, **kwargs)

    trainer = Trainer(MLP(), device=device)
    trainer.fit(train_loader, epochs=5)
    trainer.save("fmnist_mlp.pt")

    y_true, y_pred = predict(trainer.model, val_loader, trainer.device)
    print(confusion_matrix(y_true, y_pred))
    print(classification_report(y_true, y_pred, digits=3))

    sample = torch.randn(1, 1, 28, 28, device=trainer.device)
    print(trainer.model(sample).softmax(-1).squeeze().tolist())
