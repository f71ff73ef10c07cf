"""Bag-of-embeddings / BiGRU text classifier on a TSV corpus (label \t text).

Uses every visible GPU through nn.DataParallel when there is more than one.
"""
import argparse
import collections
import csv
import os
import random

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

PAD, UNK = 0, 1


def build_vocab(rows, min_freq=2):
    counter = collections.Counter(tok for _, text in rows for tok in text.lower().split())
    itos = ["<pad>", "<unk>"] + [w for w, c in counter.most_common() if c >= min_freq]
    return {w: i for i, w in enumerate(itos)}


class TsvDataset(Dataset):
    def __init__(self, path, vocab=None, max_len=256):
        with open(path, newline="", encoding="utf-8") as f:
            self.rows = [(int(r[0]), r[1]) for r in csv.reader(f, delimiter="\t")]
        self.vocab = vocab or build_vocab(self.rows)
        self.max_len = max_len

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, idx):
        label, text = self.rows[idx]
        ids = [self.vocab.get(t, UNK) for t in text.lower().split()][: self.max_len]
        return ids or [UNK], label


def collate(batch):
    lengths = torch.tensor([len(ids) for ids, _ in batch], dtype=torch.long)
    tokens = torch.full((len(batch), int(lengths.max())), PAD, dtype=torch.long)
    for i, (ids, _) in enumerate(batch):
        tokens[i, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    labels = torch.tensor([y for _, y in batch], dtype=torch.long)
    return tokens, lengths, labels


class GRUClassifier(nn.Module):
    def __init__(self, vocab_size, n_classes, emb=200, hidden=256):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, emb, padding_idx=PAD)
        self.rnn = nn.GRU(emb, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, n_classes)

    def forward(self, tokens, lengths):
        x = self.emb(tokens)
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        _, h = self.rnn(packed)
        h = torch.cat([h[-2], h[-1]], dim=-1)
        return self.fc(h)


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def run_epoch(model, loader, device, criterion, optimizer=None):
    training = optimizer is not None
    model.train(training)
    total_loss, correct, seen = 0.0, 0, 0
    for tokens, lengths, labels in loader:
        tokens = tokens.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        with torch.set_grad_enabled(training):
            logits = model(tokens, lengths)
            loss = criterion(logits, labels)
        if training:
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        total_loss += loss.item() * labels.size(0)
        correct += (logits.argmax(-1) == labels).sum().item()
        seen += labels.size(0)
    return total_loss / seen, correct / seen


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--train", required=True)
    p.add_argument("--valid", required=True)
    p.add_argument("--n-classes", type=int, default=2)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--init-from", default="")
    p.add_argument("--out", default="gru_cls.pt")
    p.add_argument("--seed", type=int, default=13)
    args = p.parse_args()
    set_seed(args.seed)

    if torch.cuda.is_available():
        device = torch.device("cuda")
    elif torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")
    for i in range(torch.cuda.device_count()):
        print(f"GPU {i}: {torch.cuda.get_device_name(i)}")

    train_set = TsvDataset(args.train)
    valid_set = TsvDataset(args.valid, vocab=train_set.vocab)
    loader_kw = dict(batch_size=args.batch_size, collate_fn=collate,
                     num_workers=4 if torch.cuda.is_available() else 0,
                     pin_memory=torch.cuda.is_available())
    train_loader = DataLoader(train_set, shuffle=True, **loader_kw)
    valid_loader = DataLoader(valid_set, shuffle=False, **loader_kw)

    model = GRUClassifier(len(train_set.vocab), args.n_classes)
    if args.init_from:
        state = torch.load(args.init_from, map_location="cpu", weights_only=True)
        missing, unexpected = model.load_state_dict(state, strict=False)
        print(f"loaded {args.init_from}: {len(missing)} missing, {len(unexpected)} unexpected")
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    model.to(device)

    counts = np.bincount([y for y, _ in train_set.rows], minlength=args.n_classes)
    weights = torch.tensor(counts.sum() / (counts + 1), dtype=torch.float32)
    criterion = nn.CrossEntropyLoss(weight=weights)
    criterion.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)

    best = 0.0
    for epoch in range(args.epochs):
        tr_loss, tr_acc = run_epoch(model, train_loader, device, criterion, optimizer)
        va_loss, va_acc = run_epoch(model, valid_loader, device, criterion)
        print(f"epoch {epoch}: train {tr_loss:.4f}/{tr_acc:.3f}  valid {va_loss:.4f}/{va_acc:.3f}")
        if va_acc > best:
            best = va_acc
            raw = model.module if isinstance(model, nn.DataParallel) else model
            torch.save(raw.state_dict(), args.out)


if __name__ == "__main__":
    main()
