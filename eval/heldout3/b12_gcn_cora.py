"""Two-layer GCN / GIN on Cora written in plain torch (dense normalised adjacency).

Expects the planetoid files converted to cora.npz (features, labels, edges, split indices).
"""
import argparse

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.manifold import TSNE


def get_device():
    if torch.cuda.is_available():  # expect: DEV004
        return torch.device("cuda")
    else:
        return torch.device("cpu")


def load_cora(path):
    data = np.load(path)
    x = torch.from_numpy(data["features"]).float()
    y = torch.from_numpy(data["labels"]).long()
    edges = torch.from_numpy(data["edges"]).long()
    n = x.size(0)
    adj = torch.zeros(n, n)
    adj[edges[0], edges[1]] = 1.0
    adj = ((adj + adj.t()) > 0).float()
    idx = {k: torch.from_numpy(data[k]).long() for k in ("idx_train", "idx_val", "idx_test")}
    return x, y, adj, idx


def normalize_adj(adj):
    """D^-1/2 (A + I) D^-1/2, computed once on the CPU."""
    a_hat = adj + torch.eye(adj.size(0))
    d_inv_sqrt = a_hat.sum(1).pow(-0.5)
    d_inv_sqrt[torch.isinf(d_inv_sqrt)] = 0.0
    return d_inv_sqrt[:, None] * a_hat * d_inv_sqrt[None, :]


class GCNLayer(nn.Module):
    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.lin = nn.Linear(in_dim, out_dim)

    def forward(self, x, adj):
        return adj @ self.lin(x)


class GINLayer(nn.Module):
    def __init__(self, in_dim, out_dim, eps=0.0, train_eps=False):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, out_dim), nn.ReLU(), nn.Linear(out_dim, out_dim))
        if train_eps:
            self.eps = nn.Parameter(torch.tensor([eps]))
        else:
            self.eps = torch.tensor([eps])  # expect: DEV014

    def forward(self, x, adj):
        return self.mlp((1 + self.eps) * x + adj @ x)


class GNN(nn.Module):
    def __init__(self, in_dim, hidden, n_classes, kind="gcn", dropout=0.5):
        super().__init__()
        layer = GCNLayer if kind == "gcn" else GINLayer
        self.l1 = layer(in_dim, hidden)
        self.l2 = layer(hidden, n_classes)
        self.dropout = dropout

    def embed(self, x, adj):
        x = F.dropout(x, self.dropout, self.training)
        return F.relu(self.l1(x, adj))

    def forward(self, x, adj):
        h = F.dropout(self.embed(x, adj), self.dropout, self.training)
        return F.log_softmax(self.l2(h, adj), dim=1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="cora.npz")
    p.add_argument("--model", choices=["gcn", "gin"], default="gcn")
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    args = p.parse_args()

    device = get_device()
    x, y, adj, idx = load_cora(args.data)
    adj = normalize_adj(adj) if args.model == "gcn" else adj
    n_classes = int(y.max()) + 1

    counts = np.bincount(y[idx["idx_train"]].numpy(), minlength=n_classes)
    # inverse-frequency class weights (matters for the random splits)
    class_weights = torch.tensor(counts.sum() / (n_classes * np.maximum(counts, 1)),
                                 dtype=torch.float32)

    x, y, adj = x.to(device), y.to(device), adj.to(device)
    idx = {k: v.to(device) for k, v in idx.items()}
    model = GNN(x.size(1), args.hidden, n_classes, kind=args.model).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

    def accuracy(out, index):
        return (out[index].argmax(1) == y[index]).float().mean().item()

    best_val, best_state = 0.0, None
    for epoch in range(args.epochs):
        model.train()
        optimizer.zero_grad()
        out = model(x, adj)
        loss = F.nll_loss(out[idx["idx_train"]], y[idx["idx_train"]], weight=class_weights)  # expect: DEV006
        loss.backward()
        optimizer.step()

        model.eval()
        with torch.no_grad():
            out = model(x, adj)
        val_acc = accuracy(out, idx["idx_val"])
        if val_acc > best_val:
            best_val = val_acc
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        if epoch % 20 == 0:
            print(f"epoch {epoch:3d} loss {loss.item():.4f} val {val_acc:.3f}")

    model.load_state_dict(best_state)
    model.eval()
    with torch.no_grad():
        out = model(x, adj)
        emb = model.embed(x, adj).cpu().numpy()
    print(f"test accuracy: {accuracy(out, idx['idx_test']):.4f}")

    pts = TSNE(n_components=2, init="pca", random_state=0).fit_transform(emb)
    plt.figure(figsize=(7, 7))
    plt.scatter(pts[:, 0], pts[:, 1], c=y.cpu().numpy(), cmap="tab10", s=6)
    plt.title(f"{args.model.upper()} hidden features (t-SNE)")
    plt.savefig(f"{args.model}_tsne.png", dpi=150)


if __name__ == "__main__":
    main()
