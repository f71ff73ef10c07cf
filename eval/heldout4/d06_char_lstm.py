"""Character-level LSTM language model (tiny-shakespeare style).

usage: python d06_char_lstm.py input.txt --epochs 20
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


def get_device():
    if torch.cuda.is_available():  # expect: DEV004
        return torch.device("cuda")
    else:
        return torch.device("cpu")


class CharDataset(Dataset):
    def __init__(self, text, seq_len):
        chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(chars)}
        self.itos = {i: c for c, i in self.stoi.items()}
        self.data = torch.tensor([self.stoi[c] for c in text], dtype=torch.long)
        self.seq_len = seq_len

    @property
    def vocab_size(self):
        return len(self.stoi)

    def __len__(self):
        return (len(self.data) - 1) // self.seq_len

    def __getitem__(self, idx):
        start = idx * self.seq_len
        chunk = self.data[start:start + self.seq_len + 1]
        return chunk[:-1], chunk[1:]


class CharLSTM(nn.Module):
    def __init__(self, vocab_size, embed_dim=64, hidden_size=256, num_layers=2, dropout=0.3):
        super().__init__()
        self.num_layers = num_layers
        self.hidden_size = hidden_size
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.lstm = nn.LSTM(embed_dim, hidden_size, num_layers, dropout=dropout, batch_first=True)
        self.fc = nn.Linear(hidden_size, vocab_size)
        # default initial state when the caller does not pass one
        self.h0 = torch.zeros(num_layers, 1, hidden_size)  # expect: DEV014

    def forward(self, x, hidden=None):
        emb = self.embed(x)
        if hidden is None:
            h = self.h0.expand(-1, x.size(0), -1).contiguous()
            hidden = (h, torch.zeros_like(h))
        out, hidden = self.lstm(emb, hidden)
        return self.fc(out), hidden

    def init_hidden(self, batch_size):
        weight = next(self.parameters())
        return (weight.new_zeros(self.num_layers, batch_size, self.hidden_size),
                weight.new_zeros(self.num_layers, batch_size, self.hidden_size))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("text_file")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seq-len", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--temperature", type=float, default=0.8)
    args = parser.parse_args()

    with open(args.text_file, encoding="utf-8") as f:
        text = f.read()

    device = get_device()
    ds = CharDataset(text, args.seq_len)
    loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True, drop_last=True)

    model = CharLSTM(ds.vocab_size).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)

    for epoch in range(args.epochs):
        model.train()
        total_loss = 0.0
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            hidden = model.init_hidden(x.size(0))
            logits, hidden = model(x, hidden)
            loss = F.cross_entropy(logits.reshape(-1, ds.vocab_size), y.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
            total_loss += loss.item()
        avg = total_loss / len(loader)
        print(f"epoch {epoch + 1:3d} | loss {avg:.3f} | ppl {math.exp(avg):.1f}")

    torch.save({"model": model.state_dict(), "stoi": ds.stoi}, "char_lstm.pt")

    # ---- sample some text ----
    model.eval()
    prime = "ROMEO:"
    out_chars = list(prime)
    with torch.no_grad():
        hidden = model.init_hidden(1)
        idx = torch.tensor([[ds.stoi[c] for c in prime]], device=device)
        logits, hidden = model(idx, hidden)
        for _ in range(500):
            probs = F.softmax(logits[0, -1] / args.temperature, dim=-1)
            next_id = torch.multinomial(probs, 1).item()
            out_chars.append(ds.itos[next_id])
            x = torch.tensor([[next_id]])
            logits, hidden = model(x, hidden)  # expect: DEV006
    print("".join(out_chars))


if __name__ == "__main__":
    main()
