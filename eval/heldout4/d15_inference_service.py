"""Flask inference service for an image classifier fine-tuned from ResNet-50.

    MODEL_PATH=resnet50_flowers.pt LABELS_PATH=labels.json flask --app d15_inference_service run

POST /predict   (multipart field "image")   -> top-k classes with probabilities
POST /embed     (multipart field "image")   -> 2048-d embedding as a JSON list
GET  /health                                -> device info
"""
import io
import json
import os
import time

import numpy as np
import torch
import torch.nn.functional as F
from flask import Flask, jsonify, request
from PIL import Image
from torchvision import models

MODEL_PATH = os.environ.get("MODEL_PATH", "resnet50_flowers.pt")
LABELS_PATH = os.environ.get("LABELS_PATH", "labels.json")
TOP_K = int(os.environ.get("TOP_K", "5"))

if torch.cuda.is_available():
    DEVICE = torch.device("cuda")
elif torch.backends.mps.is_available():
    DEVICE = torch.device("mps")
else:
    DEVICE = torch.device("cpu")

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)

with open(LABELS_PATH) as f:
    CLASS_NAMES = json.load(f)

model = models.resnet50(num_classes=len(CLASS_NAMES))
model.load_state_dict(torch.load(MODEL_PATH, map_location="cpu"))
model.eval()
model.to(DEVICE)

# everything except the final fc layer, for /embed
backbone = torch.nn.Sequential(*list(model.children())[:-1])

app = Flask(__name__)


def preprocess(image_bytes):
    img = Image.open(io.BytesIO(image_bytes)).convert("RGB").resize((224, 224), Image.BILINEAR)
    arr = np.asarray(img, dtype=np.float32) / 255.0
    x = torch.from_numpy(arr).permute(2, 0, 1)
    x = (x - MEAN) / STD
    return x.unsqueeze(0)


@app.route("/health", methods=["GET"])
def health():
    return jsonify({
        "device": str(DEVICE),
        "gpu": torch.cuda.get_device_name(DEVICE) if DEVICE.type == "cuda" else None,
        "num_classes": len(CLASS_NAMES),
    })


@app.route("/predict", methods=["POST"])
def predict():
    if "image" not in request.files:
        return jsonify({"error": "missing file field 'image'"}), 400
    t0 = time.perf_counter()
    x = preprocess(request.files["image"].read()).to(DEVICE)
    with torch.inference_mode():
        logits = model(x)
        probs = F.softmax(logits, dim=1).squeeze(0).numpy()  # expect: DEV001
    top = np.argsort(-probs)[:TOP_K]
    return jsonify({
        "predictions": [{"label": CLASS_NAMES[i], "prob": float(probs[i])} for i in top],
        "latency_ms": round((time.perf_counter() - t0) * 1000, 2),
    })


@app.route("/embed", methods=["POST"])
def embed():
    if "image" not in request.files:
        return jsonify({"error": "missing file field 'image'"}), 400
    x = preprocess(request.files["image"].read()).to(DEVICE)
    with torch.inference_mode():
        emb = backbone(x).flatten(1)
        emb = F.normalize(emb, dim=1)
    emb.cpu()  # expect: DEV008
    return jsonify({"embedding": emb[0].tolist()})


@app.route("/predict_batch", methods=["POST"])
def predict_batch():
    files = request.files.getlist("images")
    if not files:
        return jsonify({"error": "no images"}), 400
    batch = torch.cat([preprocess(f.read()) for f in files]).to(DEVICE)
    with torch.inference_mode():
        probs = F.softmax(model(batch), dim=1)
        conf, idx = probs.max(dim=1)
    return jsonify([
        {"label": CLASS_NAMES[i], "prob": p}
        for i, p in zip(idx.cpu().tolist(), conf.cpu().tolist())
    ])


if __name__ == "__main__":
    app.run(host="0.0.0.0", port=int(os.environ.get("PORT", "8000")))
