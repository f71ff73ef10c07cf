"""CIFAR-100 training with periodic checkpoints and --resume."""
import argparse
import io
import os
import random
import shutil

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, models, transforms


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


def save_checkpoint(state, is_best, path="checkpoint.pth.tar"):
    torch.save(state, path)
    if is_best:
        shutil.copyfile(path, "model_best.pth.tar")


def snapshot(model):
    """Deep copy of the weights through an in-memory buffer."""
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    return torch.load(buffer)


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct = 0
    for images, target in loader:
        output = model(images.to(device))
        correct += (output.argmax(1).cpu() == target).sum().item()
    return 100.0 * correct / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="./data")
    parser.add_argument("--epochs", type=int, default=90)
    parser.add_argument("--resume", default="", type=str)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    set_seed(args.seed)

    device = torch.device(
        "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
    )
    print("=> using", torch.cuda.get_device_name(0))  # expect: DEV011

    model = models.resnet18(num_classes=100).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[30, 60], gamma=0.1)
    start_epoch, best_acc = 0, 0.0

    if args.resume:
        if os.path.isfile(args.resume):
            print(f"=> loading checkpoint '{args.resume}'")
            checkpoint = torch.load(args.resume)  # expect: DEV007
            start_epoch = checkpoint["epoch"]
            best_acc = checkpoint["best_acc"]
            model.load_state_dict(checkpoint["state_dict"])
            optimizer.load_state_dict(checkpoint["optimizer"])
            scheduler.load_state_dict(checkpoint["scheduler"])
            for state in optimizer.state.values():
                for k, v in state.items():
                    if isinstance(v, torch.Tensor):
                        state[k] = v.to(device)
        else:
            print(f"=> no checkpoint found at '{args.resume}'")

    norm = transforms.Normalize((0.507, 0.487, 0.441), (0.267, 0.256, 0.276))
    train_tf = transforms.Compose([transforms.RandomCrop(32, 4), transforms.RandomHorizontalFlip(),
                                   transforms.ToTensor(), norm])
    train_set = datasets.CIFAR100(args.data, train=True, download=True, transform=train_tf)
    val_set = datasets.CIFAR100(args.data, train=False, transform=transforms.Compose([transforms.ToTensor(), norm]))
    train_loader = DataLoader(train_set, batch_size=128, shuffle=True, num_workers=4)
    val_loader = DataLoader(val_set, batch_size=256, num_workers=4)

    best_weights = None
    for epoch in range(start_epoch, args.epochs):
        model.train()
        for images, target in train_loader:
            images, target = images.to(device), target.to(device)
            loss = F.cross_entropy(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()

        acc = evaluate(model, val_loader, device)
        is_best = acc > best_acc
        best_acc = max(acc, best_acc)
        if is_best:
            best_weights = snapshot(model)
        print(f"epoch {epoch}: acc {acc:.2f} (best {best_acc:.2f})")
        save_checkpoint({
            "epoch": epoch + 1,
            "state_dict": model.state_dict(),
            "best_acc": best_acc,
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
        }, is_best)

    if best_weights is not None:
        model.load_state_dict(best_weights)
        print("final acc with best weights:", evaluate(model, val_loader, device))


if __name__ == "__main__":
    main()
