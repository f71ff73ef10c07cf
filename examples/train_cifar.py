"""A CUDA-only training script in "method one" style: devlint finds its device bugs.

Run `devlint examples/` to see them; `devlint rule DEV003` explains one.
"""

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

dataset = TensorDataset(torch.randn(256, 3, 32, 32), torch.randint(0, 10, (256,)))
loader = DataLoader(dataset, batch_size=32, shuffle=True, pin_memory=True)

model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10)).cuda()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

for epoch in range(2):
    for images, labels in loader:
        images = images.to(device)
        outputs = model(images)
        loss = criterion(outputs, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    predictions = outputs.argmax(dim=1).numpy()
    print(f"epoch {epoch}: loss {loss.item():.3f}, predicted classes {np.unique(predictions)}")
