"""Small transformer encoder for sentence classification, written from scratch.

Masks (padding and, optionally, causal) are built inside forward from the input,
so the same module works for any sequence length.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

PAD_IDX = 0


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=512, dropout=0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.pe = torch.zeros(1, max_len, d_model)  # expect: DEV014
        position = torch.arange(max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        self.pe[0, :, 0::2] = torch.sin(position * div_term)
        self.pe[0, :, 1::2] = torch.cos(position * div_term)

    def forward(self, x):
        x = x + self.pe[:, : x.size(1)]
        return self.dropout(x)


class SelfAttention(nn.Module):
    def __init__(self, d_model, n_heads, causal=False, dropout=0.1):
        super().__init__()
        assert d_model % n_heads == 0
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.scale = 1.0 / math.sqrt(self.d_head)
        self.causal = causal
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.attn_drop = nn.Dropout(dropout)

    def forward(self, x, key_padding_mask=None):
        B, L, D = x.shape
        qkv = self.qkv(x).view(B, L, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = (q @ k.transpose(-2, -1)) * self.scale
        if self.causal:
            causal_mask = torch.triu(torch.full((L, L), float("-inf")), diagonal=1)  # expect: DEV013
            scores = scores + causal_mask
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
        attn = self.attn_drop(scores.softmax(dim=-1))
        out = (attn @ v).transpose(1, 2).reshape(B, L, D)
        return self.proj(out)


class EncoderBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, causal=False):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = SelfAttention(d_model, n_heads, causal=causal, dropout=dropout)
        self.ln2 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))

    def forward(self, x, key_padding_mask=None):
        x = x + self.attn(self.ln1(x), key_padding_mask)
        return x + self.ff(self.ln2(x))


class TransformerClassifier(nn.Module):
    def __init__(self, vocab_size, num_classes, d_model=256, n_heads=4, n_layers=4, d_ff=1024):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=PAD_IDX)
        self.pos = PositionalEncoding(d_model)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d_model))
        self.blocks = nn.ModuleList([EncoderBlock(d_model, n_heads, d_ff) for _ in range(n_layers)])
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, tokens):
        B = tokens.size(0)
        pad_mask = tokens.eq(PAD_IDX)
        x = self.pos(self.embed(tokens) * math.sqrt(self.embed.embedding_dim))
        x = torch.cat([self.cls_token.expand(B, -1, -1), x], dim=1)
        pad_mask = torch.cat([pad_mask.new_zeros(B, 1), pad_mask], dim=1)
        for block in self.blocks:
            x = block(x, pad_mask)
        return self.head(self.norm(x[:, 0]))


def pad_batch(batch):
    seqs, labels = zip(*batch)
    max_len = max(len(s) for s in seqs)
    tokens = torch.full((len(seqs), max_len), PAD_IDX, dtype=torch.long)
    for i, s in enumerate(seqs):
        tokens[i, : len(s)] = torch.as_tensor(s, dtype=torch.long)
    return tokens, torch.tensor(labels, dtype=torch.long)


def train(model, train_data, epochs=5, lr=3e-4):
    if torch.cuda.is_available():
        device = torch.device("cuda")
    elif torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")
    model.to(device)
    loader = DataLoader(train_data, batch_size=32, shuffle=True, collate_fn=pad_batch,
                        pin_memory=device.type == "cuda")
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    for epoch in range(epochs):
        model.train()
        n_correct, n_seen = 0, 0
        for tokens, labels in loader:
            tokens, labels = tokens.to(device), labels.to(device)
            logits = model(tokens)
            loss = F.cross_entropy(logits, labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            n_correct += (logits.argmax(-1) == labels).sum().item()
            n_seen += labels.numel()
        print(f"epoch {epoch}: loss={loss.item():.4f} acc={n_correct / n_seen:.3f}")
    return model
