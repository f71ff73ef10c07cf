"""Sentiment analysis on movie reviews with a 2-layer LSTM.

Part 3 of the NLP-with-PyTorch series: the reviews were already tokenised and
padded to 200 tokens in part 2 and saved as numpy arrays.
"""
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

device = torch.device("cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu")
print("device:", device)

SEQ_LEN = 200
BATCH_SIZE = 50
EPOCHS = 4


class ReviewDataset(Dataset):
    def __init__(self, encoded, labels):
        self.x = torch.tensor(encoded, dtype=torch.long)
        self.y = torch.tensor(labels, dtype=torch.float32)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, idx):
        return self.x[idx], self.y[idx]


def load_split(name):
    data = np.load(f"data/reviews_{name}.npz")
    return data["features"][:, :SEQ_LEN], data["labels"]


class SentimentLSTM(nn.Module):
    def __init__(self, vocab_size, embed_dim=128, hidden_size=256, num_layers=2, dropout=0.3):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        self.lstm = nn.LSTM(embed_dim, hidden_size, num_layers, batch_first=True, dropout=dropout)
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(hidden_size, 1)

    def forward(self, x):
        emb = self.embedding(x)
        # initial hidden and cell states
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size)  # expect: DEV013
        c0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size)  # expect: DEV013
        out, _ = self.lstm(emb, (h0, c0))
        out = self.dropout(out[:, -1, :])
        return self.fc(out).squeeze(1)


train_x, train_y = load_split("train")
valid_x, valid_y = load_split("valid")
vocab_size = int(train_x.max()) + 1

loader_kwargs = {"num_workers": 2, "pin_memory": True} if torch.cuda.is_available() else {}
train_loader = DataLoader(ReviewDataset(train_x, train_y), batch_size=BATCH_SIZE, shuffle=True, drop_last=True,
                          **loader_kwargs)
valid_loader = DataLoader(ReviewDataset(valid_x, valid_y), batch_size=BATCH_SIZE, **loader_kwargs)

model = SentimentLSTM(vocab_size).to(device)
criterion = nn.BCEWithLogitsLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)


def evaluate(loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for texts, labels in loader:
            texts = texts.to(device)
            preds = (torch.sigmoid(model(texts)) > 0.5).float()
            correct += (preds == labels).sum().item()  # expect: DEV002
            total += labels.size(0)
    return correct / total


for epoch in range(EPOCHS):
    model.train()
    losses = []
    for texts, labels in tqdm(train_loader, desc=f"epoch {epoch + 1}"):
        texts, labels = texts.to(device), labels.to(device)
        optimizer.zero_grad()
        logits = model(texts)
        loss = criterion(logits, labels)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        losses.append(loss.item())
    print(f"epoch {epoch + 1}: train loss {np.mean(losses):.4f}  valid acc {evaluate(valid_loader):.3f}")

torch.save(model.state_dict(), "sentiment_lstm.pt")
