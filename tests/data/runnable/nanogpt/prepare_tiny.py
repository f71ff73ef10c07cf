"""Make a tiny character-level dataset (and, with --ckpt, a tiny checkpoint) for the corpus.

Written for devlint's runnable corpus, in the shape of nanoGPT's
data/shakespeare_char/prepare.py: the same files (data/tiny/train.bin, val.bin as uint16
ids, meta.pkl with vocab_size/stoi/itos), from generated text instead of a download.
With --ckpt, it also writes out/ckpt.pt in train.py's checkpoint format from a randomly
initialised tiny GPT, so that sample.py has something to resume from.
"""

import os
import pickle
import random
import sys

import numpy as np

words = ["the", "king", "queen", "speaks", "to", "a", "fool", "and", "his", "crown", "falls"]
rng = random.Random(0)
data = "\n".join(" ".join(rng.choice(words) for _ in range(8)) for _ in range(200))

chars = sorted(set(data))
stoi = {ch: i for i, ch in enumerate(chars)}
itos = {i: ch for i, ch in enumerate(chars)}
n = len(data)
train_ids = np.array([stoi[c] for c in data[: int(n * 0.9)]], dtype=np.uint16)
val_ids = np.array([stoi[c] for c in data[int(n * 0.9) :]], dtype=np.uint16)

out = os.path.join("data", "tiny")
os.makedirs(out, exist_ok=True)
train_ids.tofile(os.path.join(out, "train.bin"))
val_ids.tofile(os.path.join(out, "val.bin"))
with open(os.path.join(out, "meta.pkl"), "wb") as f:
    pickle.dump({"vocab_size": len(chars), "itos": itos, "stoi": stoi}, f)
print(f"tiny dataset: {len(train_ids)} train and {len(val_ids)} val tokens, vocab {len(chars)}")

if "--ckpt" in sys.argv[1:]:
    import torch

    from model import GPT, GPTConfig

    torch.manual_seed(0)
    model_args = dict(
        n_layer=1, n_head=2, n_embd=16, block_size=16, bias=False, vocab_size=len(chars), dropout=0.0
    )
    model = GPT(GPTConfig(**model_args))
    os.makedirs("out", exist_ok=True)
    checkpoint = {
        "model": model.state_dict(),
        "model_args": model_args,
        "iter_num": 0,
        "best_val_loss": 1e9,
        "config": {"dataset": "tiny"},
    }
    torch.save(checkpoint, os.path.join("out", "ckpt.pt"))
    print("tiny checkpoint: out/ckpt.pt")
