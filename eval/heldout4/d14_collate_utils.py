"""Data-loading utilities for variable-length token sequences.

- pad_collate: pads a list of (tokens, label) samples and returns lengths
- BucketBatchSampler: groups samples of similar length to reduce padding
- move_to_device: recursively moves tensors in nested batches
- CUDAPrefetcher: overlaps host->device copies with compute on a side stream
"""
import random
from collections.abc import Mapping, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence
from torch.utils.data import DataLoader, Dataset, Sampler


class TokenDataset(Dataset):
    def __init__(self, sequences, labels):
        self.sequences = [torch.as_tensor(s, dtype=torch.long) for s in sequences]
        self.labels = labels

    def __len__(self):
        return len(self.sequences)

    def __getitem__(self, idx):
        return self.sequences[idx], self.labels[idx]


def pad_collate(batch, pad_value=0):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    tokens = pad_sequence(seqs, batch_first=True, padding_value=pad_value)
    mask = torch.arange(tokens.size(1))[None, :] < lengths[:, None]
    return {"tokens": tokens, "lengths": lengths, "mask": mask,
            "labels": torch.tensor(labels, dtype=torch.long)}


class BucketBatchSampler(Sampler):
    def __init__(self, lengths, batch_size, shuffle=True, bucket_mult=50):
        self.lengths = lengths
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.bucket_size = batch_size * bucket_mult

    def __iter__(self):
        idx = list(range(len(self.lengths)))
        if self.shuffle:
            random.shuffle(idx)
        batches = []
        for i in range(0, len(idx), self.bucket_size):
            bucket = sorted(idx[i:i + self.bucket_size], key=lambda j: self.lengths[j])
            batches += [bucket[k:k + self.batch_size] for k in range(0, len(bucket), self.batch_size)]
        if self.shuffle:
            random.shuffle(batches)
        return iter(batches)

    def __len__(self):
        return (len(self.lengths) + self.batch_size - 1) // self.batch_size


def move_to_device(obj, device, non_blocking=False):
    if torch.is_tensor(obj):
        return obj.to(device, non_blocking=non_blocking)
    if isinstance(obj, Mapping):
        return {k: move_to_device(v, device, non_blocking) for k, v in obj.items()}
    if isinstance(obj, Sequence) and not isinstance(obj, str):
        return type(obj)(move_to_device(v, device, non_blocking) for v in obj)
    return obj


class CUDAPrefetcher:
    """Wraps a loader; on CUDA the next batch is copied while the current one is used."""

    def __init__(self, loader, device):
        self.loader = loader
        self.device = device
        self.use_cuda = device.type == "cuda"
        self.stream = torch.cuda.Stream(device) if self.use_cuda else None

    def __iter__(self):
        if not self.use_cuda:
            for batch in self.loader:
                yield move_to_device(batch, self.device)
        else:
            batches = iter(self.loader)
            nxt = next(batches, None)
            if nxt is not None:
                with torch.cuda.stream(self.stream):
                    nxt = move_to_device(nxt, self.device, non_blocking=True)
            while nxt is not None:
                torch.cuda.current_stream(self.device).wait_stream(self.stream)
                batch = nxt
                for v in batch.values():
                    v.record_stream(torch.cuda.current_stream(self.device))
                nxt = next(batches, None)
                if nxt is not None:
                    with torch.cuda.stream(self.stream):
                        nxt = move_to_device(nxt, self.device, non_blocking=True)
                yield batch


class LSTMClassifier(nn.Module):
    def __init__(self, vocab_size, n_classes, emb=128, hidden=256):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, emb, padding_idx=0)
        self.lstm = nn.LSTM(emb, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, n_classes)

    def forward(self, tokens, lengths, mask):
        packed = pack_padded_sequence(self.embed(tokens), lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=tokens.size(1))
        m = mask.unsqueeze(-1).to(out.dtype)
        pooled = (out * m).sum(1) / m.sum(1).clamp(min=1.0)
        return self.out(pooled)


def demo(sequences, labels, vocab_size, n_classes, epochs=3):
    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
    ds = TokenDataset(sequences, labels)
    sampler = BucketBatchSampler([len(s) for s in sequences], batch_size=32)
    loader = DataLoader(ds, batch_sampler=sampler, collate_fn=pad_collate, num_workers=2,
                        pin_memory=device.type == "cuda", persistent_workers=True)
    model = LSTMClassifier(vocab_size, n_classes).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        total = 0.0
        for batch in CUDAPrefetcher(loader, device):
            logits = model(batch["tokens"], batch["lengths"], batch["mask"])
            loss = F.cross_entropy(logits, batch["labels"])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        print(f"epoch {epoch}: {total / len(loader):.4f}")
    return model
