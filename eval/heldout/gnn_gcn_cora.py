"""Semi-supervised GCN on Cora (Kipf & Welling), dense adjacency version."""
import argparse
import time

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--no-cuda", action="store_true", default=False)
parser.add_argument("--seed", type=int, default=42)
parser.add_argument("--epochs", type=int, default=200)
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--weight_decay", type=float, default=5e-4)
parser.add_argument("--hidden", type=int, default=16)
parser.add_argument("--dropout", type=float, default=0.5)
args = parser.parse_args()
args.cuda = not args.no_cuda and torch.cuda.is_available()

np.random.seed(args.seed)
torch.manual_seed(args.seed)
device = torch.device("cuda" if args.cuda else "cpu")  # expect: DEV004


def load_cora(path="data/cora/"):
    idx_features_labels = np.genfromtxt(f"{path}cora.content", dtype=np.dtype(str))
    features = np.array(idx_features_labels[:, 1:-1], dtype=np.float32)
    classes = {c: i for i, c in enumerate(sorted(set(idx_features_labels[:, -1])))}
    labels = np.array([classes[c] for c in idx_features_labels[:, -1]], dtype=np.int64)
    idx = np.array(idx_features_labels[:, 0], dtype=np.int32)
    idx_map = {j: i for i, j in enumerate(idx)}
    edges_unordered = np.genfromtxt(f"{path}cora.cites", dtype=np.int32)
    edges = np.array(list(map(idx_map.get, edges_unordered.flatten())), dtype=np.int32).reshape(edges_unordered.shape)
    adj = sp.coo_matrix((np.ones(edges.shape[0]), (edges[:, 0], edges[:, 1])), shape=(labels.shape[0],) * 2)
    adj = adj + adj.T.multiply(adj.T > adj) - adj.multiply(adj.T > adj)
    features = features / np.maximum(features.sum(1, keepdims=True), 1)
    return features, adj.toarray().astype(np.float32), labels


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features, out_features))
        self.bias = nn.Parameter(torch.zeros(out_features))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, x, adj):
        adj_hat = adj + torch.eye(adj.size(0))  # expect: DEV013
        deg = adj_hat.sum(1)
        d_inv_sqrt = deg.pow(-0.5)
        norm_adj = d_inv_sqrt[:, None] * adj_hat * d_inv_sqrt[None, :]
        return norm_adj @ (x @ self.weight) + self.bias


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super().__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        return F.log_softmax(self.gc2(x, adj), dim=1)


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    return preds.eq(labels).double().sum() / len(labels)


features_np, adj_np, labels_np = load_cora()
features = torch.from_numpy(features_np)
adj = torch.from_numpy(adj_np)
labels = torch.from_numpy(labels_np)
idx_train, idx_val, idx_test = torch.arange(140), torch.arange(200, 500), torch.arange(500, 1500)

model = GCN(features.shape[1], args.hidden, int(labels.max()) + 1, args.dropout).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
features = features.to(device)
adj.to(device)  # expect: DEV008
labels = labels.to(device)

t_total = time.time()
for epoch in range(args.epochs):
    model.train()
    optimizer.zero_grad()
    output = model(features, adj)  # expect: DEV006
    loss_train = F.nll_loss(output[idx_train], labels[idx_train])
    acc_train = accuracy(output[idx_train], labels[idx_train])
    loss_train.backward()
    optimizer.step()
    loss_val = F.nll_loss(output[idx_val], labels[idx_val])
    acc_val = accuracy(output[idx_val], labels[idx_val])
    print(f"Epoch {epoch + 1:04d} loss_train {loss_train.item():.4f} acc_train {acc_train.item():.4f} "
          f"loss_val {loss_val.item():.4f} acc_val {acc_val.item():.4f}")

print(f"Optimization finished in {time.time() - t_total:.2f}s")
model.eval()
with torch.no_grad():
    output = model(features, adj)  # expect: DEV006
print("Test accuracy:", accuracy(output[idx_test], labels[idx_test]).item())
np.save("cora_logits.npy", output.detach().cpu().numpy())
