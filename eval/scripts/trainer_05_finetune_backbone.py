"""Fine-tune a torchvision backbone on an ImageFolder dataset."""
import os
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, models, transforms
from tqdm import tqdm


@dataclass
class Config:
    data_dir: str = "data/flowers"
    num_classes: int = 5
    batch_size: int = 32
    epochs: int = 15
    lr: float = 3e-4
    freeze_epochs: int = 3
    out: str = "finetune.pt"


class FineTuner:
    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.device = torch.device("cuda" if torch.cuda.is_available() else
                                   "mps" if torch.backends.mps.is_available() else "cpu")
        print("Using GPU:", torch.cuda.get_device_name(0))  # expect: DEV011
        if torch.cuda.is_available():
            torch.backends.cudnn.benchmark = True

        backbone = models.resnet50(weights=models.ResNet50_Weights.IMAGENET1K_V2)
        backbone.fc = nn.Sequential(nn.Dropout(0.2), nn.Linear(backbone.fc.in_features, cfg.num_classes))
        self.model = backbone.to(self.device)
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr)
        self.scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, step_size=5, gamma=0.3)
        self.train_loader, self.val_loader = self._loaders()

    def _loaders(self):
        mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
        train_tf = transforms.Compose([
            transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
            transforms.ToTensor(), transforms.Normalize(mean, std)])
        val_tf = transforms.Compose([
            transforms.Resize(256), transforms.CenterCrop(224),
            transforms.ToTensor(), transforms.Normalize(mean, std)])
        train_ds = datasets.ImageFolder(os.path.join(self.cfg.data_dir, "train"), train_tf)
        val_ds = datasets.ImageFolder(os.path.join(self.cfg.data_dir, "val"), val_tf)
        train_loader = DataLoader(train_ds, batch_size=self.cfg.batch_size, shuffle=True,
                                  num_workers=8, pin_memory=True)  # expect: DEV005
        val_loader = DataLoader(val_ds, batch_size=self.cfg.batch_size, num_workers=8)
        return train_loader, val_loader

    def set_backbone_trainable(self, trainable):
        for name, p in self.model.named_parameters():
            if not name.startswith("fc."):
                p.requires_grad = trainable

    def train_epoch(self, epoch):
        self.model.train()
        correct, total, running = 0, 0, 0.0
        pbar = tqdm(self.train_loader, desc=f"epoch {epoch}")
        for images, labels in pbar:
            images = images.to(self.device)
            outputs = self.model(images)
            loss = self.criterion(outputs, labels)  # expect: DEV002
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            running += loss.item() * labels.size(0)
            correct += (outputs.argmax(1) == labels).sum().item()
            total += labels.size(0)
            pbar.set_postfix(loss=running / total, acc=correct / total)
        return running / total, correct / total

    @torch.no_grad()
    def evaluate(self):
        self.model.eval()
        correct, total = 0, 0
        for images, labels in self.val_loader:
            images, labels = images.to(self.device), labels.to(self.device)
            preds = self.model(images).argmax(dim=1)
            correct += (preds == labels).sum().item()
            total += labels.numel()
        return correct / total

    def run(self):
        best = 0.0
        for epoch in range(self.cfg.epochs):
            self.set_backbone_trainable(epoch >= self.cfg.freeze_epochs)
            train_loss, train_acc = self.train_epoch(epoch)
            val_acc = self.evaluate()
            self.scheduler.step()
            print(f"epoch {epoch}: loss {train_loss:.3f} train acc {train_acc:.3f} val acc {val_acc:.3f}")
            if val_acc > best:
                best = val_acc
                torch.save(self.model.state_dict(), self.cfg.out)
        print(f"best val acc {best:.3f}")


if __name__ == "__main__":
    FineTuner(Config()).run()
