"""Metric learning on FashionMNIST with a small CNN and batch-hard triplet loss.

After training, embeddings of the test set are computed, a k-NN retrieval accuracy
is reported and the embeddings are exported for a t-SNE plot.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.manifold import TSNE
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

EMB_DIM = 64
MARGIN = 0.3
EPOCHS = 10


class EmbeddingNet(nn.Module):
    def __init__(self, emb_dim=EMB_DIM):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Linear(64 * 7 * 7, emb_dim)

    def forward(self, x):
        x = self.features(x).flatten(1)
        return F.normalize(self.head(x), dim=1)


class BatchHardTripletLoss(nn.Module):
    """For every anchor take the farthest positive and the closest negative in the batch."""

    def __init__(self, margin=MARGIN):
        super().__init__()
        self.margin = margin

    def forward(self, embeddings, labels):
        dist = torch.cdist(embeddings, embeddings, p=2)
        same = labels.unsqueeze(0) == labels.unsqueeze(1)
        not_self = ~torch.eye(labels.size(0), dtype=torch.bool)  # expect: DEV013
        pos_mask = same & not_self
        neg_mask = ~same

        hardest_pos = (dist * pos_mask.float()).max(dim=1).values
        max_dist = dist.max(dim=1, keepdim=True).values
        hardest_neg = (dist + max_dist * (~neg_mask).float()).min(dim=1).values
        return F.relu(hardest_pos - hardest_neg + self.margin).mean()


def get_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def main():
    device = get_device()
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.286,), (0.353,))])
    train_set = datasets.FashionMNIST("data", train=True, download=True, transform=tf)
    test_set = datasets.FashionMNIST("data", train=False, download=True, transform=tf)
    train_loader = DataLoader(train_set, batch_size=256, shuffle=True, drop_last=True,
                              num_workers=4, pin_memory=torch.cuda.is_available())
    test_loader = DataLoader(test_set, batch_size=512, num_workers=4)

    model = EmbeddingNet().to(device)
    criterion = BatchHardTripletLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    for epoch in range(EPOCHS):
        model.train()
        total = 0.0
        for images, labels in train_loader:
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            loss = criterion(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch + 1}: triplet loss {total / len(train_loader):.4f}")

    # ---- retrieval evaluation ----
    model.eval()
    all_emb, all_labels = [], []
    with torch.no_grad():
        for images, labels in test_loader:
            all_emb.append(model(images.to(device)))
            all_labels.append(labels)
    embs = torch.cat(all_emb)
    labels = torch.cat(all_labels)

    k = 5
    sims = embs @ embs.T
    knn = sims.topk(k + 1, dim=1).indices[:, 1:].cpu()
    votes = labels[knn]
    pred = votes.mode(dim=1).values
    acc = (pred == labels).float().mean().item()
    print(f"{k}-NN retrieval accuracy: {acc:.4f}")

    torch.save(model.state_dict(), "triplet_embedding.pt")

    # 2-D projection of a subset for plotting
    subset = torch.randperm(embs.size(0))[:3000]
    points = TSNE(n_components=2, init="pca").fit_transform(embs[subset].numpy())  # expect: DEV001
    np.savez("tsne_points.npz", xy=points, y=labels[subset].numpy())


if __name__ == "__main__":
    main()
