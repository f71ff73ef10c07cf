# 5-fold cross validation for the ECG beat classifier
import numpy as np
import torch
import torch.nn as nn
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedKFold
from torch.utils.data import DataLoader, Subset, TensorDataset

if torch.cuda.is_available():  # expect: DEV004
    device = torch.device("cuda")
else:
    device = torch.device("cpu")
print("device:", device)

data = np.load("ecg_beats.npz")
X = torch.tensor(data["x"], dtype=torch.float32).unsqueeze(1)  # (N, 1, 187)
y = torch.tensor(data["y"], dtype=torch.long)
dataset = TensorDataset(X, y)
counts = np.bincount(data["y"])
class_weights = torch.tensor(len(y) / (len(counts) * counts), dtype=torch.float32)
class_weights.to(device)  # expect: DEV008


class ECGNet(nn.Module):
    def __init__(self, n_classes=5):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(1, 32, 5, padding=2), nn.BatchNorm1d(32), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(32, 64, 5, padding=2), nn.BatchNorm1d(64), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(64, 128, 3, padding=1), nn.BatchNorm1d(128), nn.ReLU(), nn.AdaptiveAvgPool1d(1),
        )
        self.classifier = nn.Linear(128, n_classes)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def run_fold(train_idx, val_idx, epochs=20):
    model = ECGNet()
    model.to(device)
    criterion = nn.CrossEntropyLoss(weight=class_weights)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    train_loader = DataLoader(Subset(dataset, train_idx), batch_size=256, shuffle=True)
    val_loader = DataLoader(Subset(dataset, val_idx), batch_size=512)

    for epoch in range(epochs):
        model.train()
        for xb, yb in train_loader:
            xb = xb.to(device)
            out = model(xb)
            loss = criterion(out, yb)  # expect: DEV002
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

    model.eval()
    preds, trues = [], []
    with torch.no_grad():
        for xb, yb in val_loader:
            logits = model(xb.to(device))
            preds.extend(logits.argmax(1).cpu().numpy())
            trues.extend(yb.numpy())
    return f1_score(trues, preds, average="macro"), model


skf = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
scores = []
best_score, best_state = -1.0, None
for fold, (tr, va) in enumerate(skf.split(np.zeros(len(y)), y.numpy())):
    score, model = run_fold(tr, va)
    scores.append(score)
    print(f"fold {fold}: macro-F1 = {score:.4f}")
    if score > best_score:
        best_score = score
        best_state = {k: v.cpu() for k, v in model.state_dict().items()}

scores = np.array(scores)
print(f"CV macro-F1: {scores.mean():.4f} +/- {scores.std():.4f}")
torch.save(best_state, "ecg_best_fold.pt")
