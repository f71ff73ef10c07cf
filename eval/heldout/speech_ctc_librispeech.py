"""BiLSTM + CTC acoustic model on LibriSpeech log-mel features."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchaudio
from torch.utils.data import DataLoader

CHARS = "_ 'abcdefghijklmnopqrstuvwxyz"
char2idx = {c: i for i, c in enumerate(CHARS)}

parser = argparse.ArgumentParser()
parser.add_argument("--data", default="./LibriSpeech")
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--bs", type=int, default=16)
parser.add_argument("--amp", action="store_true")
parser.add_argument("--no-cuda", action="store_true")
args = parser.parse_args()
args.cuda = torch.cuda.is_available() and not args.no_cuda

mel = torchaudio.transforms.MelSpectrogram(sample_rate=16000, n_mels=80)


def collate(batch):
    feats, feat_lens, targets, target_lens = [], [], [], []
    for waveform, _, transcript, *_ in batch:
        f = mel(waveform).squeeze(0).clamp(min=1e-10).log().transpose(0, 1)
        t = torch.tensor([char2idx[c] for c in transcript.lower() if c in char2idx])
        feats.append(f)
        feat_lens.append(f.size(0))
        targets.append(t)
        target_lens.append(len(t))
    feats = nn.utils.rnn.pad_sequence(feats, batch_first=True)
    return feats, torch.tensor(feat_lens), torch.cat(targets), torch.tensor(target_lens)


class AcousticModel(nn.Module):
    def __init__(self, n_mels=80, hidden=320, n_classes=len(CHARS)):
        super().__init__()
        self.conv = nn.Conv1d(n_mels, hidden, kernel_size=3, stride=2, padding=1)
        self.lstm = nn.LSTM(hidden, hidden, num_layers=3, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(hidden * 2, n_classes)

    def forward(self, x, lengths):
        x = F.relu(self.conv(x.transpose(1, 2))).transpose(1, 2)
        lengths = (lengths - 1) // 2 + 1
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        return self.fc(out).log_softmax(-1), lengths


def greedy_decode(log_probs, lengths):
    best = log_probs.argmax(-1).cpu().numpy()
    texts = []
    for seq, n in zip(best, lengths.tolist()):
        prev, chars = None, []
        for idx in seq[:n]:
            if idx != prev and idx != 0:
                chars.append(CHARS[idx])
            prev = idx
        texts.append("".join(chars))
    return texts


train_set = torchaudio.datasets.LIBRISPEECH(args.data, url="train-clean-100", download=True)
loader = DataLoader(train_set, batch_size=args.bs, shuffle=True, collate_fn=collate, num_workers=4)

model = AcousticModel()
if args.cuda:
    model.cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
scaler = torch.amp.GradScaler("cuda", enabled=args.amp and args.cuda)

for epoch in range(args.epochs):
    model.train()
    t0 = time.time()
    for step, (feats, feat_lens, targets, target_lens) in enumerate(loader):
        if args.cuda:
            feats = feats.cuda(non_blocking=True)
            targets = targets.cuda(non_blocking=True)
        with torch.cuda.amp.autocast(enabled=args.amp):  # expect: DEV009
            log_probs, out_lens = model(feats, feat_lens)
        # CTC accepts the length tensors on the CPU
        loss = F.ctc_loss(log_probs.float().transpose(0, 1), targets, out_lens, target_lens, zero_infinity=True)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step} loss {loss.item():.3f}")
            print("  hyp:", greedy_decode(log_probs.detach(), out_lens)[0])
    torch.cuda.synchronize()  # expect: DEV011
    print(f"epoch {epoch} took {time.time() - t0:.1f}s")
    torch.save(model.state_dict(), f"ctc_epoch{epoch}.pt")
