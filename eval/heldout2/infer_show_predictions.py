"""Show a grid of test images with the model's top-1 prediction and confidence,
then the most confident mistakes over the whole test set."""
import argparse

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from model import build_model

MEAN = (0.4914, 0.4822, 0.4465)
STD = (0.2470, 0.2435, 0.2616)


def denormalize(img):
    """Undo transforms.Normalize on a CPU image tensor (C, H, W)."""
    mean = torch.tensor(MEAN).view(3, 1, 1)
    std = torch.tensor(STD).view(3, 1, 1)
    return (img * std + mean).clamp(0, 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--weights", default="cifar_resnet20.pt")
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--mc-samples", type=int, default=0)
    args = parser.parse_args()

    if torch.cuda.is_available():
        device = torch.device("cuda")
    elif torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")

    model = build_model("resnet20", num_classes=10)
    state = torch.load(args.weights, map_location=lambda storage, loc: storage)
    model.load_state_dict(state)
    model.to(device)
    model.eval()

    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    test_set = datasets.CIFAR10("data", train=False, download=True, transform=tf)
    loader = DataLoader(test_set, batch_size=args.n, shuffle=True)

    images, labels = next(iter(loader))
    with torch.inference_mode():
        logits = model(images.to(device))
    probs = F.softmax(logits, dim=1).cpu()
    conf, preds = probs.max(1)

    cols = 4
    rows = int(np.ceil(args.n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(cols * 2.5, rows * 2.8))
    for i, ax in enumerate(axes.flat):
        ax.axis("off")
        if i >= len(images):
            continue
        img = denormalize(images[i]).permute(1, 2, 0).numpy()
        ax.imshow(img)
        ok = preds[i].item() == labels[i].item()
        ax.set_title(f"{test_set.classes[preds[i]]} {conf[i]:.2f}", color="green" if ok else "red")
    fig.tight_layout()
    fig.savefig("predictions.png")

    # Monte-Carlo dropout: spread of the predictions with dropout switched on
    if args.mc_samples:
        model.train()
        with torch.no_grad():
            x = images.to(device)
            samples = torch.stack([F.softmax(model(x), 1) for _ in range(args.mc_samples)])
        spread = samples.std(0).detach().cpu().numpy()
        print("mean predictive std:", spread.mean())
        model.eval()

    # most confident mistakes
    mistakes = []
    with torch.no_grad():
        for images, labels in DataLoader(test_set, batch_size=256):
            out = F.softmax(model(images.to(device)), 1)
            c, p = out.max(1)
            wrong = (p.cpu() != labels).nonzero().flatten().tolist()
            mistakes += [(c[j].item(), images[j], p[j].item(), labels[j].item()) for j in wrong]
    mistakes.sort(key=lambda m: m[0], reverse=True)
    fig, axes = plt.subplots(1, 8, figsize=(16, 2.5))
    for ax, (c, img, p, t) in zip(axes, mistakes[:8]):
        ax.imshow(denormalize(img).permute(1, 2, 0).numpy())
        ax.set_title(f"{test_set.classes[p]} ({test_set.classes[t]}) {c:.2f}")
        ax.axis("off")
    fig.savefig("mistakes.png")


if __name__ == "__main__":
    main()
