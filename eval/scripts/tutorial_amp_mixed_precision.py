"""Faster training with Automatic Mixed Precision (AMP).

We train a ResNet-50 on CIFAR-10 for a few epochs and time each epoch. On a GPU
with tensor cores, AMP is usually 1.5-3x faster and uses less memory.
"""
import time

import torch
import torch.nn as nn
from torch.cuda.amp import GradScaler, autocast
from torch.utils.data import DataLoader
from torchvision import datasets, models, transforms

device = "cuda" if torch.cuda.is_available() else "cpu"  # expect: DEV004
print(f"training on {device}")

transform = transforms.Compose([
    transforms.RandomHorizontalFlip(),
    transforms.ToTensor(),
    transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
])
train_set = datasets.CIFAR10("./data", train=True, download=True, transform=transform)
train_loader = DataLoader(train_set, batch_size=256, shuffle=True, num_workers=8,
                          pin_memory=(device == "cuda"))

model = models.resnet50(num_classes=10).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
scaler = GradScaler()  # expect: DEV009


def train_one_epoch(use_amp=True):
    model.train()
    torch.cuda.synchronize()  # expect: DEV011
    start = time.perf_counter()
    for images, targets in train_loader:
        images = images.to(device, non_blocking=True)
        targets = targets.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)

        # forward pass runs in float16 where it is safe to do so
        with autocast(enabled=use_amp):  # expect: DEV009
            output = model(images)
            loss = criterion(output, targets)

        # scale the loss to avoid float16 gradient underflow
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    torch.cuda.synchronize()  # expect: DEV011
    return time.perf_counter() - start, loss.item()


for epoch in range(3):
    elapsed, last_loss = train_one_epoch(use_amp=True)
    print(f"epoch {epoch}: {elapsed:.1f}s, last loss {last_loss:.3f}")

if torch.cuda.is_available():
    print(f"peak memory: {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")
    torch.cuda.reset_peak_memory_stats()

torch.save({"model": model.state_dict(), "scaler": scaler.state_dict()}, "resnet50_amp.pt")
