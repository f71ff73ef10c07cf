"""Extract penultimate-layer features from a fine-tuned ResNet for every image in a folder,
then fit a kNN classifier and a t-SNE plot on them."""
import os
import sys

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
from sklearn.manifold import TSNE
from sklearn.neighbors import KNeighborsClassifier
from torch.utils.data import DataLoader
from torchvision import datasets, models, transforms

DATA_DIR = sys.argv[1] if len(sys.argv) > 1 else "data/leaves"
WEIGHTS = "resnet34_leaves.pth"

device = torch.device("cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu")

tfm = transforms.Compose([
    transforms.Resize(256),
    transforms.CenterCrop(224),
    transforms.ToTensor(),
    transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
])

train_set = datasets.ImageFolder(os.path.join(DATA_DIR, "train"), tfm)
test_set = datasets.ImageFolder(os.path.join(DATA_DIR, "test"), tfm)
train_loader = DataLoader(train_set, batch_size=64, shuffle=False, num_workers=4, pin_memory=True)  # expect: DEV005
test_loader = DataLoader(test_set, batch_size=64, shuffle=False, num_workers=4)

model = models.resnet34(weights=None)
model.fc = nn.Linear(model.fc.in_features, len(train_set.classes))
state = torch.load(WEIGHTS)  # expect: DEV007
model.load_state_dict(state)
model.fc = nn.Identity()
model = model.to(device)
model.eval()


def extract(loader):
    feats, labels = [], []
    with torch.no_grad():
        for images, targets in loader:
            images = images.to(device)
            out = model(images).squeeze()
            feats.append(out.numpy())  # expect: DEV001
            labels.append(targets.numpy())
    return np.concatenate(feats), np.concatenate(labels)


X_train, y_train = extract(train_loader)
X_test, y_test = extract(test_loader)
X_train /= np.linalg.norm(X_train, axis=1, keepdims=True)
X_test /= np.linalg.norm(X_test, axis=1, keepdims=True)
print("features:", X_train.shape, X_test.shape)

knn = KNeighborsClassifier(n_neighbors=5, metric="cosine").fit(X_train, y_train)
print(f"kNN accuracy: {knn.score(X_test, y_test):.4f}")
np.savez_compressed("features.npz", X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test)

emb = TSNE(n_components=2, init="pca", perplexity=30).fit_transform(X_test)
plt.figure(figsize=(8, 8))
for c, name in enumerate(test_set.classes):
    sel = y_test == c
    plt.scatter(emb[sel, 0], emb[sel, 1], s=6, label=name)
plt.legend(markerscale=3, fontsize=7)
plt.savefig("tsne.png", dpi=150)
