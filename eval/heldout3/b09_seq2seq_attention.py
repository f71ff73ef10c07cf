"""GRU encoder-decoder with Bahdanau attention and input feeding, for a toy
reverse-the-sequence task (useful for sanity-checking the attention plots)."""
import argparse
import random

import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

SOS, EOS, PAD = 1, 2, 0


class Encoder(nn.Module):
    def __init__(self, vocab, emb, enc_hid, dec_hid, dropout):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb, padding_idx=PAD)
        self.rnn = nn.GRU(emb, enc_hid, bidirectional=True)
        self.fc = nn.Linear(enc_hid * 2, dec_hid)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src):
        embedded = self.dropout(self.embedding(src))
        outputs, hidden = self.rnn(embedded)
        hidden = torch.tanh(self.fc(torch.cat((hidden[-2], hidden[-1]), dim=1)))
        return outputs, hidden


class Attention(nn.Module):
    def __init__(self, enc_hid, dec_hid):
        super().__init__()
        self.attn = nn.Linear(enc_hid * 2 + dec_hid, dec_hid)
        self.v = nn.Linear(dec_hid, 1, bias=False)

    def forward(self, hidden, encoder_outputs):
        src_len = encoder_outputs.shape[0]
        hidden = hidden.unsqueeze(1).repeat(1, src_len, 1)
        encoder_outputs = encoder_outputs.permute(1, 0, 2)
        energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
        return F.softmax(self.v(energy).squeeze(2), dim=1)


class Decoder(nn.Module):
    def __init__(self, vocab, emb, enc_hid, dec_hid, dropout):
        super().__init__()
        self.vocab = vocab
        self.enc_hid = enc_hid
        self.attention = Attention(enc_hid, dec_hid)
        self.embedding = nn.Embedding(vocab, emb, padding_idx=PAD)
        self.rnn = nn.GRU(enc_hid * 2 + emb, dec_hid)
        self.fc_out = nn.Linear(enc_hid * 2 + dec_hid + emb, vocab)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, encoder_outputs, prev_context=None):
        embedded = self.dropout(self.embedding(input.unsqueeze(0)))
        if prev_context is None:
            prev_context = torch.zeros(1, input.size(0), self.enc_hid * 2)  # expect: DEV013
        a = self.attention(hidden, encoder_outputs)
        context = torch.bmm(a.unsqueeze(1), encoder_outputs.permute(1, 0, 2)).permute(1, 0, 2)
        rnn_input = torch.cat((embedded, prev_context), dim=2)
        output, hidden = self.rnn(rnn_input, hidden.unsqueeze(0))
        pred = self.fc_out(torch.cat((output.squeeze(0), context.squeeze(0),
                                      embedded.squeeze(0)), dim=1))
        return pred, hidden.squeeze(0), context, a


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, src, trg, teacher_forcing_ratio=0.5):
        trg_len, batch_size = trg.shape
        outputs = torch.zeros(trg_len, batch_size, self.decoder.vocab, device=src.device)
        attentions = []
        encoder_outputs, hidden = self.encoder(src)
        input, context = trg[0, :], None
        for t in range(1, trg_len):
            output, hidden, context, a = self.decoder(input, hidden, encoder_outputs, context)
            outputs[t] = output
            attentions.append(a)
            top1 = output.argmax(1)
            input = trg[t] if random.random() < teacher_forcing_ratio else top1
        return outputs, torch.stack(attentions, dim=1)


def make_data(n, vocab, min_len=5, max_len=12):
    seqs = []
    for _ in range(n):
        body = [random.randint(3, vocab - 1) for _ in range(random.randint(min_len, max_len))]
        body += [PAD] * (max_len - len(body))
        seqs.append(body)
    src = torch.tensor([[SOS] + s + [EOS] for s in seqs])
    trg = torch.tensor([[SOS] + s[::-1] + [EOS] for s in seqs])
    return TensorDataset(src, trg)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--vocab", type=int, default=30)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--clip", type=float, default=1.0)
    args = p.parse_args()

    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')  # expect: DEV004
    train_loader = DataLoader(make_data(20000, args.vocab), batch_size=args.batch_size, shuffle=True)
    valid_set = make_data(1000, args.vocab)
    valid_loader = DataLoader(valid_set, batch_size=args.batch_size)

    enc = Encoder(args.vocab, 64, 128, 128, 0.1)
    dec = Decoder(args.vocab, 64, 128, 128, 0.1)
    model = Seq2Seq(enc, dec).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss(ignore_index=PAD)

    for epoch in range(args.epochs):
        model.train()
        epoch_loss = 0.0
        for src, trg in train_loader:
            src, trg = src.t().to(device), trg.t().to(device)
            optimizer.zero_grad()
            output, _ = model(src, trg)
            loss = criterion(output[1:].reshape(-1, output.shape[-1]), trg[1:].reshape(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            optimizer.step()
            epoch_loss += loss.item()

        model.eval()
        correct = total = 0
        with torch.no_grad():
            for src, trg in valid_loader:
                src, trg = src.t().to(device), trg.t().to(device)
                output, _ = model(src, trg, 0)
                pred = output[1:].argmax(-1)
                mask = trg[1:] != PAD
                correct += ((pred == trg[1:]) & mask).sum().item()
                total += mask.sum().item()
        print(f"epoch {epoch}: loss {epoch_loss / len(train_loader):.3f} "
              f"token acc {correct / total:.3f}")

    # attention map for one validation example
    src, trg = valid_set[0]
    src, trg = src.unsqueeze(1).to(device), trg.unsqueeze(1).to(device)
    with torch.no_grad():
        logits, attn = model(src, trg, 0)
    pred_tokens = logits[1:, 0].argmax(-1).numpy()  # expect: DEV001
    attn_map = attn[0].cpu().numpy()
    fig, ax = plt.subplots(figsize=(6, 6))
    ax.matshow(attn_map, cmap="bone")
    ax.set_xticks(range(src.size(0)))
    ax.set_xticklabels(src[:, 0].tolist(), rotation=90)
    ax.set_yticks(range(len(pred_tokens)))
    ax.set_yticklabels(pred_tokens.tolist())
    plt.savefig("attention.png", bbox_inches="tight")


if __name__ == "__main__":
    main()
