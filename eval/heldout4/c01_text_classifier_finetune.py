"""Fine-tune a pretrained encoder for sentence classification with a plain PyTorch loop.

Data files are jsonl with {"text": ..., "label": ...} per line.

    python c01_text_classifier_finetune.py --train_file data/train.jsonl --valid_file data/dev.jsonl --fp16
"""
import argparse
import json
import os
import random

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--train_file", required=True)
    p.add_argument("--valid_file", required=True)
    p.add_argument("--model_name", default="distilbert-base-uncased")
    p.add_argument("--max_len", type=int, default=128)
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-5)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--warmup", type=float, default=0.06)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--fp16", action="store_true")
    p.add_argument("--resume", default=None)
    p.add_argument("--out_dir", default="runs/clf")
    return p.parse_args()


class JsonlDataset(Dataset):
    def __init__(self, path, tokenizer, label2id, max_len):
        with open(path, encoding="utf-8") as f:
            self.rows = [json.loads(line) for line in f if line.strip()]
        self.tok = tokenizer
        self.label2id = label2id
        self.max_len = max_len

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        row = self.rows[i]
        enc = self.tok(
            row["text"],
            truncation=True,
            max_length=self.max_len,
            padding="max_length",
            return_tensors="pt",
        )
        item = {k: v.squeeze(0) for k, v in enc.items()}
        item["labels"] = torch.tensor(self.label2id[row["label"]])
        return item


def to_device(batch, device):
    # pinned host memory makes the non_blocking copy actually asynchronous
    return {k: v.pin_memory().to(device, non_blocking=True) for k, v in batch.items()}  # expect: DEV005


def main():
    args = parse_args()
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    os.makedirs(args.out_dir, exist_ok=True)

    device = torch.device(
        "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
    )
    print(f"device: {device}")

    tokenizer = AutoTokenizer.from_pretrained(args.model_name)
    with open(args.train_file, encoding="utf-8") as f:
        label_names = sorted({json.loads(line)["label"] for line in f if line.strip()})
    label2id = {name: i for i, name in enumerate(label_names)}

    train_ds = JsonlDataset(args.train_file, tokenizer, label2id, args.max_len)
    valid_ds = JsonlDataset(args.valid_file, tokenizer, label2id, args.max_len)
    train_loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True, num_workers=2)
    valid_loader = DataLoader(valid_ds, batch_size=args.batch_size * 2, num_workers=2)

    model = AutoModelForSequenceClassification.from_pretrained(args.model_name, num_labels=len(label2id))
    model.to(device)

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    total_steps = len(train_loader) * args.epochs
    scheduler = get_linear_schedule_with_warmup(optimizer, int(args.warmup * total_steps), total_steps)
    use_amp = args.fp16 and device.type == "cuda"
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)

    start_epoch = 0
    if args.resume:
        ckpt = torch.load(args.resume)  # expect: DEV007
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scheduler.load_state_dict(ckpt["scheduler"])
        start_epoch = ckpt["epoch"] + 1

    best_acc = 0.0
    for epoch in range(start_epoch, args.epochs):
        model.train()
        running = 0.0
        for step, batch in enumerate(train_loader):
            batch = to_device(batch, device)
            with torch.amp.autocast("cuda", enabled=use_amp):
                out = model(**batch)
            loss = out.loss
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            running += loss.item()
            if step % 100 == 0:
                print(f"epoch {epoch} step {step} loss {running / (step + 1):.4f}")

        model.eval()
        val_loss, correct, seen = 0.0, 0, 0
        with torch.no_grad():
            for batch in valid_loader:
                input_ids = batch["input_ids"].to(device)
                attention_mask = batch["attention_mask"].to(device)
                labels = batch["labels"]
                logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
                val_loss += F.cross_entropy(logits, labels).item() * labels.size(0)  # expect: DEV002
                preds = logits.argmax(dim=-1).cpu()
                correct += (preds == labels).sum().item()
                seen += labels.size(0)

        acc = correct / seen
        print(f"epoch {epoch}: val loss {val_loss / seen:.4f} acc {acc:.4f}")
        torch.save(
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "epoch": epoch,
            },
            os.path.join(args.out_dir, "last.pt"),
        )
        if acc > best_acc:
            best_acc = acc
            model.save_pretrained(os.path.join(args.out_dir, "best"))
            tokenizer.save_pretrained(os.path.join(args.out_dir, "best"))

    with open(os.path.join(args.out_dir, "labels.json"), "w") as f:
        json.dump(label_names, f)
    print(f"best dev accuracy: {best_acc:.4f}")


if __name__ == "__main__":
    main()
