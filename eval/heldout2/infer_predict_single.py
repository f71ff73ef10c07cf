"""Command-line inference: classify images with a fine-tuned ResNet-50.

    python infer_predict_single.py weights.pt labels.json cat.jpg [more.jpg ...]
"""
import json
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image
from torchvision import models, transforms

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # expect: DEV004

PREPROCESS = transforms.Compose([
    transforms.Resize(256),
    transforms.CenterCrop(224),
    transforms.ToTensor(),
])


class Normalize(nn.Module):
    """ImageNet normalisation inside the model, so exported graphs take raw [0, 1] input."""

    def __init__(self):
        super().__init__()
        self.mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)  # expect: DEV014
        self.std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)  # expect: DEV014

    def forward(self, x):
        return (x - self.mean) / self.std


def load_model(weights: Path, num_classes: int):
    backbone = models.resnet50()
    backbone.fc = nn.Linear(backbone.fc.in_features, num_classes)
    state = torch.load(weights, map_location="cpu")
    backbone.load_state_dict(state["model"] if "model" in state else state)
    model = nn.Sequential(Normalize(), backbone)
    model.to(DEVICE)
    model.eval()
    return model


@torch.no_grad()
def predict(model, image: Image.Image, topk=5):
    tensor = PREPROCESS(image.convert("RGB")).unsqueeze(0).to(DEVICE)
    probs = F.softmax(model(tensor), dim=1)[0]
    scores = probs.numpy()  # expect: DEV001
    top = np.argsort(scores)[::-1][:topk]
    return [(int(i), float(scores[i])) for i in top]


@torch.no_grad()
def predict_batch(model, paths, batch_size=16):
    results = []
    for start in range(0, len(paths), batch_size):
        chunk = paths[start:start + batch_size]
        batch = torch.stack([PREPROCESS(Image.open(p).convert("RGB")) for p in chunk]).to(DEVICE)
        logits = model(batch)
        conf, cls = logits.softmax(-1).max(-1)
        results.extend(zip(chunk, cls.tolist(), conf.tolist()))
    return results


def main(argv):
    labels = json.loads(Path(argv[1]).read_text())
    model = load_model(Path(argv[0]), len(labels))
    if torch.cuda.is_available():
        print("running on", torch.cuda.get_device_name(DEVICE))
    paths = argv[2:]
    if len(paths) == 1:
        for idx, score in predict(model, Image.open(paths[0])):
            print(f"{labels[idx]:>20s}  {score:.3f}")
    else:
        for path, idx, conf in predict_batch(model, paths):
            print(f"{path}: {labels[idx]} ({conf:.2f})")


if __name__ == "__main__":
    main(sys.argv[1:])
