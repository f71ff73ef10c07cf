#!/usr/bin/env python
# predict.py -- classify one image or every image in a folder with the trained model
import glob
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torchvision import transforms

CLASSES = ["cat", "dog", "horse", "sheep", "cow"]
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")  # expect: DEV004

preprocess = transforms.Compose([
    transforms.Resize((224, 224)),
    transforms.ToTensor(),
    transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
])

model = torch.load("checkpoints/best_model.pth", weights_only=False)  # expect: DEV007
model = model.to(device)
model.eval()


def predict_one(path, topk=3):
    img = Image.open(path).convert("RGB").resize((224, 224))
    arr = (np.asarray(img, dtype=np.float32) / 255.0 - MEAN) / STD
    x = torch.from_numpy(arr).permute(2, 0, 1).unsqueeze(0)
    with torch.no_grad():
        logits = model(x)  # expect: DEV006
    probs = F.softmax(logits, dim=1)[0].numpy()  # expect: DEV001
    order = np.argsort(-probs)[:topk]
    return [(CLASSES[i], float(probs[i])) for i in order]


def predict_folder(folder, batch_size=32):
    paths = sorted(glob.glob(os.path.join(folder, "*.jpg")) + glob.glob(os.path.join(folder, "*.png")))
    results = {}
    for start in range(0, len(paths), batch_size):
        chunk = paths[start:start + batch_size]
        batch = torch.stack([preprocess(Image.open(p).convert("RGB")) for p in chunk]).to(device)
        with torch.no_grad():
            probs = model(batch).softmax(dim=1).cpu().numpy()
        for p, row in zip(chunk, probs):
            results[os.path.basename(p)] = CLASSES[int(row.argmax())]
    return results


def export_onnx(out="model.onnx"):
    dummy = torch.randn(1, 3, 224, 224, device=device)
    torch.onnx.export(model, dummy, out, input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}}, opset_version=17)
    print("exported", out)


if __name__ == "__main__":
    target = sys.argv[1]
    if os.path.isdir(target):
        for name, label in predict_folder(target).items():
            print(f"{name}\t{label}")
    elif target == "--export":
        export_onnx()
    else:
        for label, p in predict_one(target):
            print(f"{label:>8s}: {p:.3f}")
