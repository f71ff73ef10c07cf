"""Fine-tune DistilBERT on a CSV of reviews, then score a few sentences."""
import numpy as np
import pandas as pd
import torch
from sklearn.metrics import accuracy_score, f1_score
from torch.utils.data import DataLoader, Dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

MODEL_NAME = "distilbert-base-uncased"
EPOCHS, BATCH, LR = 3, 32, 2e-5

device = (
    torch.device("cuda")
    if torch.cuda.is_available()
    else torch.device("mps")
    if torch.backends.mps.is_available()
    else torch.device("cpu")
)
amp_dtype = torch.bfloat16 if device.type == "cuda" and torch.cuda.is_bf16_supported() else torch.float32


class ReviewDataset(Dataset):
    def __init__(self, df, tokenizer, max_len=256):
        self.enc = tokenizer(df["text"].tolist(), truncation=True, max_length=max_len)
        self.labels = df["label"].tolist()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        item = {k: torch.tensor(v[i]) for k, v in self.enc.items()}
        item["labels"] = torch.tensor(self.labels[i])
        return item


tokenizer = AutoTokenizer.from_pretrained(MODEL_NAME)
model = AutoModelForSequenceClassification.from_pretrained(MODEL_NAME, num_labels=2)
model.to(device)


def collate(features):
    labels = torch.stack([f.pop("labels") for f in features])
    batch = tokenizer.pad(features, return_tensors="pt")
    batch["labels"] = labels
    return batch


train_df, val_df = pd.read_csv("train.csv"), pd.read_csv("val.csv")
train_loader = DataLoader(ReviewDataset(train_df, tokenizer), batch_size=BATCH, shuffle=True,
                          collate_fn=collate, pin_memory=torch.cuda.is_available())
val_loader = DataLoader(ReviewDataset(val_df, tokenizer), batch_size=64, collate_fn=collate)

optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
total_steps = EPOCHS * len(train_loader)
scheduler = get_linear_schedule_with_warmup(optimizer, int(0.1 * total_steps), total_steps)


def evaluate():
    model.eval()
    all_preds, all_labels = [], []
    with torch.no_grad():
        for batch in val_loader:
            batch = {k: v.to(device) for k, v in batch.items()}
            with torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=amp_dtype != torch.float32):
                logits = model(**batch).logits
            all_preds.append(logits.argmax(-1).cpu().numpy())
            all_labels.append(batch["labels"].cpu().numpy())
    preds, labels = np.concatenate(all_preds), np.concatenate(all_labels)
    return accuracy_score(labels, preds), f1_score(labels, preds)


for epoch in range(EPOCHS):
    model.train()
    for step, batch in enumerate(train_loader):
        batch = {k: v.to(device) for k, v in batch.items()}
        with torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=amp_dtype != torch.float32):
            outputs = model(**batch)
        loss = outputs.loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        if step % 50 == 0:
            print(f"epoch {epoch} step {step}: loss {loss.item():.4f}")
    acc, f1 = evaluate()
    print(f"epoch {epoch}: val acc {acc:.4f} f1 {f1:.4f}")

model.save_pretrained("sentiment-model")
tokenizer.save_pretrained("sentiment-model")

sentences = ["Absolutely loved it, would buy again.", "Broke after two days. Waste of money."]
enc = tokenizer(sentences, padding=True, return_tensors="pt")
enc.to(device)
model.eval()
with torch.no_grad():
    probs = torch.softmax(model(**enc).logits, dim=-1)
for s, p in zip(sentences, probs.cpu().numpy()):
    print(f"{p[1]:.3f}  {s}")
