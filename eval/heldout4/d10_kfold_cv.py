"""5-fold stratified cross-validation of an MLP on an imbalanced tabular dataset.

Reports accuracy, macro-F1 and ROC-AUC per fold (sklearn metrics) and their mean/std.
"""
import random

import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import make_classification
from sklearn.metrics import f1_score, roc_auc_score
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler
from torch.utils.data import DataLoader, Subset, TensorDataset

N_SPLITS = 5
EPOCHS = 30
BATCH_SIZE = 64


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


class MLP(nn.Module):
    def __init__(self, in_dim, hidden=128, n_classes=2, p=0.2):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(p),
            nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(p),
            nn.Linear(hidden, n_classes),
        )

    def forward(self, x):
        return self.net(x)


set_seed(42)
device = torch.device(
    "cuda" if torch.cuda.is_available()
    else "mps" if torch.backends.mps.is_available()
    else "cpu"
)

X_np, y_np = make_classification(n_samples=5000, n_features=30, n_informative=12,
                                 weights=[0.85, 0.15], random_state=0)
X_np = StandardScaler().fit_transform(X_np).astype(np.float32)
dataset = TensorDataset(torch.from_numpy(X_np), torch.from_numpy(y_np).long())

# inverse-frequency class weights
counts = np.bincount(y_np)
weights = counts.sum() / (len(counts) * counts)

skf = StratifiedKFold(n_splits=N_SPLITS, shuffle=True, random_state=42)
results = []

for fold, (train_idx, val_idx) in enumerate(skf.split(X_np, y_np)):
    print(f"--- fold {fold + 1}/{N_SPLITS} ---")
    train_loader = DataLoader(Subset(dataset, train_idx), batch_size=BATCH_SIZE, shuffle=True,
                              drop_last=True, pin_memory=True)  # expect: DEV005
    val_loader = DataLoader(Subset(dataset, val_idx), batch_size=512)

    model = MLP(X_np.shape[1]).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    class_weights = torch.tensor(weights, dtype=torch.float32)
    class_weights.to(device)  # expect: DEV008
    criterion = nn.CrossEntropyLoss(weight=class_weights)

    for epoch in range(EPOCHS):
        model.train()
        for xb, yb in train_loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()

    model.eval()
    correct, total = 0, 0
    scores, preds, targets = [], [], []
    with torch.no_grad():
        for xb, yb in val_loader:
            xb = xb.to(device)
            logits = model(xb)
            pred = logits.argmax(dim=1)
            correct += (pred == yb).sum().item()  # expect: DEV002
            total += yb.size(0)
            scores.append(torch.softmax(logits, dim=1)[:, 1].cpu())
            preds.append(pred.cpu())
            targets.append(yb)

    y_true = torch.cat(targets).numpy()
    y_pred = torch.cat(preds).numpy()
    y_score = torch.cat(scores).numpy()
    fold_res = {
        "acc": correct / total,
        "f1": f1_score(y_true, y_pred, average="macro"),
        "auc": roc_auc_score(y_true, y_score),
    }
    results.append(fold_res)
    print(", ".join(f"{k}={v:.4f}" for k, v in fold_res.items()))
    torch.save(model.state_dict(), f"mlp_fold{fold}.pt")

print("=== cross-validation summary ===")
for key in ["acc", "f1", "auc"]:
    vals = np.array([r[key] for r in results])
    print(f"{key}: {vals.mean():.4f} +/- {vals.std():.4f}")
