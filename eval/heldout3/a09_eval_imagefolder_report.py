"""Evaluate a trained EfficientNet checkpoint on an ImageFolder split and write a metrics report."""
import argparse
import json
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.metrics import classification_report, confusion_matrix, roc_auc_score
from torch.utils.data import DataLoader
from torchvision import datasets, models, transforms


def get_device():
    if torch.cuda.is_available():  # expect: DEV004
        return torch.device("cuda")
    else:
        return torch.device("cpu")


def build_model(num_classes, ckpt_path):
    model = models.efficientnet_b0(num_classes=num_classes)
    state = torch.load(ckpt_path)  # expect: DEV007
    if "model" in state:
        state = state["model"]
    # checkpoints saved from DataParallel have a "module." prefix
    state = {k.replace("module.", "", 1): v for k, v in state.items()}
    model.load_state_dict(state)
    return model


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("data_dir")
    parser.add_argument("checkpoint")
    parser.add_argument("--out-dir", default="reports")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--img-size", type=int, default=224)
    return parser.parse_args()


def main():
    args = parse_args()
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    device = get_device()

    tf = transforms.Compose([
        transforms.Resize(int(args.img_size * 1.14)),
        transforms.CenterCrop(args.img_size),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    dataset = datasets.ImageFolder(args.data_dir, transform=tf)
    loader = DataLoader(
        dataset,
        batch_size=args.batch_size,
        shuffle=False,
        num_workers=args.workers,
        pin_memory=True,  # expect: DEV005
    )

    model = build_model(len(dataset.classes), args.checkpoint)
    model.to(device)
    model.eval()

    all_probs, all_targets = [], []
    top5_hits = 0
    with torch.no_grad():
        for images, targets in loader:
            images = images.to(device, non_blocking=True)
            logits = model(images)
            probs = F.softmax(logits, dim=1)
            all_probs.append(probs.cpu().numpy())
            all_targets.append(targets.numpy())
            k = min(5, logits.size(1))
            topk = logits.topk(k, dim=1).indices.numpy()  # expect: DEV001
            top5_hits += int((topk == targets.numpy()[:, None]).any(axis=1).sum())

    probs = np.concatenate(all_probs)
    y_true = np.concatenate(all_targets)
    y_pred = probs.argmax(axis=1)

    report = classification_report(y_true, y_pred, target_names=dataset.classes, output_dict=True, zero_division=0)
    cm = confusion_matrix(y_true, y_pred)
    if len(dataset.classes) == 2:
        auc = roc_auc_score(y_true, probs[:, 1])
    else:
        auc = roc_auc_score(y_true, probs, multi_class="ovr")

    metrics = {
        "n_images": int(len(y_true)),
        "accuracy": float((y_pred == y_true).mean()),
        "top5_accuracy": top5_hits / len(y_true),
        "auc": float(auc),
        "macro_f1": report["macro avg"]["f1-score"],
        "per_class": {c: report[c] for c in dataset.classes},
    }
    with open(out_dir / "metrics.json", "w") as f:
        json.dump(metrics, f, indent=2)
    np.save(out_dir / "confusion_matrix.npy", cm)
    np.save(out_dir / "probs.npy", probs)
    print(f"accuracy {metrics['accuracy']:.4f}  top-5 {metrics['top5_accuracy']:.4f}  auc {metrics['auc']:.4f}")


if __name__ == "__main__":
    main()
