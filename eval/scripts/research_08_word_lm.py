# coding: utf-8
"""Word-level LSTM language model on Wikitext-2 (truncated BPTT)."""
import argparse
import math
import os
import time

import torch
import torch.nn as nn
import torch.onnx

parser = argparse.ArgumentParser(description="PyTorch Wikitext-2 RNN/LSTM Language Model")
parser.add_argument("--data", type=str, default="./data/wikitext-2")
parser.add_argument("--emsize", type=int, default=200)
parser.add_argument("--nhid", type=int, default=200)
parser.add_argument("--nlayers", type=int, default=2)
parser.add_argument("--lr", type=float, default=20)
parser.add_argument("--clip", type=float, default=0.25)
parser.add_argument("--epochs", type=int, default=40)
parser.add_argument("--batch_size", type=int, default=20)
parser.add_argument("--bptt", type=int, default=35)
parser.add_argument("--dropout", type=float, default=0.2)
parser.add_argument("--seed", type=int, default=1111)
parser.add_argument("--cpu", action="store_true", help="force CPU even if an accelerator is present")
parser.add_argument("--save", type=str, default="model.pt")
args = parser.parse_args()

torch.manual_seed(args.seed)
if args.cpu:
    device = torch.device("cpu")
elif torch.cuda.is_available():
    device = torch.device("cuda")
elif torch.backends.mps.is_available():
    device = torch.device("mps")
else:
    device = torch.device("cpu")


class Dictionary:
    def __init__(self):
        self.word2idx, self.idx2word = {}, []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]


def tokenize(path, dictionary):
    ids = []
    with open(path, "r", encoding="utf8") as f:
        for line in f:
            for word in line.split() + ["<eos>"]:
                ids.append(dictionary.add_word(word))
    return torch.tensor(ids, dtype=torch.int64)


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.5):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers = nhid, nlayers

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        return self.decoder(self.drop(output)), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous().to(device)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i):
    seq_len = min(args.bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].view(-1)


vocab = Dictionary()
train_data = batchify(tokenize(os.path.join(args.data, "train.txt"), vocab), args.batch_size)
val_data = batchify(tokenize(os.path.join(args.data, "valid.txt"), vocab), 10)
test_data = batchify(tokenize(os.path.join(args.data, "test.txt"), vocab), 10)
ntokens = len(vocab.idx2word)
model = RNNModel(ntokens, args.emsize, args.nhid, args.nlayers, args.dropout).to(device)
criterion = nn.NLLLoss()


def evaluate(data_source):
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(10)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(torch.log_softmax(output, -1).view(-1, ntokens), targets).item()
    return total_loss / (len(data_source) - 1)


def train(lr):
    model.train()
    total_loss, start = 0.0, time.time()
    hidden = model.init_hidden(args.batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(torch.log_softmax(output, -1).view(-1, ntokens), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-lr)
        total_loss += loss.item()
        if batch % 200 == 0 and batch > 0:
            cur = total_loss / 200
            print(f"| batch {batch} | lr {lr:.2f} | {(time.time() - start) * 5:.0f} ms/batch | "
                  f"loss {cur:.2f} | ppl {math.exp(cur):.2f}")
            total_loss, start = 0.0, time.time()


lr, best_val = args.lr, None
try:
    for epoch in range(1, args.epochs + 1):
        train(lr)
        val_loss = evaluate(val_data)
        print(f"| end of epoch {epoch} | valid loss {val_loss:.2f} | valid ppl {math.exp(val_loss):.2f}")
        if best_val is None or val_loss < best_val:
            with open(args.save, "wb") as f:
                torch.save(model, f)
            best_val = val_loss
        else:
            lr /= 4.0
except KeyboardInterrupt:
    print("Exiting from training early")

with open(args.save, "rb") as f:
    model = torch.load(f, map_location=device, weights_only=False)
    model.rnn.flatten_parameters()
test_loss = evaluate(test_data)
print(f"| End of training | test loss {test_loss:.2f} | test ppl {math.exp(test_loss):.2f}")
dummy_input = torch.zeros(args.bptt, 1, dtype=torch.long, device=device)
torch.onnx.export(model, (dummy_input, model.init_hidden(1)), "model.onnx")
