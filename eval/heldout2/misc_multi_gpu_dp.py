"""ImageNet-style training on all GPUs of one machine with nn.DataParallel.

This script needs CUDA; it says so and stops on machines without it.
"""
import sys
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, models, transforms


def describe_gpus():
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        print(f"GPU {i}: {torch.cuda.get_device_name(i)}, {props.total_memory / 2**30:.1f} GiB")


def build_model(num_classes):
    model = models.resnet50(num_classes=num_classes)
    if torch.cuda.device_count() > 1:
        print(f"Let's use {torch.cuda.device_count()} GPUs!")
        model = nn.DataParallel(model)
    return model


def benchmark(model, batch_size=64, steps=20):
    assert torch.cuda.is_available(), "benchmark needs CUDA"
    x = torch.randn(batch_size, 3, 224, 224).cuda()
    model.eval()
    with torch.no_grad():
        for _ in range(3):
            model(x)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(steps):
            model(x)
        torch.cuda.synchronize()
    return steps * batch_size / (time.perf_counter() - t0)


def main(data_dir="imagenet/train", epochs=1):
    if not torch.cuda.is_available():
        sys.exit("需要至少一块 CUDA GPU / this script needs a CUDA GPU")
    torch.cuda.set_device(0)
    describe_gpus()

    device = torch.device("cuda:0")
    model = build_model(1000).to(device)
    print(f"throughput: {benchmark(model):.0f} img/s")

    tf = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    ])
    dataset = datasets.ImageFolder(data_dir, tf)
    n_gpus = max(1, torch.cuda.device_count())
    loader = DataLoader(dataset, batch_size=64 * n_gpus, shuffle=True, num_workers=8, pin_memory=True)

    criterion = nn.CrossEntropyLoss().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1 * n_gpus, momentum=0.9, weight_decay=1e-4)

    for epoch in range(epochs):
        model.train()
        t0 = time.time()
        for i, (images, targets) in enumerate(loader):
            images = images.cuda(non_blocking=True)
            targets = targets.cuda(non_blocking=True)
            loss = criterion(model(images), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if i % 100 == 0:
                print(f"[{epoch}][{i}/{len(loader)}] loss {loss.item():.3f}")
        torch.cuda.synchronize()
        mem = torch.cuda.max_memory_allocated() / 2**30
        print(f"epoch {epoch} took {time.time() - t0:.0f}s, peak mem {mem:.2f} GiB")
        state = model.module.state_dict() if isinstance(model, nn.DataParallel) else model.state_dict()
        torch.save(state, f"resnet50_ep{epoch}.pt")


if __name__ == "__main__":
    main()
