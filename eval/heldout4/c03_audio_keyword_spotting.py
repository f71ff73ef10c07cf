"""Keyword spotting on Speech Commands v0.02: log-mel spectrogram + small CNN.

Based on the torchaudio tutorial, with the feature extraction moved inside the model so it
runs on the same device as the network.
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchaudio
from torch.utils.data import DataLoader
from torchaudio.datasets import SPEECHCOMMANDS

# Pick the best available backend.
if torch.cuda.is_available():
    device = torch.device("cuda")
elif torch.backends.mps.is_available():
    device = torch.device("mps")
else:
    device = torch.device("cpu")
print("Using", device)


class SubsetSC(SPEECHCOMMANDS):
    def __init__(self, subset):
        super().__init__("./data", download=True)

        def load_list(filename):
            filepath = os.path.join(self._path, filename)
            with open(filepath) as f:
                return [os.path.normpath(os.path.join(self._path, line.strip())) for line in f]

        if subset == "validation":
            self._walker = load_list("validation_list.txt")
        elif subset == "testing":
            self._walker = load_list("testing_list.txt")
        else:
            excludes = set(load_list("validation_list.txt") + load_list("testing_list.txt"))
            self._walker = [w for w in self._walker if w not in excludes]


train_set = SubsetSC("training")
test_set = SubsetSC("testing")
labels = sorted({datapoint[2] for datapoint in test_set})


def collate_fn(batch, num_samples=16000):
    waves, targets = [], []
    for waveform, _, label, *_ in batch:
        waveform = F.pad(waveform, (0, max(0, num_samples - waveform.size(-1))))[..., :num_samples]
        waves.append(waveform)
        targets.append(labels.index(label))
    return torch.stack(waves), torch.tensor(targets)


class SpecAugment(nn.Module):
    def __init__(self, time_width=20, freq_drop=0.1):
        super().__init__()
        self.time_width = time_width
        self.freq_drop = freq_drop

    def forward(self, spec):
        if not self.training:
            return spec
        B, _, n_freq, n_time = spec.shape
        # time masking: one random block per example
        width = torch.randint(0, self.time_width + 1, (B, 1, 1, 1), device=spec.device)
        start = (torch.rand(B, 1, 1, 1, device=spec.device) * (n_time - width)).long()
        t = torch.arange(n_time, device=spec.device).view(1, 1, 1, -1)
        spec = spec.masked_fill((t >= start) & (t < start + width), 0.0)
        # drop individual mel bins
        keep = (torch.rand(B, 1, n_freq, 1) > self.freq_drop).to(spec.dtype)  # expect: DEV013
        return spec * keep


class KWSNet(nn.Module):
    def __init__(self, n_classes, sample_rate=16000, n_mels=64, mean=-6.0, std=4.5):
        super().__init__()
        self.melspec = torchaudio.transforms.MelSpectrogram(
            sample_rate=sample_rate, n_fft=480, hop_length=160, n_mels=n_mels
        )
        # dataset statistics of the log-mel features
        self.register_buffer("mean", torch.tensor(mean))
        self.register_buffer("std", torch.tensor(std))
        self.augment = SpecAugment()

        def block(c_in, c_out):
            return nn.Sequential(
                nn.Conv2d(c_in, c_out, 3, padding=1, bias=False),
                nn.BatchNorm2d(c_out),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(2),
            )

        self.features = nn.Sequential(block(1, 32), block(32, 64), block(64, 128))
        self.head = nn.Linear(128, n_classes)

    def forward(self, wav):
        spec = torch.log(self.melspec(wav) + 1e-6)
        spec = (spec - self.mean) / self.std
        spec = self.augment(spec)
        x = self.features(spec)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


train_loader = DataLoader(
    train_set,
    batch_size=256,
    shuffle=True,
    collate_fn=collate_fn,
    num_workers=4,
    pin_memory=True,  # expect: DEV005
)
test_loader = DataLoader(
    test_set,
    batch_size=256,
    shuffle=False,
    collate_fn=collate_fn,
    num_workers=4,
    pin_memory=device.type == "cuda",
)

model = KWSNet(n_classes=len(labels))
model.to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3, total_steps=10 * len(train_loader))


def train(epoch, log_interval=50):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data = data.to(device)
        target = target.to(device)
        output = model(data)
        loss = F.cross_entropy(output, target, label_smoothing=0.1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if batch_idx % log_interval == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(train_loader.dataset)}]\tLoss: {loss.item():.6f}")


def test(epoch):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data = data.to(device)
            target = target.to(device)
            pred = model(data).argmax(dim=-1)
            correct += pred.eq(target).sum().item()
    print(f"\nTest Epoch: {epoch}\tAccuracy: {correct}/{len(test_loader.dataset)} "
          f"({100.0 * correct / len(test_loader.dataset):.1f}%)\n")


def predict(waveform):
    model.eval()
    with torch.no_grad():
        out = model(waveform.unsqueeze(0).to(device))
    return labels[out.argmax(dim=-1).item()]


for epoch in range(1, 11):
    train(epoch)
    test(epoch)

waveform, sample_rate, utterance, *_ = test_set[-1]
print(f"Expected: {utterance}. Predicted: {predict(waveform)}.")
torch.save(model.state_dict(), "kws_cnn.pt")
