"""Run a trained YOLO-style detector on a folder of images and write COCO-format detections.

    python c07_detect_images.py --weights runs/det/best.pt --images samples/ --half
"""
import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torchvision.ops import batched_nms, box_convert, clip_boxes_to_image

from detector.model import build_detector


def letterbox(img, size=640):
    w, h = img.size
    scale = size / max(w, h)
    nw, nh = int(round(w * scale)), int(round(h * scale))
    resized = img.resize((nw, nh), Image.BILINEAR)
    canvas = Image.new("RGB", (size, size), (114, 114, 114))
    pad_x, pad_y = (size - nw) // 2, (size - nh) // 2
    canvas.paste(resized, (pad_x, pad_y))
    arr = np.asarray(canvas, dtype=np.float32) / 255.0
    return torch.from_numpy(arr).permute(2, 0, 1), scale, (pad_x, pad_y)


def postprocess(pred, conf_thr=0.25, iou_thr=0.6, max_det=300):
    """pred: (N, 5 + C) raw head output for one image, cxcywh in letterbox pixels."""
    boxes = box_convert(pred[:, :4], "cxcywh", "xyxy")
    obj = pred[:, 4].sigmoid()
    cls_scores = pred[:, 5:].sigmoid() * obj[:, None]
    scores, labels = cls_scores.max(dim=1)
    keep = scores > conf_thr
    boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
    if boxes.numel() == 0:
        return torch.zeros((0, 4), device=pred.device), scores, labels
    keep = batched_nms(boxes, scores, labels, iou_thr)[:max_det]
    return boxes[keep], scores[keep], labels[keep]


def undo_letterbox(boxes, scale, pad, orig_size):
    offset = torch.tensor([pad[0], pad[1], pad[0], pad[1]], dtype=boxes.dtype, device=boxes.device)
    boxes = (boxes - offset) / scale
    return clip_boxes_to_image(boxes, (orig_size[1], orig_size[0]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", required=True)
    ap.add_argument("--images", required=True)
    ap.add_argument("--out", default="detections.json")
    ap.add_argument("--img-size", type=int, default=640)
    ap.add_argument("--conf", type=float, default=0.25)
    ap.add_argument("--iou", type=float, default=0.6)
    ap.add_argument("--half", action="store_true")
    args = ap.parse_args()

    device = torch.device("cuda:0")  # expect: DEV003
    print("Running on", torch.cuda.get_device_name(0))  # expect: DEV011

    ckpt = torch.load(args.weights)  # expect: DEV007
    model = build_detector(num_classes=ckpt["num_classes"])
    model.load_state_dict(ckpt["ema"] if ckpt.get("ema") else ckpt["model"])
    model.to(device).eval()
    half = args.half and device.type == "cuda"
    if half:
        model.half()
    class_names = ckpt.get("names", [str(i) for i in range(ckpt["num_classes"])])

    results = []
    paths = sorted(Path(args.images).glob("*.jpg"))
    t0 = time.perf_counter()
    with torch.inference_mode():
        for path in paths:
            img = Image.open(path).convert("RGB")
            x, scale, pad = letterbox(img, args.img_size)
            x = x.unsqueeze(0).to(device)
            if half:
                x = x.half()
            pred = model(x)[0].float()
            boxes, scores, labels = postprocess(pred, args.conf, args.iou)
            boxes = undo_letterbox(boxes, scale, pad, img.size)
            boxes_xywh = box_convert(boxes, "xyxy", "xywh").cpu().numpy()
            for b, s, c in zip(boxes_xywh, scores.tolist(), labels.tolist()):
                results.append({
                    "image_id": path.stem,
                    "category_id": int(c),
                    "category": class_names[int(c)],
                    "bbox": [round(float(v), 2) for v in b],
                    "score": round(s, 4),
                })
    if device.type == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0

    with open(args.out, "w") as f:
        json.dump(results, f)
    print(f"{len(paths)} images, {len(results)} detections, {1000 * elapsed / max(1, len(paths)):.1f} ms/img")


if __name__ == "__main__":
    main()
