"""Writing your own layers: input normalisation and Gaussian-noise augmentation
inside the model, so that the exported model takes raw [0, 1] images.

We fine-tune a ResNet-18 on a folder of flower photos.
"""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, models, transforms

device = torch.device(
    "cuda" if torch.cuda.is_available()
    else "mps" if torch.backends.mps.is_available()
    else "cpu"
)


class Normalize(nn.Module):
    """(x - mean) / std with ImageNet statistics."""

    def __init__(self, mean, std):
        super().__init__()
        self.mean = torch.tensor(mean).view(1, 3, 1, 1)  # expect: DEV014
        self.register_buffer("std", torch.tensor(std).view(1, 3, 1, 1))

    def forward(self, x):
        return (x - self.mean) / self.std


class GaussianNoise(nn.Module):
    """Adds N(0, sigma^2) noise during training only."""

    def __init__(self, sigma=0.05):
        super().__init__()
        self.sigma = sigma

    def forward(self, x):
        if self.training and self.sigma > 0:
            noise = torch.randn(x.size()) * self.sigma  # expect: DEV013
            return x + noise
        return x


class Cutout(nn.Module):
    """Zeroes a random square in every image (works on any device)."""

    def __init__(self, size=16):
        super().__init__()
        self.size = size

    def forward(self, x):
        if not self.training:
            return x
        mask = torch.ones_like(x)
        h, w = x.shape[-2:]
        cy, cx = torch.randint(0, h, (1,)).item(), torch.randint(0, w, (1,)).item()
        mask[..., max(cy - self.size // 2, 0):cy + self.size // 2, max(cx - self.size // 2, 0):cx + self.size // 2] = 0
        return x * mask


backbone = models.resnet18(weights="IMAGENET1K_V1")
backbone.fc = nn.Linear(backbone.fc.in_features, 5)
model = nn.Sequential(
    Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    GaussianNoise(0.05),
    Cutout(32),
    backbone,
).to(device)

tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.ToTensor()])
train_ds = datasets.ImageFolder("data/flowers/train", transform=tf)
train_loader = DataLoader(train_ds, batch_size=32, shuffle=True, num_workers=4,
                          pin_memory=torch.cuda.is_available())

criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

for epoch in range(10):
    model.train()
    correct = seen = 0
    for images, labels in train_loader:
        images, labels = images.to(device), labels.to(device)
        logits = model(images)
        loss = criterion(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        correct += (logits.argmax(1) == labels).sum().item()
        seen += labels.numel()
    print(f"epoch {epoch}: loss {loss.item():.3f}, train acc {correct / seen:.3f}")

model.eval()
torch.save(model.state_dict(), "flowers_resnet18.pt")
