"""Keyword spotting on log-mel features with a small transformer encoder.

Variable-length clips are padded by the collate function; the model masks the padding.
"""
import copy
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader


def select_device(preferred=None):
    if preferred:
        return torch.device(preferred)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def pad_collate(batch):
    feats, labels = zip(*batch)
    lengths = torch.tensor([f.size(0) for f in feats])
    padded = nn.utils.rnn.pad_sequence(feats, batch_first=True)
    return padded, lengths, torch.tensor(labels)


class SpecAugment(nn.Module):
    def __init__(self, max_time=20, max_freq=8):
        super().__init__()
        self.max_time = max_time
        self.max_freq = max_freq

    def forward(self, x):
        if not self.training:
            return x
        B, T, F_ = x.shape
        t0 = torch.randint(0, max(T - self.max_time, 1), (B,), device=x.device)
        f0 = torch.randint(0, max(F_ - self.max_freq, 1), (B,), device=x.device)
        t_idx = torch.arange(T).to(x.device)
        f_idx = torch.arange(F_, device=x.device)
        time_mask = (t_idx[None] >= t0[:, None]) & (t_idx[None] < t0[:, None] + self.max_time)
        freq_mask = (f_idx[None] >= f0[:, None]) & (f_idx[None] < f0[:, None] + self.max_freq)
        return x.masked_fill(time_mask[:, :, None] | freq_mask[:, None, :], 0.0)


class KWSTransformer(nn.Module):
    def __init__(self, n_mels=40, d_model=144, n_heads=4, n_layers=4, n_classes=12, max_len=256):
        super().__init__()
        self.augment = SpecAugment()
        self.inp = nn.Linear(n_mels, d_model)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d_model))
        position = torch.arange(max_len + 1).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        table = torch.zeros(max_len + 1, d_model)
        table[:, 0::2] = torch.sin(position * div)
        table[:, 1::2] = torch.cos(position * div)
        self.register_buffer("pos_table", table.unsqueeze(0), persistent=False)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, 4 * d_model, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, n_layers)
        self.head = nn.Linear(d_model, n_classes)

    def forward(self, x, lengths):
        x = self.augment(x)
        B, T, _ = x.shape
        h = self.inp(x)
        h = torch.cat([self.cls_token.expand(B, -1, -1), h], dim=1)
        h = h + self.pos_table[:, : T + 1]
        pad = torch.arange(T, device=x.device)[None, :] >= lengths.to(x.device)[:, None]
        pad = torch.cat([pad.new_zeros(B, 1), pad], dim=1)
        h = self.encoder(h, src_key_padding_mask=pad)
        return self.head(h[:, 0])


class Trainer:
    def __init__(self, model, lr=1e-3, epochs=40, ema_decay=0.999, out_dir="runs/kws"):
        self.device = select_device(os.environ.get("KWS_DEVICE"))
        self.model = model.to(self.device)
        self.ema = copy.deepcopy(self.model).eval()
        self.ema_decay = ema_decay
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr, weight_decay=0.05)
        self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer, T_max=epochs)
        self.epochs = epochs
        self.use_cuda = self.device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_cuda)
        self.out_dir = out_dir

    @torch.no_grad()
    def update_ema(self):
        for ema_p, p in zip(self.ema.parameters(), self.model.parameters()):
            ema_p.mul_(self.ema_decay).add_(p.detach(), alpha=1 - self.ema_decay)

    def train_epoch(self, loader):
        self.model.train()
        if self.use_cuda:
            torch.cuda.reset_peak_memory_stats()
        total, n = 0.0, 0
        for feats, lengths, labels in loader:
            feats, labels = feats.to(self.device), labels.to(self.device)
            lengths = lengths.to(self.device)
            with torch.amp.autocast("cuda", enabled=self.use_cuda):
                logits = self.model(feats, lengths)
                loss = F.cross_entropy(logits, labels, label_smoothing=0.1)
            self.optimizer.zero_grad(set_to_none=True)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.update_ema()
            total += loss.item() * labels.size(0)
            n += labels.size(0)
        if self.use_cuda:
            print(f"peak memory {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")
        return total / n

    @torch.no_grad()
    def evaluate(self, loader, model=None):
        model = model or self.ema
        correct, n = 0, 0
        for feats, lengths, labels in loader:
            logits = model(feats.to(self.device), lengths.to(self.device))
            correct += (logits.argmax(-1).cpu() == labels).sum().item()
            n += labels.size(0)
        return correct / n

    def save(self, path):
        torch.save({"model": self.model.state_dict(), "ema": self.ema.state_dict()}, path)

    def load(self, path):
        state = torch.load(path, map_location=lambda storage, loc: storage)
        self.model.load_state_dict(state["model"])
        self.ema.load_state_dict(state["ema"])

    def fit(self, train_ds, val_ds):
        os.makedirs(self.out_dir, exist_ok=True)
        train_loader = DataLoader(train_ds, batch_size=128, shuffle=True, collate_fn=pad_collate,
                                  num_workers=4, pin_memory=self.use_cuda)
        val_loader = DataLoader(val_ds, batch_size=256, collate_fn=pad_collate, num_workers=4)
        best = 0.0
        for epoch in range(self.epochs):
            loss = self.train_epoch(train_loader)
            acc = self.evaluate(val_loader)
            self.scheduler.step()
            print(f"epoch {epoch}: loss {loss:.4f} ema acc {acc:.4f}")
            if acc > best:
                best = acc
                self.save(os.path.join(self.out_dir, "best.pt"))
        self.load(os.path.join(self.out_dir, "best.pt"))
        return best
