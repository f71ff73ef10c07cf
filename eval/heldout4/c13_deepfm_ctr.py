"""DeepFM click-through-rate model on Criteo-style categorical + dense features.

    python c13_deepfm_ctr.py --train data/criteo_train.parquet --valid data/criteo_valid.parquet --amp
"""
import argparse
import os
import random

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.metrics import log_loss, roc_auc_score
from torch.utils.data import DataLoader, Dataset

DENSE = [f"I{i}" for i in range(1, 14)]
SPARSE = [f"C{i}" for i in range(1, 27)]


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


class CTRDataset(Dataset):
    def __init__(self, df, field_dims):
        self.dense = torch.tensor(np.log1p(df[DENSE].clip(lower=0).fillna(0).values), dtype=torch.float32)
        sparse = np.stack([df[c].fillna(0).astype(np.int64).values % d for c, d in zip(SPARSE, field_dims)], 1)
        self.sparse = torch.from_numpy(sparse)
        self.label = torch.tensor(df["label"].values, dtype=torch.float32)

    def __len__(self):
        return len(self.label)

    def __getitem__(self, i):
        return {"dense": self.dense[i], "sparse": self.sparse[i], "label": self.label[i]}


class DeepFM(nn.Module):
    def __init__(self, field_dims, n_dense, emb_dim=16, mlp=(400, 400, 400), dropout=0.2):
        super().__init__()
        offsets = np.concatenate([[0], np.cumsum(field_dims)[:-1]])
        self.register_buffer("offsets", torch.tensor(offsets, dtype=torch.long))
        total = int(sum(field_dims))
        self.linear = nn.Embedding(total, 1)
        self.embedding = nn.Embedding(total, emb_dim)
        self.dense_proj = nn.Linear(n_dense, emb_dim)
        self.bias = nn.Parameter(torch.zeros(1))
        layers, d = [], (len(field_dims) + 1) * emb_dim
        for h in mlp:
            layers += [nn.Linear(d, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Dropout(dropout)]
            d = h
        layers.append(nn.Linear(d, 1))
        self.mlp = nn.Sequential(*layers)
        nn.init.xavier_uniform_(self.embedding.weight)

    def forward(self, sparse, dense):
        idx = sparse + self.offsets
        emb = torch.cat([self.embedding(idx), self.dense_proj(dense).unsqueeze(1)], dim=1)  # (B, F+1, E)
        first_order = self.linear(idx).sum(dim=(1, 2)) + self.bias
        square_of_sum = emb.sum(dim=1).pow(2)
        sum_of_square = emb.pow(2).sum(dim=1)
        fm = 0.5 * (square_of_sum - sum_of_square).sum(dim=1)
        deep = self.mlp(emb.flatten(1)).squeeze(1)
        return first_order + fm + deep


def evaluate(model, loader, device):
    model.eval()
    probs, labels = [], []
    with torch.no_grad():
        for batch in loader:
            logits = model(batch["sparse"].to(device), batch["dense"].to(device))
            probs.append(torch.sigmoid(logits).float().cpu())
            labels.append(batch["label"])
    y_true = torch.cat(labels).numpy()
    y_prob = torch.cat(probs).numpy()
    return roc_auc_score(y_true, y_prob), log_loss(y_true, np.clip(y_prob, 1e-7, 1 - 1e-7))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("--valid", required=True)
    ap.add_argument("--bucket", type=int, default=100_000, help="hash bucket size per field")
    ap.add_argument("--batch-size", type=int, default=4096)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--amp", action="store_true")
    ap.add_argument("--no-cuda", action="store_true")
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--out", default="deepfm.pt")
    args = ap.parse_args()
    set_seed(args.seed)

    use_cuda = not args.no_cuda and torch.cuda.is_available()
    use_mps = not args.no_cuda and torch.backends.mps.is_available()
    if use_cuda:
        torch.cuda.set_device(args.gpu)
        device = torch.device("cuda", args.gpu)
        torch.backends.cudnn.benchmark = True
        print("GPU:", torch.cuda.get_device_name(args.gpu))
    elif use_mps:
        device = torch.device("mps")
    else:
        device = torch.device("cpu")

    field_dims = [args.bucket] * len(SPARSE)
    train_ds = CTRDataset(pd.read_parquet(args.train), field_dims)
    valid_ds = CTRDataset(pd.read_parquet(args.valid), field_dims)
    loader_kw = {"batch_size": args.batch_size, "num_workers": 4, "pin_memory": device.type == "cuda"}
    train_loader = DataLoader(train_ds, shuffle=True, drop_last=True, **loader_kw)
    valid_loader = DataLoader(valid_ds, shuffle=False, **loader_kw)

    model = DeepFM(field_dims, n_dense=len(DENSE))
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scaler = torch.amp.GradScaler(device.type, enabled=args.amp and device.type == "cuda")

    best_auc = 0.0
    for epoch in range(args.epochs):
        model.train()
        for step, batch in enumerate(train_loader):
            batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
            with torch.amp.autocast(device_type=device.type, dtype=torch.float16, enabled=scaler.is_enabled()):
                logits = model(batch["sparse"], batch["dense"])
                loss = F.binary_cross_entropy_with_logits(logits.float(), batch["label"])
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            if step % 500 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.5f}")

        auc, ll = evaluate(model, valid_loader, device)
        print(f"epoch {epoch}: valid AUC {auc:.5f}  logloss {ll:.5f}")
        if auc > best_auc:
            best_auc = auc
            torch.save(model.state_dict(), args.out)

    if use_cuda:
        print(f"peak memory {torch.cuda.max_memory_allocated(device) / 2**30:.2f} GiB")
    if os.path.exists(args.out):
        model.load_state_dict(torch.load(args.out, map_location=device, weights_only=True))
        print("best checkpoint AUC/logloss:", evaluate(model, valid_loader, device))


if __name__ == "__main__":
    main()
