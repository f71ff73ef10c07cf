"""Evaluate a trained CIFAR-10 classifier: accuracy, per-class report, confusion matrix."""
import argparse
import itertools

import matplotlib.pyplot as plt
import numpy as np
import torch
import torchvision
import torchvision.transforms as T
from torch.utils.data import DataLoader

from model import SimpleCNN

CLASSES = ("plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


def plot_confusion_matrix(cm, classes, normalize=True, title="Confusion matrix", cmap=plt.cm.Blues):
    if normalize:
        cm = cm.astype("float") / cm.sum(axis=1)[:, np.newaxis]
    plt.figure(figsize=(8, 8))
    plt.imshow(cm, interpolation="nearest", cmap=cmap)
    plt.title(title)
    plt.colorbar()
    ticks = np.arange(len(classes))
    plt.xticks(ticks, classes, rotation=45)
    plt.yticks(ticks, classes)
    fmt = ".2f" if normalize else "d"
    thresh = cm.max() / 2.0
    for i, j in itertools.product(range(cm.shape[0]), range(cm.shape[1])):
        plt.text(j, i, format(cm[i, j], fmt), horizontalalignment="center",
                 color="white" if cm[i, j] > thresh else "black")
    plt.ylabel("True label")
    plt.xlabel("Predicted label")
    plt.tight_layout()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--weights", default="simple_cnn.pth")
    parser.add_argument("--data", default="./data")
    args = parser.parse_args()

    device = torch.device(
        "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
    )
    model = SimpleCNN()
    model.load_state_dict(torch.load(args.weights, map_location=device))
    model = model.to(device).eval()

    tf = T.Compose([T.ToTensor(), T.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))])
    test_set = torchvision.datasets.CIFAR10(root=args.data, train=False, download=True, transform=tf)

    # quick accuracy over batches
    loader = DataLoader(test_set, batch_size=500)
    correct = 0
    with torch.no_grad():
        for images, labels in loader:
            outputs = model(images.to(device))
            correct += (outputs.argmax(1) == labels).sum().item()  # expect: DEV002
    print(f"accuracy: {100.0 * correct / len(test_set):.2f}%")

    # per-image predictions for the confusion matrix
    y_true, y_pred = [], []
    with torch.no_grad():
        for img, label in test_set:
            out = model(img.unsqueeze(0).to(device))
            y_pred.append(out.argmax(dim=1))
            y_true.append(label)
    y_true = np.array(y_true)
    y_pred = np.array(y_pred)  # expect: DEV001

    cm = np.zeros((len(CLASSES), len(CLASSES)), dtype=np.int64)
    for t, p in zip(y_true, y_pred.ravel()):
        cm[t, p] += 1
    for i, name in enumerate(CLASSES):
        print(f"{name:>6s}: {cm[i, i] / cm[i].sum():.3f}")
    plot_confusion_matrix(cm, CLASSES)
    plt.savefig("confusion_matrix.png", dpi=150)


if __name__ == "__main__":
    main()
