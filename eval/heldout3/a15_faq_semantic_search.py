"""Semantic search over our support FAQ with a sentence-embedding model.

    python faq_search.py --build --faq faq.jsonl       # embed all questions once
    python faq_search.py                              # interactive queries
"""
import argparse
import json

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from transformers import AutoModel, AutoTokenizer

device = torch.device("cuda:0")  # expect: DEV003


@torch.no_grad()
def encode(texts, tokenizer, model, batch_size=64):
    """Return L2-normalised CLS embeddings for a list of strings, on the CPU."""
    loader = DataLoader(
        texts,
        batch_size=batch_size,
        collate_fn=lambda b: tokenizer(b, padding=True, truncation=True, max_length=256, return_tensors="pt"),
    )
    chunks = []
    for batch in loader:
        batch = {k: v.to(device) for k, v in batch.items()}
        out = model(**batch)
        emb = F.normalize(out.last_hidden_state[:, 0], dim=-1)
        chunks.append(emb.cpu())
    return torch.cat(chunks)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="BAAI/bge-small-en-v1.5")
    parser.add_argument("--faq", default="faq.jsonl")
    parser.add_argument("--index", default="faq_index.npy")
    parser.add_argument("--build", action="store_true")
    parser.add_argument("-k", type=int, default=3)
    args = parser.parse_args()

    print("running on", torch.cuda.get_device_name(device))  # expect: DEV011
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModel.from_pretrained(args.model)
    model.to(device)
    model.eval()

    with open(args.faq, encoding="utf-8") as f:
        faq = [json.loads(line) for line in f if line.strip()]

    if args.build:
        corpus_embs = encode([item["question"] for item in faq], tokenizer, model)
        np.save(args.index, corpus_embs.numpy())
        print(f"indexed {len(faq)} questions -> {args.index}")
        return

    corpus_embs = torch.from_numpy(np.load(args.index))
    assert corpus_embs.shape[0] == len(faq), "index is stale, rebuild it with --build"
    corpus_embs.to(device)  # expect: DEV008

    while True:
        try:
            query = input("query> ").strip()
        except EOFError:
            break
        if not query:
            break
        enc = tokenizer([query], padding=True, truncation=True, max_length=256, return_tensors="pt").to(device)
        with torch.no_grad():
            out = model(**enc)
        q_emb = F.normalize(out.last_hidden_state[:, 0], dim=-1)
        scores = q_emb @ corpus_embs.T  # expect: DEV006
        top = scores[0].topk(min(args.k, len(faq)))
        for score, idx in zip(top.values.cpu().tolist(), top.indices.cpu().tolist()):
            item = faq[idx]
            print(f"  {score:.3f}  {item['question']}\n         -> {item['answer']}")


if __name__ == "__main__":
    main()
