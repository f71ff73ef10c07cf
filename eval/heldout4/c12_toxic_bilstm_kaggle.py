#!/usr/bin/env python
# coding: utf-8

# ## Jigsaw toxic comments: BiLSTM + GRU baseline, 5-fold CV
# GPU notebook (Kaggle P100).

# In[1]:


import gc
import os
import random
import re
import time
from collections import Counter

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import KFold
from torch.utils.data import DataLoader, TensorDataset

SEED = 1029
MAX_LEN = 220
MAX_FEATURES = 100_000
BATCH_SIZE = 512
N_EPOCHS = 4
LABELS = ["toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"]


def seed_everything(seed=SEED):
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)
    torch.backends.cudnn.deterministic = True


seed_everything()


# In[2]:


train = pd.read_csv("../input/jigsaw-toxic-comment-classification-challenge/train.csv")
test = pd.read_csv("../input/jigsaw-toxic-comment-classification-challenge/test.csv")


def tokenize(text):
    return re.findall(r"[a-z']+|[!?]", str(text).lower())


counter = Counter(tok for text in train.comment_text for tok in tokenize(text))
vocab = {w: i + 1 for i, (w, _) in enumerate(counter.most_common(MAX_FEATURES - 1))}


def encode(texts):
    out = np.zeros((len(texts), MAX_LEN), dtype=np.int64)
    for r, text in enumerate(texts):
        ids = [vocab.get(t, 0) for t in tokenize(text)][-MAX_LEN:]
        out[r, MAX_LEN - len(ids):] = ids
    return out


x_train = encode(train.comment_text.values)
x_test = encode(test.comment_text.values)
y_train = train[LABELS].values.astype(np.float32)


# In[3]:


class BiLSTM(nn.Module):
    def __init__(self, vocab_size, emb_dim=300, hidden=128, n_out=len(LABELS)):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=0)
        self.lstm = nn.LSTM(emb_dim, hidden, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(hidden * 2, hidden, bidirectional=True, batch_first=True)
        self.linear = nn.Linear(hidden * 4, 64)
        self.out = nn.Linear(64, n_out)
        self.dropout = nn.Dropout(0.2)

    def forward(self, x):
        h = self.dropout(self.embedding(x))
        h, _ = self.lstm(h)
        h, _ = self.gru(h)
        avg_pool = torch.mean(h, 1)
        max_pool, _ = torch.max(h, 1)
        conc = torch.cat((avg_pool, max_pool), 1)
        return self.out(self.dropout(F.relu(self.linear(conc))))


def to_gpu(*tensors):
    return [t.cuda(non_blocking=True) for t in tensors]  # expect: DEV003


# In[4]:


splits = list(KFold(n_splits=5, shuffle=True, random_state=SEED).split(x_train))
oof = np.zeros_like(y_train)
test_preds = np.zeros((len(x_test), len(LABELS)), dtype=np.float32)
test_loader = DataLoader(TensorDataset(torch.from_numpy(x_test)), batch_size=BATCH_SIZE, shuffle=False)
loss_fn = nn.BCEWithLogitsLoss()

for fold, (trn_idx, val_idx) in enumerate(splits):
    start = time.time()
    trn_ds = TensorDataset(torch.from_numpy(x_train[trn_idx]), torch.from_numpy(y_train[trn_idx]))
    val_ds = TensorDataset(torch.from_numpy(x_train[val_idx]))
    trn_loader = DataLoader(trn_ds, batch_size=BATCH_SIZE, shuffle=True)
    val_loader = DataLoader(val_ds, batch_size=BATCH_SIZE, shuffle=False)

    model = BiLSTM(MAX_FEATURES)
    model.cuda()  # expect: DEV003
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    for epoch in range(N_EPOCHS):
        model.train()
        avg_loss = 0.0
        for xb, yb in trn_loader:
            xb, yb = to_gpu(xb, yb)
            with torch.cuda.amp.autocast(dtype=torch.bfloat16):  # expect: DEV009
                logits = model(xb)
            loss = loss_fn(logits.float(), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            avg_loss += loss.item() / len(trn_loader)

        model.eval()
        val_out = []
        with torch.no_grad():
            for (xb,) in val_loader:
                (xb,) = to_gpu(xb)
                val_out.append(torch.sigmoid(model(xb)).float().cpu().numpy())
        oof[val_idx] = np.concatenate(val_out)
        auc = np.mean([roc_auc_score(y_train[val_idx, j], oof[val_idx, j]) for j in range(len(LABELS))])
        print(f"fold {fold} epoch {epoch + 1}: loss {avg_loss:.4f}  val auc {auc:.5f}  {time.time() - start:.0f}s")

    fold_preds = []
    with torch.no_grad():
        for (xb,) in test_loader:
            (xb,) = to_gpu(xb)
            fold_preds.append(torch.sigmoid(model(xb)).detach().cpu().numpy())
    test_preds += np.concatenate(fold_preds) / len(splits)

    del model, optimizer
    gc.collect()
    torch.cuda.empty_cache()


# In[5]:


print("overall OOF AUC:", np.mean([roc_auc_score(y_train[:, j], oof[:, j]) for j in range(len(LABELS))]))
submission = pd.DataFrame(test_preds, columns=LABELS)
submission.insert(0, "id", test["id"].values)
submission.to_csv("submission.csv", index=False)
submission.head()
