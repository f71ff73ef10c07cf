"""Run a trained U-Net on a video, frame by frame, and write an overlay video.

    python segment_video.py input.mp4 output.mp4
"""
import sys
import time

import cv2
import numpy as np
import torch

from unet import UNet

COLORS = np.array([[0, 0, 0], [0, 200, 0], [200, 0, 0], [0, 0, 200]], dtype=np.uint8)

device = torch.device("cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu")

model = UNet(n_channels=3, n_classes=len(COLORS))
state = torch.load("checkpoints/unet_best.pth", map_location=device)
model.load_state_dict(state["model"] if "model" in state else state)
model.to(device)
model.eval()

src, dst = sys.argv[1], sys.argv[2]
cap = cv2.VideoCapture(src)
fps = cap.get(cv2.CAP_PROP_FPS)
w = int(cap.get(cv2.CAP_PROP_FRAME_WIDTH))
h = int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))
writer = cv2.VideoWriter(dst, cv2.VideoWriter_fourcc(*"mp4v"), fps, (w, h))

n_frames = 0
t0 = time.time()
with torch.no_grad():
    while cap.isOpened():
        ok, frame = cap.read()
        if not ok:
            break
        rgb = cv2.cvtColor(cv2.resize(frame, (512, 512)), cv2.COLOR_BGR2RGB)
        frame_t = torch.from_numpy(rgb).permute(2, 0, 1).float().div(255.0).unsqueeze(0)
        frame_t.to(device)  # expect: DEV008
        logits = model(frame_t)  # expect: DEV006
        mask = logits.argmax(dim=1).squeeze(0).cpu().numpy()
        color = cv2.resize(COLORS[mask], (w, h), interpolation=cv2.INTER_NEAREST)
        overlay = cv2.addWeighted(frame, 0.6, cv2.cvtColor(color, cv2.COLOR_RGB2BGR), 0.4, 0)
        writer.write(overlay)
        n_frames += 1

if device.type == "cuda":
    torch.cuda.synchronize()
elapsed = time.time() - t0
cap.release()
writer.release()
print(f"{n_frames} frames in {elapsed:.1f}s ({n_frames / max(elapsed, 1e-6):.1f} fps)")
