"""Sentiment inference with a fine-tuned BERT checkpoint.

Predicts single sentences and evaluates on the held-out test split.
"""
import numpy as np
import pandas as pd
import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForSequenceClassification, AutoTokenizer

MODEL_DIR = "outputs/bert-base-chinese-sentiment"
LABELS = ["negative", "positive"]

device = "cuda" if torch.cuda.is_available() else "cpu"  # expect: DEV004
tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR)
model = AutoModelForSequenceClassification.from_pretrained(MODEL_DIR).to(device)
model.eval()


def predict(texts):
    inputs = tokenizer(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
    inputs = {k: v.to(device) for k, v in inputs.items()}
    with torch.no_grad(), torch.cuda.amp.autocast():  # expect: DEV009
        outputs = model(**inputs)
    probs = torch.softmax(outputs.logits, dim=-1).numpy()  # expect: DEV001
    return [(LABELS[int(p.argmax())], float(p.max())) for p in probs]


def collate(rows):
    enc = tokenizer([r["text"] for r in rows], padding=True, truncation=True, max_length=128,
                    return_tensors="pt")
    enc["labels"] = torch.tensor([r["label"] for r in rows])
    return enc


def evaluate(csv_path):
    df = pd.read_csv(csv_path)
    loader = DataLoader(df.to_dict("records"), batch_size=32, collate_fn=collate)
    correct = total = 0
    all_logits = []
    with torch.no_grad():
        for batch in loader:
            batch = {k: v.to(device) for k, v in batch.items()}
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
            correct += (logits.argmax(-1) == batch["labels"]).sum().item()
            total += batch["labels"].size(0)
            all_logits.append(logits.float().cpu().numpy())
    np.save("test_logits.npy", np.concatenate(all_logits))
    return correct / total


if __name__ == "__main__":
    for text, (label, score) in zip(
        ["这家餐厅的菜太好吃了", "快递慢得离谱,再也不买了"],
        predict(["这家餐厅的菜太好吃了", "快递慢得离谱,再也不买了"]),
    ):
        print(f"{text} -> {label} ({score:.3f})")
    print("test accuracy:", evaluate("data/test.csv"))
