"""A small image classifier trained the "method one" way: `.cuda()` calls scattered under
`if torch.cuda.is_available():` checks, no device variable.

Written for devlint's runnable corpus, in the shape of the classic CIFAR-10 tutorial code
and of many forum answers that move a network and each batch with `.cuda()` behind an
availability test. Random images stand in for CIFAR-10.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


torch.manual_seed(0)
use_cuda = torch.cuda.is_available()

net = Net()
if use_cuda:
    net.cuda()

criterion = nn.CrossEntropyLoss()
if torch.cuda.is_available():
    criterion = criterion.cuda()
optimizer = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

images = torch.randn(64, 3, 32, 32)
labels = torch.randint(0, 10, (64,))
loader = DataLoader(TensorDataset(images, labels), batch_size=16, shuffle=True)

for epoch in range(2):
    running_loss = 0.0
    for inputs, targets in loader:
        if use_cuda:
            inputs, targets = inputs.cuda(), targets.cuda()
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
    print(f"epoch {epoch + 1}: loss {running_loss / len(loader):.3f}")

correct = 0
total = 0
with torch.no_grad():
    for inputs, targets in loader:
        if torch.cuda.is_available():
            inputs = inputs.cuda()
            targets = targets.cuda()
        predicted = net(inputs).argmax(1)
        total += targets.size(0)
        correct += (predicted == targets).sum().item()
print(f"accuracy on the training images: {100 * correct / total:.1f} %")

torch.save(net.state_dict(), "net.pt")
