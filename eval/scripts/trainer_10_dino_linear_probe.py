"""Attention-pooling probe on frozen DINO ViT-S/16 patch tokens (torch.hub backbone)."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.metrics import classification_report
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class AttentionPool(nn.Module):
    def __init__(self, dim=384, num_classes=37, num_queries=4):
        super().__init__()
        self.dim = dim
        self.queries = nn.Parameter(torch.randn(num_queries, dim) * 0.02)
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.head = nn.Linear(num_queries * dim, num_classes)
        self.register_buffer("temperature", torch.tensor(1.0))

    def forward(self, tokens):
        k, v = self.key(tokens), self.value(tokens)
        scores = torch.einsum("qd,bnd->bqn", self.queries, k) / torch.sqrt(torch.tensor(self.dim, dtype=torch.float32))
        attn = (scores / self.temperature).softmax(dim=-1)
        pooled = torch.einsum("bqn,bnd->bqd", attn, v)
        return self.head(pooled.flatten(1))


class ProbeTrainer:
    def __init__(self, num_classes, class_counts, lr=1e-3, out_dir="runs/probe"):
        if torch.cuda.is_available():
            self.device = torch.device("cuda")
        elif torch.backends.mps.is_available():
            self.device = torch.device("mps")
        else:
            self.device = torch.device("cpu")
        self.backbone = torch.hub.load("facebookresearch/dino:main", "dino_vits16")
        self.backbone.to(self.device).eval()
        for p in self.backbone.parameters():
            p.requires_grad_(False)
        self.head = AttentionPool(num_classes=num_classes)
        self.head.to(self.device)
        weights = torch.tensor(1.0 / np.asarray(class_counts, dtype=np.float32))
        self.criterion = nn.CrossEntropyLoss(weight=weights / weights.sum() * num_classes)
        self.criterion.to(self.device)
        self.optimizer = torch.optim.AdamW(self.head.parameters(), lr=lr, weight_decay=0.05)
        self.scaler = torch.amp.GradScaler(enabled=self.device.type == "cuda")
        self.out_dir = out_dir
        os.makedirs(out_dir, exist_ok=True)

    @torch.no_grad()
    def patch_tokens(self, images):
        with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.device.type == "cuda"):
            tokens = self.backbone.get_intermediate_layers(images, n=1)[0]
        return tokens[:, 1:].float()

    def train_epoch(self, loader):
        self.head.train()
        losses = []
        for images, labels in loader:
            images = images.to(self.device, non_blocking=True)
            labels = labels.to(self.device, non_blocking=True)
            tokens = self.patch_tokens(images)
            with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.device.type == "cuda"):
                loss = self.criterion(self.head(tokens), labels)
            self.optimizer.zero_grad(set_to_none=True)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            losses.append(loss.item())
        return float(np.mean(losses))

    @torch.no_grad()
    def predict(self, loader):
        self.head.eval()
        cpu = torch.device("cpu")
        preds, targets = [], []
        for images, labels in loader:
            logits = self.head(self.patch_tokens(images.to(self.device)))
            preds.append(logits.argmax(dim=1).to(cpu).numpy())
            targets.append(labels.numpy())
        return np.concatenate(preds), np.concatenate(targets)

    def save(self):
        torch.save(self.head.state_dict(), os.path.join(self.out_dir, "head.pt"))
        scripted = torch.jit.script(self.head)
        scripted.save(os.path.join(self.out_dir, "head_scripted.pt"))

    def load(self):
        state = torch.load(os.path.join(self.out_dir, "head.pt"), map_location="cpu", weights_only=True)
        self.head.load_state_dict(state)
        return torch.jit.load(os.path.join(self.out_dir, "head_scripted.pt"), map_location=self.device)


if __name__ == "__main__":
    tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor(),
                             transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
    train_ds = datasets.OxfordIIITPet("data", split="trainval", transform=tf, download=True)
    test_ds = datasets.OxfordIIITPet("data", split="test", transform=tf, download=True)
    counts = np.bincount(train_ds._labels, minlength=37)
    trainer = ProbeTrainer(num_classes=37, class_counts=counts)
    pin = trainer.device.type == "cuda"
    train_loader = DataLoader(train_ds, batch_size=64, shuffle=True, num_workers=6, pin_memory=pin)
    test_loader = DataLoader(test_ds, batch_size=128, num_workers=6, pin_memory=pin)
    for epoch in range(10):
        print(f"epoch {epoch}: loss {trainer.train_epoch(train_loader):.4f}")
    trainer.save()
    scripted = trainer.load()
    y_pred, y_true = trainer.predict(test_loader)
    print(classification_report(y_true, y_pred, digits=3))
