"""French -> English GRU seq2seq with Bahdanau attention (adapted from the PyTorch tutorial).

python research_10_seq2seq_attention.py --data data/eng-fra.txt --epochs 80 [--eval-only]
"""
import argparse
import random
import re
import time
import unicodedata

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, RandomSampler, TensorDataset

SOS_token, EOS_token = 0, 1
MAX_LENGTH = 10
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # expect: DEV004


class Lang:
    def __init__(self, name):
        self.name = name
        self.word2index = {}
        self.index2word = {0: "SOS", 1: "EOS"}
        self.n_words = 2

    def add_sentence(self, sentence):
        for word in sentence.split(" "):
            if word not in self.word2index:
                self.word2index[word] = self.n_words
                self.index2word[self.n_words] = word
                self.n_words += 1


def normalize(s):
    s = "".join(c for c in unicodedata.normalize("NFD", s.lower().strip()) if unicodedata.category(c) != "Mn")
    s = re.sub(r"([.!?])", r" \1", s)
    return re.sub(r"[^a-zA-Z!?]+", r" ", s).strip()


def read_pairs(path):
    with open(path, encoding="utf-8") as f:
        pairs = [[normalize(s) for s in line.split("\t")][::-1] for line in f.read().strip().split("\n")]
    return [p for p in pairs if len(p[0].split(" ")) < MAX_LENGTH and len(p[1].split(" ")) < MAX_LENGTH]


def get_dataloader(pairs, input_lang, output_lang, batch_size):
    n = len(pairs)
    input_ids = np.zeros((n, MAX_LENGTH), dtype=np.int32)
    target_ids = np.zeros((n, MAX_LENGTH), dtype=np.int32)
    for idx, (inp, tgt) in enumerate(pairs):
        inp_ids = [input_lang.word2index[w] for w in inp.split(" ")] + [EOS_token]
        tgt_ids = [output_lang.word2index[w] for w in tgt.split(" ")] + [EOS_token]
        input_ids[idx, :len(inp_ids)] = inp_ids
        target_ids[idx, :len(tgt_ids)] = tgt_ids
    data = TensorDataset(torch.LongTensor(input_ids).to(device), torch.LongTensor(target_ids).to(device))
    return DataLoader(data, sampler=RandomSampler(data), batch_size=batch_size)


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size, dropout_p=0.1):
        super().__init__()
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input):
        return self.gru(self.dropout(self.embedding(input)))


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys))).squeeze(2).unsqueeze(1)
        weights = F.softmax(scores, dim=-1)
        return torch.bmm(weights, keys), weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.1):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long).fill_(SOS_token)  # expect: DEV013
        decoder_hidden = encoder_hidden
        decoder_outputs, attentions = [], []
        for i in range(MAX_LENGTH):
            embedded = self.dropout(self.embedding(decoder_input))
            context, attn = self.attention(decoder_hidden.permute(1, 0, 2), encoder_outputs)
            output, decoder_hidden = self.gru(torch.cat((embedded, context), dim=2), decoder_hidden)
            output = self.out(output)
            decoder_outputs.append(output)
            attentions.append(attn)
            if target_tensor is not None:
                decoder_input = target_tensor[:, i].unsqueeze(1)
            else:
                decoder_input = output.topk(1)[1].squeeze(-1).detach()
        decoder_outputs = F.log_softmax(torch.cat(decoder_outputs, dim=1), dim=-1)
        return decoder_outputs, decoder_hidden, torch.cat(attentions, dim=1)


def train_epoch(dataloader, encoder, decoder, enc_opt, dec_opt, criterion):
    total_loss = 0
    for input_tensor, target_tensor in dataloader:
        enc_opt.zero_grad()
        dec_opt.zero_grad()
        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)
        loss = criterion(decoder_outputs.view(-1, decoder_outputs.size(-1)), target_tensor.view(-1))
        loss.backward()
        enc_opt.step()
        dec_opt.step()
        total_loss += loss.item()
    return total_loss / len(dataloader)


def translate(encoder, decoder, sentence, input_lang, output_lang):
    with torch.no_grad():
        ids = [input_lang.word2index[w] for w in sentence.split(" ")] + [EOS_token]
        input_tensor = torch.tensor(ids, dtype=torch.long, device=device).view(1, -1)
        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, _, attentions = decoder(encoder_outputs, encoder_hidden)
        decoded_ids = decoder_outputs.topk(1)[1].squeeze()
        words = []
        for idx in decoded_ids:
            if idx.item() == EOS_token:
                words.append("<EOS>")
                break
            words.append(output_lang.index2word[idx.item()])
    return words, attentions


def show_attention(sentence, words, attentions, path):
    fig, ax = plt.subplots()
    ax.matshow(attentions[0, :len(words), :].numpy(), cmap="bone")  # expect: DEV001
    ax.set_xticks(range(len(sentence.split(" ")) + 1), sentence.split(" ") + ["<EOS>"], rotation=90)
    ax.set_yticks(range(len(words)), words)
    fig.savefig(path)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data/eng-fra.txt")
    ap.add_argument("--epochs", type=int, default=80)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--eval-only", action="store_true")
    args = ap.parse_args()

    pairs = read_pairs(args.data)
    input_lang, output_lang = Lang("fra"), Lang("eng")
    for src, tgt in pairs:
        input_lang.add_sentence(src)
        output_lang.add_sentence(tgt)
    encoder = EncoderRNN(input_lang.n_words, args.hidden).to(device)
    decoder = AttnDecoderRNN(args.hidden, output_lang.n_words).to(device)

    if args.eval_only:
        encoder.load_state_dict(torch.load("encoder.pt"))  # expect: DEV007
        decoder.load_state_dict(torch.load("decoder.pt", map_location=device))
    else:
        loader = get_dataloader(pairs, input_lang, output_lang, batch_size=32)
        enc_opt = torch.optim.Adam(encoder.parameters(), lr=1e-3)
        dec_opt = torch.optim.Adam(decoder.parameters(), lr=1e-3)
        criterion = nn.NLLLoss()
        start = time.time()
        for epoch in range(1, args.epochs + 1):
            loss = train_epoch(loader, encoder, decoder, enc_opt, dec_opt, criterion)
            if epoch % 5 == 0:
                print(f"{time.time() - start:.0f}s epoch {epoch} loss {loss:.4f}")
        torch.save(encoder.state_dict(), "encoder.pt")
        torch.save(decoder.state_dict(), "decoder.pt")

    encoder.eval()
    decoder.eval()
    for i in range(5):
        src, tgt = random.choice(pairs)
        words, attentions = translate(encoder, decoder, src, input_lang, output_lang)
        print(">", src, "\n=", tgt, "\n<", " ".join(words), "\n")
        show_attention(src, words, attentions, f"attention_{i}.png")


if __name__ == "__main__":
    main()
