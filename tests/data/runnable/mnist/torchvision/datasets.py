"""``MNIST`` with a tiny generated data set (stand-in; see the package docstring).

Same constructor and items as torchvision's: (transformed 28x28 image, int label). The
images are random noise with a bright stripe whose row is the label: nothing is downloaded
and nothing is written under ``root``.
"""

import torch


class MNIST(torch.utils.data.Dataset):
    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        generator = torch.Generator().manual_seed(0 if train else 1)
        count = 64 if train else 32
        self.targets = torch.randint(0, 10, (count,), generator=generator)
        self.data = torch.randint(0, 64, (count, 28, 28), dtype=torch.uint8, generator=generator)
        for image, label in zip(self.data, self.targets):
            image[2 + 2 * int(label)] = 255
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        image, target = self.data[index], int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target
