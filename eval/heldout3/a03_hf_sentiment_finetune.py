"""Fine-tune a BERT-style encoder on IMDB with a class-weighted loss and gradient accumulation."""
import argparse
import math
import random

import numpy as np
import torch
import torch.nn as nn
from datasets import load_dataset
from sklearn.metrics import accuracy_score, f1_score
from torch.optim import AdamW
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    get_linear_schedule_with_warmup,
)


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-name", default="distilbert-base-uncased")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--grad-accum", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--warmup-ratio", type=float, default=0.06)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--output-dir", default="out/imdb")
    return parser.parse_args()


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def evaluate(model, loader, device):
    model.eval()
    all_preds, all_labels, total_loss = [], [], 0.0
    with torch.no_grad():
        for batch in tqdm(loader, desc="eval", leave=False):
            batch = {k: v.to(device) for k, v in batch.items()}
            outputs = model(**batch)
            total_loss += outputs.loss.item()
            all_preds.extend(outputs.logits.argmax(dim=-1).cpu().tolist())
            all_labels.extend(batch["labels"].cpu().tolist())
    return {
        "loss": total_loss / max(len(loader), 1),
        "accuracy": accuracy_score(all_labels, all_preds),
        "f1": f1_score(all_labels, all_preds, average="macro"),
    }


def main():
    args = parse_args()
    set_seed(args.seed)
    device = torch.device(
        "cuda" if torch.cuda.is_available() else "cpu"  # expect: DEV004
    )

    tokenizer = AutoTokenizer.from_pretrained(args.model_name)
    raw = load_dataset("imdb")

    def tokenize(examples):
        return tokenizer(examples["text"], truncation=True, max_length=args.max_length)

    tokenized = raw.map(tokenize, batched=True, remove_columns=["text"])
    tokenized = tokenized.rename_column("label", "labels")
    collator = DataCollatorWithPadding(tokenizer)
    train_loader = DataLoader(tokenized["train"], batch_size=args.batch_size, shuffle=True, collate_fn=collator)
    eval_loader = DataLoader(tokenized["test"], batch_size=64, collate_fn=collator)

    # the training split is balanced, but we reuse this script on skewed data
    counts = np.bincount(np.array(tokenized["train"]["labels"]), minlength=2)
    weights = counts.sum() / (len(counts) * np.maximum(counts, 1))
    class_weights = torch.tensor(weights, dtype=torch.float32, device=device)
    loss_fn = nn.CrossEntropyLoss(weight=class_weights)

    model = AutoModelForSequenceClassification.from_pretrained(args.model_name, num_labels=2)
    model.to(device)

    optimizer = AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    num_update_steps = math.ceil(len(train_loader) / args.grad_accum) * args.epochs
    scheduler = get_linear_schedule_with_warmup(
        optimizer, int(args.warmup_ratio * num_update_steps), num_update_steps
    )

    for epoch in range(args.epochs):
        model.train()
        optimizer.zero_grad()
        progress = tqdm(train_loader, desc=f"epoch {epoch}")
        for step, batch in enumerate(progress):
            labels = batch.pop("labels")
            batch = {k: v.to(device) for k, v in batch.items()}
            outputs = model(**batch)
            loss = loss_fn(outputs.logits, labels)  # expect: DEV002
            (loss / args.grad_accum).backward()

            if (step + 1) % args.grad_accum == 0 or step + 1 == len(train_loader):
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
            progress.set_postfix(loss=f"{loss.item():.4f}")

        metrics = evaluate(model, eval_loader, device)
        print(f"epoch {epoch}: " + ", ".join(f"{k}={v:.4f}" for k, v in metrics.items()))

    model.save_pretrained(args.output_dir)
    tokenizer.save_pretrained(args.output_dir)

    # quick sanity check on two hand-written reviews
    model.eval()
    sample = tokenizer(
        ["a wonderful, heartfelt film", "two hours I will never get back"],
        padding=True,
        return_tensors="pt",
    ).to(device)
    with torch.no_grad():
        probs = model(**sample).logits.softmax(dim=-1)
    print(np.round(probs.numpy(), 3))  # expect: DEV001


if __name__ == "__main__":
    main()
