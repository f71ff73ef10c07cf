"""Precompute log-mel features for a folder of wav files.

Everything here runs on the CPU inside DataLoader workers; the output is one .pt file per
utterance plus global mean/std used by the training script for normalisation.
"""
import argparse
import json
import os
from pathlib import Path

import numpy as np
import soundfile as sf
import torch
import torchaudio
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm


def load_wav(path, target_sr):
    audio, sr = sf.read(path, dtype="float32", always_2d=True)
    wav = torch.from_numpy(audio.T.copy())
    if wav.size(0) > 1:
        wav = wav.mean(dim=0, keepdim=True)
    if sr != target_sr:
        wav = torchaudio.functional.resample(wav, sr, target_sr)
    return wav.squeeze(0)


class WavFolder(Dataset):
    def __init__(self, root, sr, n_fft, hop, n_mels):
        self.files = sorted(Path(root).rglob("*.wav"))
        self.sr = sr
        self.mel = torchaudio.transforms.MelSpectrogram(
            sample_rate=sr, n_fft=n_fft, hop_length=hop, n_mels=n_mels, power=2.0)

    def __len__(self):
        return len(self.files)

    def __getitem__(self, idx):
        path = self.files[idx]
        wav = load_wav(str(path), self.sr)
        # simple peak normalisation + pre-emphasis
        wav = wav / wav.abs().max().clamp(min=1e-5)
        wav = torch.cat([wav[:1], wav[1:] - 0.97 * wav[:-1]])
        feats = torch.log(self.mel(wav) + 1e-6)  # (n_mels, frames)
        return str(path), feats


def running_stats(dataset, workers):
    loader = DataLoader(dataset, batch_size=None, num_workers=workers)
    n, s, ss = 0, None, None
    for _, feats in tqdm(loader, desc="stats"):
        x = feats.double()
        if s is None:
            s = torch.zeros(x.size(0), dtype=torch.float64)
            ss = torch.zeros(x.size(0), dtype=torch.float64)
        s += x.sum(dim=1)
        ss += (x ** 2).sum(dim=1)
        n += x.size(1)
    mean = s / n
    std = (ss / n - mean ** 2).clamp(min=1e-8).sqrt()
    return mean.float(), std.float()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--wav-dir", required=True)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--sr", type=int, default=16000)
    p.add_argument("--n-fft", type=int, default=400)
    p.add_argument("--hop", type=int, default=160)
    p.add_argument("--n-mels", type=int, default=80)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 4)
    p.add_argument("--stats", default="", help="reuse stats from the training set")
    args = p.parse_args()

    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    ds = WavFolder(args.wav_dir, args.sr, args.n_fft, args.hop, args.n_mels)
    print(f"{len(ds)} files")

    if args.stats:
        stats = torch.load(args.stats)  # expect: DEV007
        mean, std = stats["mean"], stats["std"]
    else:
        mean, std = running_stats(ds, args.workers)
        torch.save({"mean": mean, "std": std}, out_dir / "stats.pt")
    np.savetxt(out_dir / "mean.txt", mean.numpy())
    np.savetxt(out_dir / "std.txt", std.numpy())

    loader = DataLoader(ds, batch_size=None, num_workers=args.workers)
    manifest = []
    lengths = []
    for path, feats in tqdm(loader, desc="features"):
        feats = (feats - mean[:, None]) / std[:, None]
        rel = Path(path).relative_to(args.wav_dir).with_suffix(".pt")
        target = out_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        torch.save(feats.clone().half(), target)
        manifest.append({"feats": str(rel), "frames": feats.size(1)})
        lengths.append(feats.size(1))

    lengths = np.asarray(lengths)
    hist, edges = np.histogram(lengths, bins=20)
    with open(out_dir / "manifest.json", "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"frames: min {lengths.min()} median {int(np.median(lengths))} max {lengths.max()}")
    for h, e in zip(hist.tolist(), edges.tolist()):
        print(f"{e:8.0f} {'#' * (60 * h // max(hist.max(), 1))}")

    # sanity check on one example
    _, example = ds[0]
    example = ((example - mean[:, None]) / std[:, None]).numpy()
    print("example", example.shape, np.asarray(example).mean(), example.std())


if __name__ == "__main__":
    main()
