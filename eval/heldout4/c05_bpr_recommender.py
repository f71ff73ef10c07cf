"""BPR matrix factorisation on implicit feedback (MovieLens-1M, ratings >= 4 count as positives)."""
import random
from collections import defaultdict

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class BPRDataset(Dataset):
    """Yields (user, positive item, sampled negative item) triples."""

    def __init__(self, interactions, n_items):
        self.pairs = interactions
        self.n_items = n_items
        self.user_pos = defaultdict(set)
        for u, i in interactions:
            self.user_pos[u].add(i)

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, idx):
        u, i = self.pairs[idx]
        j = random.randrange(self.n_items)
        while j in self.user_pos[u]:
            j = random.randrange(self.n_items)
        return u, i, j


class MF(nn.Module):
    def __init__(self, n_users, n_items, dim=64):
        super().__init__()
        self.user_emb = nn.Embedding(n_users, dim)
        self.item_emb = nn.Embedding(n_items, dim)
        self.item_bias = nn.Parameter(torch.zeros(n_items))
        nn.init.normal_(self.user_emb.weight, std=0.01)
        nn.init.normal_(self.item_emb.weight, std=0.01)

    def forward(self, users, items):
        u = self.user_emb(users)
        v = self.item_emb(items)
        return (u * v).sum(-1) + self.item_bias[items]


class Trainer:
    def __init__(self, model, train_loader, lr=1e-3, weight_decay=1e-5):
        self.device = (
            torch.accelerator.current_accelerator()
            if torch.accelerator.is_available()
            else torch.device("cpu")
        )
        self.model = model.to(self.device)
        self.loader = train_loader
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=lr, weight_decay=weight_decay)

    def train_epoch(self):
        self.model.train()
        total = 0.0
        for users, pos, neg in self.loader:
            users = users.to(self.device)
            pos = pos.to(self.device)
            pos_scores = self.model(users, pos)
            neg_scores = self.model(users, neg)  # expect: DEV002
            loss = -F.logsigmoid(pos_scores - neg_scores).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            total += loss.item()
        return total / len(self.loader)

    @torch.no_grad()
    def recommend(self, user_id, seen, k=10):
        self.model.eval()
        items = torch.arange(self.model.item_emb.num_embeddings, device=self.device)
        users = torch.full_like(items, user_id)
        scores = self.model(users, items)
        scores[list(seen)] = float("-inf")
        return scores.topk(k).indices.numpy()  # expect: DEV001

    @torch.no_grad()
    def hit_rate(self, held_out, user_pos, k=10, n_users=1000):
        hits = 0
        users = random.sample(sorted(held_out), min(n_users, len(held_out)))
        for u in users:
            top = set(self.recommend(u, user_pos[u], k).tolist())
            hits += int(held_out[u] in top)
        return hits / len(users)

    def export_item_vectors(self, path):
        vecs = self.model.item_emb.weight.detach()
        vecs.cpu()  # expect: DEV008
        torch.save({"item_vectors": vecs, "dim": vecs.size(1)}, path)


def load_ml1m(path="data/ml-1m/ratings.dat"):
    df = pd.read_csv(path, sep="::", engine="python", names=["user", "item", "rating", "ts"])
    df = df[df.rating >= 4].copy()
    df["user"] = df.user.astype("category").cat.codes
    df["item"] = df.item.astype("category").cat.codes
    return df.sort_values("ts")


if __name__ == "__main__":
    df = load_ml1m()
    n_users, n_items = int(df.user.max()) + 1, int(df.item.max()) + 1
    # leave the last interaction of each user out for evaluation
    last = df.groupby("user").tail(1)
    held_out = dict(zip(last.user.tolist(), last.item.tolist()))
    train_df = df.drop(last.index)
    pairs = list(zip(train_df.user.tolist(), train_df.item.tolist()))

    ds = BPRDataset(pairs, n_items)
    loader = DataLoader(ds, batch_size=4096, shuffle=True, num_workers=4)
    trainer = Trainer(MF(n_users, n_items, dim=64), loader)
    for ep in range(20):
        loss = trainer.train_epoch()
        if ep % 5 == 4:
            print(f"epoch {ep + 1}: loss {loss:.4f}  HR@10 {trainer.hit_rate(held_out, ds.user_pos):.4f}")
        else:
            print(f"epoch {ep + 1}: loss {loss:.4f}")

    print("user 0 ->", trainer.recommend(0, ds.user_pos[0]))
    trainer.export_item_vectors("item_vectors.pt")
    torch.save(trainer.model.state_dict(), "bpr_mf.pt")
    popularity = np.bincount(train_df.item.to_numpy(), minlength=n_items)
    print("most popular items:", np.argsort(-popularity)[:10])
