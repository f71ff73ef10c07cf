"""Knowledge distillation on CIFAR-100: frozen ResNet-50 teacher -> ResNet-18 student."""
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
import torchvision.transforms as T
from torch.cuda.amp import GradScaler, autocast
from torch.utils.data import DataLoader

CIFAR_MEAN = (0.5071, 0.4865, 0.4409)
CIFAR_STD = (0.2673, 0.2564, 0.2762)


def get_device():
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")  # expect: DEV004


def kd_loss(student_logits, teacher_logits, targets, temperature=4.0, alpha=0.9):
    soft = F.kl_div(
        F.log_softmax(student_logits / temperature, dim=1),
        F.softmax(teacher_logits / temperature, dim=1),
        reduction="batchmean",
    ) * (temperature ** 2)
    hard = F.cross_entropy(student_logits, targets)
    return alpha * soft + (1.0 - alpha) * hard


def cifar_resnet(arch, num_classes=100):
    model = getattr(torchvision.models, arch)(num_classes=num_classes)
    # 32x32 inputs: smaller stem, no max-pool
    model.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
    model.maxpool = nn.Identity()
    return model


class Distiller:
    def __init__(self, teacher, student, train_loader, val_loader, epochs=200, lr=0.1,
                 temperature=4.0, alpha=0.9, out_dir="checkpoints"):
        self.device = get_device()
        self.teacher = teacher.to(self.device).eval()
        for p in self.teacher.parameters():
            p.requires_grad_(False)
        self.student = student
        self.student.to(self.device)
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.epochs = epochs
        self.temperature = temperature
        self.alpha = alpha
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.optimizer = torch.optim.SGD(self.student.parameters(), lr=lr, momentum=0.9,
                                         weight_decay=5e-4, nesterov=True)
        self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer, T_max=epochs)
        self.use_amp = self.device.type == "cuda"
        self.scaler = GradScaler(enabled=self.use_amp)  # expect: DEV009

    def train_epoch(self):
        self.student.train()
        total, n = 0.0, 0
        for images, targets in self.train_loader:
            images = images.to(self.device, non_blocking=True)
            targets = targets.to(self.device, non_blocking=True)
            with torch.no_grad():
                t_logits = self.teacher(images)
            with autocast(enabled=self.use_amp):  # expect: DEV009
                s_logits = self.student(images)
            loss = kd_loss(s_logits.float(), t_logits.float(), targets, self.temperature, self.alpha)
            self.optimizer.zero_grad(set_to_none=True)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            total += loss.item() * images.size(0)
            n += images.size(0)
        self.scheduler.step()
        return total / n

    @torch.no_grad()
    def evaluate(self, model):
        model.eval()
        correct, n = 0, 0
        for images, targets in self.val_loader:
            images = images.to(self.device, non_blocking=True)
            targets = targets.to(self.device, non_blocking=True)
            preds = model(images).argmax(dim=1)
            correct += (preds == targets).sum().item()
            n += targets.numel()
        return correct / n

    def fit(self):
        print(f"teacher top-1: {self.evaluate(self.teacher):.4f}")
        best = 0.0
        for epoch in range(self.epochs):
            t0 = time.time()
            loss = self.train_epoch()
            acc = self.evaluate(self.student)
            print(f"[{epoch:03d}] kd loss {loss:.4f}  student top-1 {acc:.4f}  ({time.time() - t0:.0f}s)")
            if acc > best:
                best = acc
                torch.save(self.student.state_dict(), self.out_dir / "student_r18_best.pt")
        return best


def build_loaders(root="./data", batch_size=128, workers=4):
    train_tf = T.Compose([
        T.RandomCrop(32, padding=4),
        T.RandomHorizontalFlip(),
        T.ToTensor(),
        T.Normalize(CIFAR_MEAN, CIFAR_STD),
    ])
    test_tf = T.Compose([T.ToTensor(), T.Normalize(CIFAR_MEAN, CIFAR_STD)])
    train_set = torchvision.datasets.CIFAR100(root, train=True, download=True, transform=train_tf)
    test_set = torchvision.datasets.CIFAR100(root, train=False, download=True, transform=test_tf)
    pin = torch.cuda.is_available()
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, num_workers=workers,
                              pin_memory=pin, drop_last=True)
    test_loader = DataLoader(test_set, batch_size=256, shuffle=False, num_workers=workers, pin_memory=pin)
    return train_loader, test_loader


if __name__ == "__main__":
    train_loader, test_loader = build_loaders()
    teacher = cifar_resnet("resnet50")
    state = torch.load("checkpoints/teacher_r50.pt", map_location="cpu", weights_only=True)
    teacher.load_state_dict(state)
    student = cifar_resnet("resnet18")
    best = Distiller(teacher, student, train_loader, test_loader).fit()
    print(f"best student accuracy: {best:.4f}")
