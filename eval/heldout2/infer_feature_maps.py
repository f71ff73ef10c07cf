"""Visualise a trained CIFAR model: t-SNE of penultimate features, conv1 activation maps."""
import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.manifold import TSNE
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from nets import ResNet20


def get_device():
    if torch.cuda.is_available():  # expect: DEV004
        return torch.device("cuda")
    else:
        return torch.device("cpu")


device = get_device()
ckpt = torch.load("checkpoints/resnet20_best.pt", map_location=device)
model = ResNet20(num_classes=10)
model.load_state_dict(ckpt["state_dict"])
model.to(device).eval()

test_set = datasets.CIFAR10("data", train=False, download=True, transform=transforms.ToTensor())
loader = DataLoader(test_set, batch_size=500, shuffle=False, num_workers=2)

# --- penultimate features through a forward hook -------------------------------
features, targets = [], []
hook_out = {}


def hook(module, inp, out):
    hook_out["feat"] = out.flatten(1).detach().cpu()


handle = model.avgpool.register_forward_hook(hook)
with torch.no_grad():
    for images, labels in loader:
        model(images.to(device))
        features.append(hook_out["feat"])
        targets.append(labels)
        if len(features) * 500 >= 5000:
            break
handle.remove()
torch.cuda.empty_cache()

feats = torch.cat(features).numpy()
labs = torch.cat(targets).numpy()
emb = TSNE(n_components=2, init="pca", random_state=0).fit_transform(feats)
plt.figure(figsize=(8, 8))
for c in range(10):
    idx = labs == c
    plt.scatter(emb[idx, 0], emb[idx, 1], s=3, label=test_set.classes[c])
plt.legend(markerscale=4)
plt.savefig("tsne.png", dpi=150)

# --- activation maps of conv1 for one image ------------------------------------
images, labels = next(iter(loader))
images = images.to(device)
with torch.no_grad():
    act = model.conv1(images[:1])
img = images[0]
fig, axes = plt.subplots(4, 5, figsize=(12, 10))
axes[0, 0].imshow(img.permute(1, 2, 0).numpy())  # expect: DEV001
axes[0, 0].set_title(test_set.classes[labels[0]])
maps = act[0].cpu()
for k, ax in enumerate(axes.flat[1:]):
    ax.imshow(maps[k].numpy(), cmap="viridis")
    ax.set_title(f"ch {k}")
for ax in axes.flat:
    ax.axis("off")
plt.savefig("conv1_maps.png")
print("mean activation:", np.mean([m.mean().item() for m in maps]))
