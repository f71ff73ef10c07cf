"""Fine-tune a pretrained ResNet-18 on a small ImageFolder dataset (ants vs bees).

Only the last residual stage and the new classifier head are trained; everything
else is frozen. Images are fed unnormalised and the normalisation lives inside
the model so the exported checkpoint is self-contained.
"""
import argparse
import copy
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader
from torchvision import datasets, models, transforms


class ImageNetNormalize(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))

    def forward(self, x):
        return (x - self.mean) / self.std


def build_model(num_classes):
    backbone = models.resnet18(weights=models.ResNet18_Weights.IMAGENET1K_V1)
    for param in backbone.parameters():
        param.requires_grad = False
    # unfreeze the last stage
    for param in backbone.layer4.parameters():
        param.requires_grad = True
    backbone.fc = nn.Linear(backbone.fc.in_features, num_classes)
    return nn.Sequential(ImageNetNormalize(), backbone)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="data/hymenoptera_data")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--out", default="best_resnet18.pt")
    args = parser.parse_args()

    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
    print(f"training on {device}")

    data_transforms = {
        "train": transforms.Compose([
            transforms.RandomResizedCrop(224),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
        ]),
        "val": transforms.Compose([
            transforms.Resize(256),
            transforms.CenterCrop(224),
            transforms.ToTensor(),
        ]),
    }
    image_datasets = {x: datasets.ImageFolder(os.path.join(args.data, x), data_transforms[x])
                      for x in ["train", "val"]}
    dataloaders = {x: DataLoader(image_datasets[x], batch_size=16, shuffle=(x == "train"),
                                 num_workers=4, pin_memory=True)  # expect: DEV005
                   for x in ["train", "val"]}
    dataset_sizes = {x: len(image_datasets[x]) for x in ["train", "val"]}
    class_names = image_datasets["train"].classes

    model = build_model(len(class_names))
    model.to(device)

    criterion = nn.CrossEntropyLoss()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = optim.SGD(params, lr=0.001, momentum=0.9)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=7, gamma=0.1)

    since = time.time()
    best_acc = 0.0
    best_wts = copy.deepcopy(model.state_dict())

    for epoch in range(args.epochs):
        for phase in ["train", "val"]:
            model.train(phase == "train")
            running_loss = 0.0
            running_corrects = 0

            for inputs, labels in dataloaders[phase]:
                inputs = inputs.to(device)
                labels = labels.to(device)
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    outputs = model(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels).item()

            if phase == "train":
                scheduler.step()
            epoch_loss = running_loss / dataset_sizes[phase]
            epoch_acc = running_corrects / dataset_sizes[phase]
            print(f"epoch {epoch} {phase}: loss {epoch_loss:.4f} acc {epoch_acc:.4f}")

            if phase == "val" and epoch_acc > best_acc:
                best_acc = epoch_acc
                best_wts = copy.deepcopy(model.state_dict())
                torch.save(best_wts, args.out)

    elapsed = time.time() - since
    print(f"done in {elapsed // 60:.0f}m {elapsed % 60:.0f}s, best val acc {best_acc:.4f}")

    # reload the best checkpoint from disk and dump penultimate features for the val set
    model.load_state_dict(torch.load(args.out, weights_only=True))  # expect: DEV007
    model.eval()
    feature_net = nn.Sequential(model[0], *list(model[1].children())[:-1])
    feats, targets = [], []
    with torch.no_grad():
        for inputs, labels in dataloaders["val"]:
            f = feature_net(inputs.to(device)).flatten(1)
            feats.append(f.detach().cpu())
            targets.append(labels)
    np.save("val_features.npy", torch.cat(feats).numpy())
    np.save("val_labels.npy", torch.cat(targets).numpy())


if __name__ == "__main__":
    main()
