"""Serve a fine-tuned ResNet-18 with Flask.

    curl -X POST -F file=@cat.jpg http://localhost:5000/predict
"""
import io
import json

import numpy as np
import torch
import torch.nn as nn
from flask import Flask, jsonify, request
from PIL import Image
from torchvision import models

MODEL_PATH = "checkpoints/resnet18_pets.pth"
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)

app = Flask(__name__)

with open("checkpoints/class_index.json") as f:
    class_index = json.load(f)

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # expect: DEV004

model = models.resnet18()
model.fc = nn.Linear(model.fc.in_features, len(class_index))
model.load_state_dict(torch.load(MODEL_PATH))  # expect: DEV007
model.to(device)
model.eval()


def preprocess(image_bytes):
    img = Image.open(io.BytesIO(image_bytes)).convert("RGB").resize((224, 224))
    arr = np.asarray(img, dtype=np.float32) / 255.0
    arr = (arr - MEAN) / STD
    return arr.transpose(2, 0, 1)


def get_prediction(image_bytes, topk=3):
    tensor = torch.from_numpy(preprocess(image_bytes)).unsqueeze(0)
    with torch.no_grad():
        outputs = model(tensor)  # expect: DEV006
    probs = torch.softmax(outputs, dim=1)[0]
    values, indices = probs.topk(topk)
    return [
        {"class": class_index[str(idx)], "prob": round(p, 4)}
        for p, idx in zip(values.tolist(), indices.tolist())
    ]


@app.route("/predict", methods=["POST"])
def predict():
    if "file" not in request.files:
        return jsonify({"error": "no file"}), 400
    img_bytes = request.files["file"].read()
    return jsonify(get_prediction(img_bytes))


@app.route("/health")
def health():
    return jsonify({"device": str(device), "classes": len(class_index)})


if __name__ == "__main__":
    app.run(host="0.0.0.0", port=5000)
