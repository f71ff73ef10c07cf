"""The three transforms mnist/main.py uses (stand-in; see the package docstring)."""

import torch


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, image):
        for transform in self.transforms:
            image = transform(image)
        return image


class ToTensor:
    """A uint8 HxW image -> a float 1xHxW tensor in [0, 1], as torchvision's ToTensor."""

    def __call__(self, image):
        return image.unsqueeze(0).to(torch.float32).div(255)


class Normalize:
    def __init__(self, mean, std):
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def __call__(self, tensor):
        return (tensor - self.mean) / self.std
