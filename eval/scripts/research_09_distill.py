"""Knowledge distillation: ResNet-50 teacher -> ResNet-18 student on CIFAR-100.

python research_09_distill.py --teacher ckpt/r50_c100.pth --alpha 0.9 --T 4
"""
import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, models, transforms
from tqdm import tqdm


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--teacher", required=True)
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--bs", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--alpha", type=float, default=0.9)
    p.add_argument("--T", type=float, default=4.0)
    p.add_argument("--workers", type=int, default=4)
    return p.parse_args()


class Prefetcher:
    """Overlaps host->device copies with compute."""

    def __init__(self, loader, device):
        self.loader = loader
        self.device = device

    def __iter__(self):
        for x, y in self.loader:
            yield x.pin_memory().to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)  # expect: DEV005

    def __len__(self):
        return len(self.loader)


class DistillLoss(nn.Module):
    def __init__(self, alpha, T, num_classes=100, smoothing=0.1):
        super().__init__()
        self.alpha = alpha
        self.T = T
        self.num_classes = num_classes
        self.smoothing = smoothing

    def forward(self, student_logits, teacher_logits, target):
        soft = F.kl_div(F.log_softmax(student_logits / self.T, dim=1), F.softmax(teacher_logits / self.T, dim=1),
                        reduction="batchmean") * self.T * self.T
        smooth = torch.full((target.size(0), self.num_classes), self.smoothing / (self.num_classes - 1))  # expect: DEV013
        smooth.scatter_(1, target.unsqueeze(1), 1.0 - self.smoothing)
        hard = torch.sum(-smooth * F.log_softmax(student_logits, dim=1), dim=1).mean()
        return self.alpha * soft + (1 - self.alpha) * hard


def build(num_classes=100):
    teacher = models.resnet50(num_classes=num_classes)
    student = models.resnet18(num_classes=num_classes)
    for m in (teacher, student):
        m.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        m.maxpool = nn.Identity()
    return teacher, student


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct, total = 0, 0
    confidences = []
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        probs = model(x).softmax(dim=1)
        correct += (probs.argmax(1) == y).sum().item()
        total += y.size(0)
        confidences.append(np.asarray(probs.max(dim=1).values))  # expect: DEV001
    return correct / total, float(np.concatenate(confidences).mean())


def main():
    args = get_args()
    if torch.cuda.is_available():
        device = torch.device("cuda")
    elif torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")

    mean, std = (0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)
    train_tf = transforms.Compose([transforms.RandomCrop(32, 4), transforms.RandomHorizontalFlip(),
                                   transforms.ToTensor(), transforms.Normalize(mean, std)])
    test_tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize(mean, std)])
    train_loader = DataLoader(datasets.CIFAR100("data", True, train_tf, download=True), batch_size=args.bs,
                              shuffle=True, num_workers=args.workers)
    test_loader = DataLoader(datasets.CIFAR100("data", False, test_tf), batch_size=512, num_workers=args.workers)

    teacher, student = build()
    teacher.load_state_dict(torch.load(args.teacher, map_location=torch.device("cpu")))
    teacher.to(device).eval()
    student.to(device)
    criterion = DistillLoss(args.alpha, args.T)
    optimizer = torch.optim.SGD(student.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, [60, 120, 160], 0.2)

    source = Prefetcher(train_loader, device)
    history = []
    for epoch in range(args.epochs):
        student.train()
        for i, (inputs, targets) in enumerate(tqdm(source, desc=f"epoch {epoch}")):
            inputs, targets = inputs.to(device), targets.to(device)
            with torch.no_grad():
                t_logits = teacher(inputs)
            loss = criterion(student(inputs), t_logits, targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()
        acc, conf = evaluate(student, test_loader, device)
        history.append({"epoch": epoch, "acc": acc, "conf": conf})
        print(f"epoch {epoch}: student acc {acc:.4f}, mean confidence {conf:.3f}")
        torch.save(student.state_dict(), "student_r18.pth")
    with open("distill_history.json", "w") as f:
        json.dump(history, f)


if __name__ == "__main__":
    main()
