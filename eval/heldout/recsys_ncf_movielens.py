"""Neural Collaborative Filtering (NeuMF) on MovieLens-1M ratings."""
import argparse

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class RatingsDataset(Dataset):
    def __init__(self, df):
        self.users = torch.tensor(df["user"].values, dtype=torch.long)
        self.items = torch.tensor(df["item"].values, dtype=torch.long)
        self.ratings = torch.tensor(df["rating"].values, dtype=torch.float32)

    def __len__(self):
        return len(self.ratings)

    def __getitem__(self, i):
        return {"user": self.users[i], "item": self.items[i], "rating": self.ratings[i]}


class NeuMF(nn.Module):
    def __init__(self, n_users, n_items, dim=32, layers=(64, 32, 16)):
        super().__init__()
        self.gmf_user = nn.Embedding(n_users, dim)
        self.gmf_item = nn.Embedding(n_items, dim)
        self.mlp_user = nn.Embedding(n_users, dim)
        self.mlp_item = nn.Embedding(n_items, dim)
        mlp, d = [], dim * 2
        for h in layers:
            mlp += [nn.Linear(d, h), nn.ReLU()]
            d = h
        self.mlp = nn.Sequential(*mlp)
        self.out = nn.Linear(dim + d, 1)

    def forward(self, user, item):
        gmf = self.gmf_user(user) * self.gmf_item(item)
        mlp = self.mlp(torch.cat([self.mlp_user(user), self.mlp_item(item)], dim=-1))
        return self.out(torch.cat([gmf, mlp], dim=-1)).squeeze(-1)


def train_epoch(model, loader, optimizer, device):
    model.train()
    total = 0.0
    for batch in loader:
        users = batch["user"].to(device)
        items = batch["item"].to(device)
        ratings = batch["rating"].float()
        pred = model(users, items)
        loss = F.mse_loss(pred, ratings)  # expect: DEV002
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item() * len(ratings)
    return total / len(loader.dataset)


def predict(model, loader, device):
    model.eval()
    preds = []
    with torch.no_grad():
        for batch in loader:
            users = batch["user"].to(device)
            items = batch["item"].to(device)
            preds.append(model(users, items))
    return np.concatenate([p.numpy() for p in preds])  # expect: DEV001


def rmse(pred, target):
    return float(np.sqrt(np.mean((pred - target) ** 2)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ratings", default="ml-1m/ratings.dat")
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--bs", type=int, default=1024)
    ap.add_argument("--dim", type=int, default=32)
    args = ap.parse_args()

    torch.cuda.set_device(args.gpu)  # expect: DEV011
    device = torch.device(f"cuda:{args.gpu}")  # expect: DEV003

    df = pd.read_csv(args.ratings, sep="::", engine="python", names=["user", "item", "rating", "ts"])
    df["user"] = df["user"].astype("category").cat.codes
    df["item"] = df["item"].astype("category").cat.codes
    df = df.sample(frac=1.0, random_state=0)
    n_test = len(df) // 10
    test_df, train_df = df.iloc[:n_test], df.iloc[n_test:]

    train_loader = DataLoader(RatingsDataset(train_df), batch_size=args.bs, shuffle=True)
    test_loader = DataLoader(RatingsDataset(test_df), batch_size=4096)

    model = NeuMF(df["user"].max() + 1, df["item"].max() + 1, dim=args.dim).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(args.epochs):
        train_loss = train_epoch(model, train_loader, optimizer, device)
        test_pred = predict(model, test_loader, device)
        print(f"epoch {epoch} train_mse {train_loss:.4f} test_rmse {rmse(test_pred, test_df['rating'].values):.4f}")

    torch.save(model.state_dict(), "neumf.pt")


if __name__ == "__main__":
    main()
