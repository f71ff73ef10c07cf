"""Train a ResNet-18 on CIFAR-10 with mixed precision and a one-cycle schedule."""
import argparse
import os

import torch
import torch.nn as nn
import torch.optim as optim
import torchvision
import torchvision.transforms as T
from torch.utils.data import DataLoader

CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2470, 0.2435, 0.2616)


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", default="./data")
    p.add_argument("--out-dir", default="./runs/resnet18")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--amp", action="store_true")
    p.add_argument("--log-every", type=int, default=50)
    return p.parse_args()


def get_loaders(data_dir, batch_size, workers):
    train_tf = T.Compose([
        T.RandomCrop(32, padding=4),
        T.RandomHorizontalFlip(),
        T.ToTensor(),
        T.Normalize(CIFAR_MEAN, CIFAR_STD),
    ])
    test_tf = T.Compose([T.ToTensor(), T.Normalize(CIFAR_MEAN, CIFAR_STD)])
    train_set = torchvision.datasets.CIFAR10(data_dir, train=True, download=True, transform=train_tf)
    test_set = torchvision.datasets.CIFAR10(data_dir, train=False, download=True, transform=test_tf)
    train_loader = DataLoader(
        train_set,
        batch_size=batch_size,
        shuffle=True,
        num_workers=workers,
        pin_memory=True,  # expect: DEV005
        drop_last=True,
    )
    test_loader = DataLoader(test_set, batch_size=512, shuffle=False, num_workers=workers)
    return train_loader, test_loader


def build_model():
    model = torchvision.models.resnet18(num_classes=10)
    # CIFAR images are 32x32: use a 3x3 stem and drop the first max-pool
    model.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
    model.maxpool = nn.Identity()
    return model


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct, total = 0, 0
    per_class = torch.zeros(10, dtype=torch.long)
    for images, targets in loader:
        images, targets = images.to(device), targets.to(device)
        preds = model(images).argmax(dim=1)
        correct += (preds == targets).sum().item()
        total += targets.size(0)
        hits = targets[preds == targets].cpu()
        per_class += torch.bincount(hits, minlength=10)
    return correct / total, per_class.tolist()


def main():
    args = get_args()
    os.makedirs(args.out_dir, exist_ok=True)

    if torch.cuda.is_available():
        device = torch.device("cuda")
    elif torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")
    print(f"Using device: {device}")
    torch.backends.cudnn.benchmark = True

    train_loader, test_loader = get_loaders(args.data_dir, args.batch_size, args.workers)

    model = build_model()
    model.to(device)

    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4, nesterov=True)
    scheduler = optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=args.lr, epochs=args.epochs, steps_per_epoch=len(train_loader)
    )
    scaler = torch.cuda.amp.GradScaler(enabled=args.amp)  # expect: DEV009

    best_acc = 0.0
    for epoch in range(args.epochs):
        model.train()
        for step, (images, targets) in enumerate(train_loader):
            images = images.to(device, non_blocking=True)
            targets = targets.to(device, non_blocking=True)

            optimizer.zero_grad(set_to_none=True)
            with torch.cuda.amp.autocast(enabled=args.amp):  # expect: DEV009
                outputs = model(images)
                loss = criterion(outputs, targets)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()

            if step % args.log_every == 0:
                lr = scheduler.get_last_lr()[0]
                print(f"epoch {epoch:3d} step {step:4d}  loss {loss.item():.4f}  lr {lr:.4f}")

        acc, per_class = evaluate(model, test_loader, device)
        print(f"epoch {epoch}: test acc {acc:.4f}  per-class hits {per_class}")
        if acc > best_acc:
            best_acc = acc
            torch.save(
                {"model": model.state_dict(), "epoch": epoch, "acc": acc},
                os.path.join(args.out_dir, "best.pt"),
            )
    print(f"best accuracy: {best_acc:.4f}")


if __name__ == "__main__":
    main()
