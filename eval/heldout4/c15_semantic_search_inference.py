"""Encode a document collection with a fine-tuned bi-encoder and answer queries by cosine similarity.

    python c15_semantic_search_inference.py --ckpt runs/biencoder/best.pt --docs corpus.jsonl \
        --queries "how do I reset my password" "refund policy for damaged items"
"""
import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from transformers import AutoModel, AutoTokenizer

BATCH_SIZE = 128
MAX_LEN = 256
NUM_WORKERS = 4
PIN_MEMORY = True


class BiEncoder(nn.Module):
    def __init__(self, name, proj_dim=256):
        super().__init__()
        self.backbone = AutoModel.from_pretrained(name)
        self.proj = nn.Linear(self.backbone.config.hidden_size, proj_dim)

    def forward(self, input_ids, attention_mask):
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-6)
        return F.normalize(self.proj(pooled), dim=-1)


class Collate:
    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def __call__(self, texts):
        enc = self.tokenizer(texts, padding=True, truncation=True, max_length=MAX_LEN, return_tensors="pt")
        return enc["input_ids"], enc["attention_mask"]


def encode(model, tokenizer, texts, device):
    loader = DataLoader(
        texts,
        batch_size=BATCH_SIZE,
        num_workers=NUM_WORKERS,
        collate_fn=Collate(tokenizer),
        pin_memory=PIN_MEMORY,  # expect: DEV005
    )
    chunks = []
    with torch.inference_mode():
        for input_ids, attention_mask in loader:
            emb = model(input_ids.to(device, non_blocking=True), attention_mask.to(device, non_blocking=True))
            chunks.append(emb.float().cpu())
    return torch.cat(chunks)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--docs", required=True, help="jsonl file with 'id' and 'text' fields")
    ap.add_argument("--queries", nargs="+", required=True)
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"])
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--save-index", default=None)
    args = ap.parse_args()

    if args.device == "auto":
        device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
    else:
        device = torch.device(args.device)

    ckpt = torch.load(args.ckpt, weights_only=True)  # expect: DEV007
    tokenizer = AutoTokenizer.from_pretrained(ckpt["backbone"])
    model = BiEncoder(ckpt["backbone"], ckpt["proj_dim"])
    model.load_state_dict(ckpt["state_dict"])
    model.to(device)
    model.eval()

    with open(args.docs, encoding="utf-8") as f:
        docs = [json.loads(line) for line in f if line.strip()]
    doc_emb = encode(model, tokenizer, [d["text"] for d in docs], device)
    doc_np = doc_emb.numpy()
    if args.save_index:
        np.save(args.save_index, doc_np)
    print(f"encoded {len(docs)} documents -> {tuple(doc_emb.shape)}")

    q = tokenizer(args.queries, padding=True, truncation=True, max_length=MAX_LEN, return_tensors="pt")
    with torch.inference_mode():
        q_emb = model(q["input_ids"].to(device), q["attention_mask"].to(device))
    q_np = np.asarray(q_emb, dtype=np.float32)  # expect: DEV001
    scores = q_np @ doc_np.T
    top = np.argsort(-scores, axis=1)[:, : args.top_k]

    for qi, query in enumerate(args.queries):
        print(f"\n> {query}")
        for rank, di in enumerate(top[qi], 1):
            print(f"  {rank}. [{scores[qi, di]:.3f}] {docs[di]['id']}: {docs[di]['text'][:100]}")


if __name__ == "__main__":
    main()
