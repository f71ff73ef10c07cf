"""Checkpoint helpers shared by the training scripts.

save_checkpoint / resume keep model, optimizer, scheduler, scaler and RNG state together so
a run can be continued bit-for-bit on the same machine and approximately on another one.
"""
import glob
import os
import random
import re
import shutil
import tempfile

import numpy as np
import torch


def _unwrap(model):
    return model.module if hasattr(model, "module") else model


def rng_state():
    state = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state):
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"].cpu())
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


def save_checkpoint(path, model, optimizer=None, scheduler=None, scaler=None, **extra):
    """Atomically write a checkpoint (temp file + rename)."""
    state = {"model": _unwrap(model).state_dict(), "rng": rng_state(), **extra}
    if optimizer is not None:
        state["optimizer"] = optimizer.state_dict()
    if scheduler is not None:
        state["scheduler"] = scheduler.state_dict()
    if scaler is not None:
        state["scaler"] = scaler.state_dict()
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    os.close(fd)
    torch.save(state, tmp)
    os.replace(tmp, path)


def latest_checkpoint(folder, pattern="epoch_*.pt"):
    files = glob.glob(os.path.join(folder, pattern))
    if not files:
        return None
    return max(files, key=lambda f: int(re.findall(r"\d+", os.path.basename(f))[-1]))


def optimizer_to(optimizer, device):
    """Move optimizer state (Adam moments etc.) after loading it on another device."""
    for state in optimizer.state.values():
        for k, v in state.items():
            if torch.is_tensor(v):
                v.to(device)  # expect: DEV008


def resume(path, model, optimizer=None, scheduler=None, scaler=None, device=None):
    ckpt = torch.load(path, weights_only=False)  # expect: DEV007
    _unwrap(model).load_state_dict(ckpt["model"])
    if device is not None:
        model.to(device)
    if optimizer is not None and "optimizer" in ckpt:
        optimizer.load_state_dict(ckpt["optimizer"])
        if device is not None:
            optimizer_to(optimizer, device)
    if scheduler is not None and "scheduler" in ckpt:
        scheduler.load_state_dict(ckpt["scheduler"])
    if scaler is not None and "scaler" in ckpt:
        scaler.load_state_dict(ckpt["scaler"])
    if "rng" in ckpt:
        set_rng_state(ckpt["rng"])
    return ckpt.get("epoch", -1) + 1


def load_weights(path, model, device=None, strict=True):
    """Load only the weights, e.g. for evaluation or fine-tuning."""
    state = torch.load(path, map_location=device or "cpu", weights_only=True)
    if "model" in state:
        state = state["model"]
    # checkpoints written from DataParallel/DDP have a "module." prefix
    state = {k.removeprefix("module."): v for k, v in state.items()}
    return _unwrap(model).load_state_dict(state, strict=strict)


def load_backbone(path, model, prefix="backbone."):
    state = torch.load(path)  # expect: DEV007
    state = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    missing, unexpected = model.load_state_dict(state, strict=False)
    return missing, unexpected


def average_checkpoints(paths, out_path):
    """Uniform weight averaging of the last N checkpoints (done on CPU)."""
    avg = None
    for p in paths:
        state = torch.load(p, map_location="cpu")["model"]
        if avg is None:
            avg = {k: v.clone().double() for k, v in state.items()}
        else:
            for k, v in state.items():
                avg[k] += v.double()
    for k in avg:
        avg[k] = (avg[k] / len(paths)).float()
    torch.save({"model": avg}, out_path)
    return out_path


def export_numpy(path, out_dir):
    """Dump every weight as .npy for the inference code that has no torch."""
    state = torch.load(path, map_location=torch.device("cpu"))["model"]
    os.makedirs(out_dir, exist_ok=True)
    for name, tensor in state.items():
        np.save(os.path.join(out_dir, name + ".npy"), tensor.numpy())


def keep_last(folder, n=3, pattern="epoch_*.pt"):
    files = sorted(glob.glob(os.path.join(folder, pattern)), key=os.path.getmtime)
    for f in files[:-n]:
        if os.path.isdir(f):
            shutil.rmtree(f)
        else:
            os.remove(f)
