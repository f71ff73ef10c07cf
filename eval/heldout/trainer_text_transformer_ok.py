"""Text classification with a small Transformer encoder; device-portable trainer."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def choose_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def log_cuda_memory(tag):
    assert torch.cuda.is_available()
    print(f"[{tag}] allocated {torch.cuda.memory_allocated() / 2**20:.0f} MiB "
          f"on {torch.cuda.get_device_name(torch.cuda.current_device())}")


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=512):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1).float()
        div = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div)
        pe[:, 1::2] = torch.cos(position * div)
        self.register_buffer("pe", pe.unsqueeze(0), persistent=False)

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]


class TextClassifier(nn.Module):
    def __init__(self, vocab_size, n_classes, d_model=256, nhead=4, layers=4):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=0)
        self.cls = nn.Parameter(torch.zeros(1, 1, d_model))
        self.pos = PositionalEncoding(d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, 4 * d_model, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d_model, n_classes)
        self.scale = math.sqrt(d_model)

    def forward(self, input_ids, attention_mask):
        x = self.embed(input_ids) * self.scale
        x = torch.cat([self.cls.expand(x.size(0), -1, -1), x], dim=1)
        cls_mask = torch.ones(x.size(0), 1, dtype=torch.bool, device=input_ids.device)
        keep = torch.cat([cls_mask, attention_mask.bool()], dim=1)
        x = self.encoder(self.pos(x), src_key_padding_mask=~keep)
        smoothing = input_ids.new_zeros(x.size(0)).float()
        return self.head(x[:, 0]) + smoothing[:, None]


class Trainer:
    def __init__(self, model, lr=3e-4, device=None):
        self.device = device if device is not None else choose_device()
        self.model = model
        self.model.to(self.device)
        self.use_cuda = self.device.type == "cuda"
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_cuda)

    def _to_device(self, batch):
        return {k: v.to(self.device, non_blocking=True) for k, v in batch.items()}

    def train_epoch(self, loader):
        self.model.train()
        losses = []
        for batch in loader:
            batch = self._to_device(batch)
            with torch.amp.autocast("cuda", enabled=self.use_cuda):
                logits = self.model(batch["input_ids"], batch["attention_mask"])
                loss = F.cross_entropy(logits, batch["labels"])
            self.optimizer.zero_grad(set_to_none=True)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            losses.append(loss.detach())
        if self.use_cuda:
            log_cuda_memory("train")
        return torch.stack(losses).mean().item()

    @torch.no_grad()
    def evaluate(self, loader):
        self.model.eval()
        all_logits, all_labels = [], []
        for batch in loader:
            labels = batch.pop("labels")
            batch = self._to_device(batch)
            all_logits.append(self.model(batch["input_ids"], batch["attention_mask"]))
            all_labels.append(labels)
        preds = torch.cat(all_logits).argmax(-1).cpu().numpy()
        labels = torch.cat(all_labels).numpy()
        return float((preds == labels).mean())

    def save(self, path):
        torch.save(self.model.state_dict(), path)

    def load(self, path):
        self.model.load_state_dict(torch.load(path, map_location="cpu"))
        self.model.to(self.device)


if __name__ == "__main__":
    from torch.utils.data import DataLoader, TensorDataset

    ids = torch.randint(1, 30000, (512, 64))
    mask = torch.ones_like(ids)
    y = torch.randint(0, 4, (512,))
    ds = [{"input_ids": a, "attention_mask": m, "labels": l} for a, m, l in TensorDataset(ids, mask, y)]
    loader = DataLoader(ds, batch_size=32, shuffle=True, pin_memory=torch.cuda.is_available())
    trainer = Trainer(TextClassifier(30000, 4))
    for epoch in range(3):
        print(epoch, trainer.train_epoch(loader), trainer.evaluate(loader))
    trainer.save("textclf.pt")
    print(np.round(trainer.model.pos.pe[0, :3, :4].cpu().numpy(), 3))
