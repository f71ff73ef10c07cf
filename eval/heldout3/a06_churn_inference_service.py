"""Minimal HTTP inference service for the churn model.

    python serve.py --ckpt artifacts/churn.pt --port 8080
    curl -X POST localhost:8080/predict -d '{"tenure": 12, "monthly_charges": 70.5}'
"""
import argparse
import logging

import numpy as np
import torch
import torch.nn as nn
from flask import Flask, jsonify, request

log = logging.getLogger("churn-service")

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # expect: DEV004


class ChurnNet(nn.Module):
    def __init__(self, n_features, hidden=128, n_classes=2, dropout=0.2):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_features, hidden),
            nn.BatchNorm1d(hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, hidden // 2),
            nn.ReLU(),
            nn.Linear(hidden // 2, n_classes),
        )

    def forward(self, x):
        return self.net(x)


class Predictor:
    def __init__(self, ckpt_path, device=DEVICE):
        self.device = torch.device(device)
        ckpt = torch.load(ckpt_path, map_location="cpu")
        self.feature_names = list(ckpt["feature_names"])
        # normalisation statistics were saved as plain lists
        self.mean = np.asarray(ckpt["mean"], dtype=np.float32)
        self.std = np.asarray(ckpt["std"], dtype=np.float32)
        self.model = ChurnNet(len(self.feature_names), hidden=ckpt["hidden"])
        self.model.load_state_dict(ckpt["state_dict"])
        self.model.to(self.device)
        self.model.eval()
        log.info("loaded %s with %d features on %s", ckpt_path, len(self.feature_names), self.device)

    def _features(self, records):
        arr = np.array(
            [[float(r.get(name, 0.0)) for name in self.feature_names] for r in records],
            dtype=np.float32,
        )
        return (arr - self.mean) / self.std

    @torch.inference_mode()
    def predict_proba(self, records):
        x = torch.from_numpy(self._features(records)).to(self.device)
        logits = self.model(x)
        return torch.softmax(logits, dim=-1).cpu().numpy()

    @torch.inference_mode()
    def predict_labels(self, records):
        x = torch.from_numpy(self._features(records)).to(self.device)
        logits = self.model(x)
        return logits.argmax(dim=-1).numpy()  # expect: DEV001

    @torch.inference_mode()
    def predict_one(self, record):
        feats = np.array([float(record.get(name, 0.0)) for name in self.feature_names], dtype=np.float32)
        feats = (feats - self.mean) / self.std
        x = torch.from_numpy(feats).unsqueeze(0)
        logits = self.model(x)  # expect: DEV006
        prob = torch.softmax(logits, dim=-1)[0, 1].item()
        return {"churn_probability": prob, "label": int(prob > 0.5)}


app = Flask(__name__)
predictor = None


@app.route("/health")
def health():
    return jsonify({"status": "ok", "device": str(predictor.device), "cuda": torch.cuda.is_available()})


@app.route("/predict", methods=["POST"])
def predict():
    payload = request.get_json(force=True)
    if isinstance(payload, list):
        probs = predictor.predict_proba(payload)
        labels = predictor.predict_labels(payload)
        return jsonify({"probabilities": probs[:, 1].tolist(), "labels": labels.tolist()})
    return jsonify(predictor.predict_one(payload))


def main():
    global predictor
    parser = argparse.ArgumentParser()
    parser.add_argument("--ckpt", required=True)
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)

    predictor = Predictor(args.ckpt)
    # warm up so the first request is not slow
    predictor.predict_proba([{} for _ in range(4)])
    app.run(host=args.host, port=args.port)


if __name__ == "__main__":
    main()
