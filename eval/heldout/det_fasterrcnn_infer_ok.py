"""Run a fine-tuned Faster R-CNN over a folder of images and write JSON + drawn boxes."""
import argparse
import json
from pathlib import Path

import torch
from PIL import Image, ImageDraw
from torchvision.models.detection import fasterrcnn_resnet50_fpn
from torchvision.transforms.functional import to_tensor


def default_device():
    if torch.cuda.is_available():
        return "cuda"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("weights")
    ap.add_argument("images", type=Path)
    ap.add_argument("--out", type=Path, default=Path("detections"))
    ap.add_argument("--num-classes", type=int, default=3)
    ap.add_argument("--score-thr", type=float, default=0.5)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--device", default=default_device())
    return ap.parse_args()


def chunks(items, n):
    for i in range(0, len(items), n):
        yield items[i:i + n]


def main():
    args = parse_args()
    device = torch.device(args.device)
    args.out.mkdir(parents=True, exist_ok=True)

    model = fasterrcnn_resnet50_fpn(weights=None, weights_backbone=None, num_classes=args.num_classes)
    state = torch.load(args.weights, map_location="cpu")
    model.load_state_dict(state["model"] if "model" in state else state)
    model.to(device)
    model.eval()

    paths = sorted(p for p in args.images.iterdir() if p.suffix.lower() in {".jpg", ".jpeg", ".png"})
    results = {}
    for group in chunks(paths, args.batch_size):
        pil_images = [Image.open(p).convert("RGB") for p in group]
        inputs = [to_tensor(img).to(device) for img in pil_images]
        with torch.no_grad():
            outputs = model(inputs)
        outputs = [{k: v.cpu() for k, v in o.items()} for o in outputs]

        for path, img, out in zip(group, pil_images, outputs):
            keep = out["scores"] >= args.score_thr
            boxes = out["boxes"][keep].numpy()
            labels = out["labels"][keep].tolist()
            scores = out["scores"][keep].numpy().round(3).tolist()
            results[path.name] = [
                {"box": box.tolist(), "label": label, "score": score}
                for box, label, score in zip(boxes, labels, scores)
            ]
            draw = ImageDraw.Draw(img)
            for box in boxes:
                draw.rectangle(box.tolist(), outline="red", width=3)
            img.save(args.out / path.name)

    with open(args.out / "detections.json", "w") as f:
        json.dump(results, f, indent=2)
    print(f"wrote {len(results)} results to {args.out}")


if __name__ == "__main__":
    main()
