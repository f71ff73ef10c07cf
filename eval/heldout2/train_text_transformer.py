"""Sentiment classification (CSV with `text,label` columns) with a small Transformer encoder."""
import argparse
import math
import re
from collections import Counter

import pandas as pd
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


def tokenize(text):
    return re.findall(r"[a-z0-9']+", text.lower())


class TextDataset(Dataset):
    def __init__(self, texts, labels, vocab, max_len=256):
        self.items = []
        for text, label in zip(texts, labels):
            ids = [vocab.get(tok, 1) for tok in tokenize(text)][:max_len] or [1]
            self.items.append((torch.tensor(ids, dtype=torch.long), int(label)))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        return self.items[idx]


def collate(batch):
    ids = [b[0] for b in batch]
    labels = torch.tensor([b[1] for b in batch])
    padded = nn.utils.rnn.pad_sequence(ids, batch_first=True, padding_value=0)
    return padded, labels


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=512):
        super().__init__()
        self.pe = torch.zeros(max_len, d_model)  # expect: DEV014
        position = torch.arange(0, max_len).unsqueeze(1).float()
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        self.pe[:, 0::2] = torch.sin(position * div_term)
        self.pe[:, 1::2] = torch.cos(position * div_term)

    def forward(self, x):
        return x + self.pe[: x.size(1)].unsqueeze(0)


class TransformerClassifier(nn.Module):
    def __init__(self, vocab_size, d_model=128, nhead=4, num_layers=2, num_classes=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=0)
        self.pos = PositionalEncoding(d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=256, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers)
        self.fc = nn.Linear(d_model, num_classes)
        self.d_model = d_model

    def forward(self, ids):
        mask = ids == 0
        x = self.embedding(ids) * math.sqrt(self.d_model)
        x = self.pos(x)
        x = self.encoder(x, src_key_padding_mask=mask)
        x = x.masked_fill(mask.unsqueeze(-1), 0.0)
        lengths = (~mask).sum(1, keepdim=True).clamp(min=1)
        return self.fc(x.sum(1) / lengths)


def run_epoch(model, loader, criterion, device, optimizer=None):
    training = optimizer is not None
    model.train(training)
    total_loss, correct, n = 0.0, 0, 0
    for ids, labels in loader:
        ids, labels = ids.to(device), labels.to(device)
        with torch.set_grad_enabled(training):
            logits = model(ids)
            loss = criterion(logits, labels)
        if training:
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        total_loss += loss.item() * labels.size(0)
        correct += (logits.argmax(-1) == labels).sum().item()
        n += labels.size(0)
    return total_loss / n, correct / n


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train-csv", default="train.csv")
    parser.add_argument("--val-csv", default="val.csv")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--min-freq", type=int, default=3)
    args = parser.parse_args()

    device = torch.device("cuda")  # expect: DEV003

    train_df = pd.read_csv(args.train_csv)
    val_df = pd.read_csv(args.val_csv)
    counts = Counter(tok for text in train_df.text for tok in tokenize(text))
    vocab = {"<pad>": 0, "<unk>": 1}
    for tok, c in counts.most_common():
        if c >= args.min_freq:
            vocab[tok] = len(vocab)

    train_ds = TextDataset(train_df.text, train_df.label, vocab)
    val_ds = TextDataset(val_df.text, val_df.label, vocab)
    train_loader = DataLoader(train_ds, batch_size=32, shuffle=True, collate_fn=collate)
    val_loader = DataLoader(val_ds, batch_size=64, collate_fn=collate)

    model = TransformerClassifier(len(vocab)).to(device)
    criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0])).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

    best = 0.0
    for epoch in range(args.epochs):
        tr_loss, tr_acc = run_epoch(model, train_loader, criterion, device, optimizer)
        va_loss, va_acc = run_epoch(model, val_loader, criterion, device)
        print(f"{epoch}: train {tr_loss:.3f}/{tr_acc:.3f}  val {va_loss:.3f}/{va_acc:.3f}")
        if va_acc > best:
            best = va_acc
            torch.save(model.state_dict(), "best.pt")

    model.load_state_dict(torch.load("best.pt"))  # expect: DEV007
    print("best val acc", run_epoch(model, val_loader, criterion, device)[1])


if __name__ == "__main__":
    main()
