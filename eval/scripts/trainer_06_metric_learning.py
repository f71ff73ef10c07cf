"""Metric learning for product retrieval: classification warm-up plus triplet loss,
then a nearest-neighbour index over the gallery embeddings."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.neighbors import NearestNeighbors
from torch.utils.data import DataLoader
from torchvision import models


class EmbeddingNet(nn.Module):
    def __init__(self, dim=128, num_classes=100):
        super().__init__()
        backbone = models.resnet18(weights=None)
        backbone.fc = nn.Identity()
        self.backbone = backbone
        self.proj = nn.Linear(512, dim)
        self.classifier = nn.Linear(dim, num_classes)
        self.mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)  # expect: DEV014
        self.std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)  # expect: DEV014

    def forward(self, x):
        x = (x - self.mean) / self.std
        return F.normalize(self.proj(self.backbone(x)), dim=1)


class RetrievalTrainer:
    def __init__(self, model, class_counts, lr=1e-4, margin=0.2):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu")
        self.model = model.to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.triplet = nn.TripletMarginLoss(margin=margin)
        counts = np.asarray(class_counts, dtype=np.float32)
        self.class_weights = (counts.sum() / (len(counts) * counts)).tolist()
        self.index = None

    def warmup_epoch(self, loader):
        self.model.train()
        weights = torch.tensor(self.class_weights, dtype=torch.float32)
        weights.to(self.device)  # expect: DEV008
        for images, labels in loader:
            images, labels = images.to(self.device), labels.to(self.device)
            logits = self.model.classifier(self.model(images))
            loss = F.cross_entropy(logits, labels, weight=weights)  # expect: DEV006
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

    def triplet_epoch(self, loader):
        self.model.train()
        total = 0.0
        for anchor, positive, negative in loader:
            anchor = anchor.to(self.device)
            positive = positive.to(self.device)
            negative = negative.to(self.device)
            loss = self.triplet(self.model(anchor), self.model(positive), self.model(negative))
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            total += loss.item()
        return total / max(len(loader), 1)

    @torch.no_grad()
    def embed(self, loader):
        self.model.eval()
        feats, ids = [], []
        for images, item_ids in loader:
            emb = self.model(images.to(self.device))
            feats.append(emb.numpy())  # expect: DEV001
            ids.extend(item_ids.tolist())
        return np.concatenate(feats), np.array(ids)

    def build_index(self, gallery_loader, k=10):
        feats, self.gallery_ids = self.embed(gallery_loader)
        self.index = NearestNeighbors(n_neighbors=k, metric="cosine").fit(feats)

    @torch.no_grad()
    def query(self, image_array):
        x = torch.from_numpy(image_array).permute(2, 0, 1).float().div(255).unsqueeze(0)
        q = self.model(x)  # expect: DEV006
        _, idx = self.index.kneighbors(q.cpu().numpy())
        return self.gallery_ids[idx[0]]

    def save(self, path):
        torch.save({"model": self.model.state_dict(), "class_weights": self.class_weights}, path)


def run(train_ds, triplet_ds, gallery_ds, class_counts, epochs=10):
    trainer = RetrievalTrainer(EmbeddingNet(num_classes=len(class_counts)), class_counts)
    cls_loader = DataLoader(train_ds, batch_size=64, shuffle=True, num_workers=4)
    trip_loader = DataLoader(triplet_ds, batch_size=32, shuffle=True, num_workers=4)
    for epoch in range(epochs):
        if epoch < 2:
            trainer.warmup_epoch(cls_loader)
        else:
            print(f"epoch {epoch}: triplet loss {trainer.triplet_epoch(trip_loader):.4f}")
    trainer.build_index(DataLoader(gallery_ds, batch_size=128, num_workers=4))
    trainer.save("retrieval.pt")
    return trainer
