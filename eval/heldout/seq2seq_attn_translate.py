"""GRU seq2seq with Bahdanau attention and packed padded sequences (de -> en)."""
import argparse
import math
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

PAD_IDX, SOS_IDX, EOS_IDX, UNK_IDX = 0, 1, 2, 3

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--emb", type=int, default=256)
parser.add_argument("--hid", type=int, default=512)
parser.add_argument("--clip", type=float, default=1.0)
parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")  # expect: DEV004


class Encoder(nn.Module):
    def __init__(self, vocab, emb, hid, dropout=0.5):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb, padding_idx=PAD_IDX)
        self.rnn = nn.GRU(emb, hid, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(hid * 2, hid)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src, src_len):
        embedded = self.dropout(self.embedding(src))
        packed = nn.utils.rnn.pack_padded_sequence(embedded, src_len.cpu(), batch_first=True, enforce_sorted=False)
        packed_out, hidden = self.rnn(packed)
        outputs, _ = nn.utils.rnn.pad_packed_sequence(packed_out, batch_first=True)
        hidden = torch.tanh(self.fc(torch.cat((hidden[-2], hidden[-1]), dim=1)))
        return outputs, hidden


class Attention(nn.Module):
    def __init__(self, hid):
        super().__init__()
        self.attn = nn.Linear(hid * 3, hid)
        self.v = nn.Linear(hid, 1, bias=False)

    def forward(self, hidden, encoder_outputs, src_len):
        batch_size, src_max, _ = encoder_outputs.shape
        hidden = hidden.unsqueeze(1).repeat(1, src_max, 1)
        energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
        scores = self.v(energy).squeeze(2)
        mask = torch.arange(src_max).unsqueeze(0) < src_len.unsqueeze(1)  # expect: DEV013
        scores = scores.masked_fill(~mask, -1e10)
        return F.softmax(scores, dim=1)


class Decoder(nn.Module):
    def __init__(self, vocab, emb, hid, dropout=0.5):
        super().__init__()
        self.output_dim = vocab
        self.attention = Attention(hid)
        self.embedding = nn.Embedding(vocab, emb)
        self.rnn = nn.GRU(hid * 2 + emb, hid, batch_first=True)
        self.fc_out = nn.Linear(hid * 3 + emb, vocab)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, encoder_outputs, src_len):
        embedded = self.dropout(self.embedding(input.unsqueeze(1)))
        a = self.attention(hidden, encoder_outputs, src_len).unsqueeze(1)
        weighted = torch.bmm(a, encoder_outputs)
        output, hidden = self.rnn(torch.cat((embedded, weighted), dim=2), hidden.unsqueeze(0))
        pred = self.fc_out(torch.cat((output, weighted, embedded), dim=2).squeeze(1))
        return pred, hidden.squeeze(0)


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, src, src_len, trg, teacher_forcing_ratio=0.5):
        batch_size, trg_len = trg.shape
        outputs = torch.zeros(batch_size, trg_len, self.decoder.output_dim, device=src.device)
        encoder_outputs, hidden = self.encoder(src, src_len)
        input = trg[:, 0]
        for t in range(1, trg_len):
            output, hidden = self.decoder(input, hidden, encoder_outputs, src_len)
            outputs[:, t] = output
            top1 = output.argmax(1)
            input = trg[:, t] if random.random() < teacher_forcing_ratio else top1
        return outputs


def train_epoch(model, loader, optimizer, criterion, device, clip):
    model.train()
    epoch_loss = 0.0
    for src, src_len, trg in loader:
        src, src_len, trg = src.to(device), src_len.to(device), trg.to(device)
        optimizer.zero_grad()
        output = model(src, src_len, trg)
        loss = criterion(output[:, 1:].reshape(-1, output.size(-1)), trg[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        epoch_loss += loss.item()
    return epoch_loss / len(loader)


def translate_sentence(sentence, src_vocab, trg_itos, model, device, max_len=50):
    model.eval()
    tokens = [src_vocab.get(t, UNK_IDX) for t in sentence.lower().split()]
    src = torch.tensor([SOS_IDX] + tokens + [EOS_IDX], dtype=torch.long).unsqueeze(0)
    src.to(device)  # expect: DEV008
    src_len = torch.tensor([src.size(1)], device=device)
    with torch.no_grad():
        encoder_outputs, hidden = model.encoder(src, src_len)
    trg_indexes = [SOS_IDX]
    for _ in range(max_len):
        trg_tensor = torch.tensor([trg_indexes[-1]], device=device)
        with torch.no_grad():
            output, hidden = model.decoder(trg_tensor, hidden, encoder_outputs, src_len)
        pred_token = output.argmax(1).item()
        trg_indexes.append(pred_token)
        if pred_token == EOS_IDX:
            break
    return [trg_itos[i] for i in trg_indexes[1:]]


def main(train_loader, src_vocab, trg_itos):
    args = parser.parse_args()
    device = torch.device(args.device)
    enc = Encoder(len(src_vocab), args.emb, args.hid)
    dec = Decoder(len(trg_itos), args.emb, args.hid)
    model = Seq2Seq(enc, dec).to(device)
    optimizer = torch.optim.Adam(model.parameters())
    criterion = nn.CrossEntropyLoss(ignore_index=PAD_IDX)
    for epoch in range(args.epochs):
        loss = train_epoch(model, train_loader, optimizer, criterion, device, args.clip)
        print(f"epoch {epoch:02d} loss {loss:.3f} ppl {math.exp(loss):7.2f}")
    print(" ".join(translate_sentence("ein hund läuft im park", src_vocab, trg_itos, model, device)))
