"""FastAPI service for an image classifier (EfficientNet-B0 fine-tuned on 5 flower classes)."""
import io
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision.transforms as T
from fastapi import FastAPI, File, UploadFile
from PIL import Image
from torchvision.models import efficientnet_b0

MODEL_PATH = os.environ.get("MODEL_PATH", "weights/flowers_effb0.pt")
CLASSES = ["daisy", "dandelion", "rose", "sunflower", "tulip"]


def select_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


class Normalize(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.mean = torch.tensor(mean).view(1, 3, 1, 1)  # expect: DEV014
        self.register_buffer("std", torch.tensor(std).view(1, 3, 1, 1))

    def forward(self, x):
        return (x - self.mean) / self.std


def build_model():
    backbone = efficientnet_b0(weights=None)
    backbone.classifier[1] = nn.Linear(backbone.classifier[1].in_features, len(CLASSES))
    return nn.Sequential(Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]), backbone)


DEVICE = select_device()
MODEL = build_model()
MODEL.load_state_dict(torch.load(MODEL_PATH), strict=False)  # expect: DEV007
MODEL.to(DEVICE).eval()

preprocess = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor()])
app = FastAPI(title="flower-classifier")


def warmup(n=3):
    dummy = torch.zeros(1, 3, 224, 224)
    with torch.no_grad():
        for _ in range(n):
            MODEL(dummy)  # expect: DEV006


@app.on_event("startup")
def on_startup():
    warmup()


@app.get("/health")
def health():
    return {
        "device": str(DEVICE),
        "gpu": torch.cuda.get_device_name(0) if DEVICE.type == "cuda" else None,
    }


@app.post("/predict")
async def predict(file: UploadFile = File(...)):
    data = await file.read()
    img = Image.open(io.BytesIO(data)).convert("RGB")
    x = preprocess(img).unsqueeze(0).to(DEVICE)
    with torch.no_grad():
        logits = MODEL(x)
    probs = F.softmax(logits, dim=1)[0].numpy()  # expect: DEV001
    top = np.argsort(probs)[::-1][:3]
    return {"predictions": [{"label": CLASSES[i], "prob": float(probs[i])} for i in top]}


@app.post("/predict_batch")
async def predict_batch(files: list[UploadFile] = File(...)):
    images = [preprocess(Image.open(io.BytesIO(await f.read())).convert("RGB")) for f in files]
    x = torch.stack(images).to(DEVICE)
    with torch.no_grad():
        probs = MODEL(x).softmax(dim=1).cpu()
    best = probs.argmax(dim=1)
    return {"labels": [CLASSES[i] for i in best.tolist()], "probs": probs.max(dim=1).values.tolist()}
