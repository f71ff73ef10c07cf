"""Mixed-precision training with the torch.cuda.amp entry points (autocast, GradScaler),
a checkpoint with the scaler's state, and resuming from it.

Written for devlint's runnable corpus, in the shape of PyTorch's older "Automatic Mixed
Precision" recipe: a hard-coded CUDA device, `.cuda()` on the model, the deprecated
`torch.cuda.amp.autocast()` / `torch.cuda.amp.GradScaler()`, `torch.cuda.synchronize()`
around a timer, and a checkpoint loaded back onto the current CUDA device.
"""

import time

import torch


def make_model(in_size, out_size, num_layers):
    layers = []
    for _ in range(num_layers - 1):
        layers.append(torch.nn.Linear(in_size, in_size))
        layers.append(torch.nn.ReLU())
    layers.append(torch.nn.Linear(in_size, out_size))
    return torch.nn.Sequential(*tuple(layers)).cuda()


batch_size = 32
in_size = 64
out_size = 16
num_layers = 3
num_batches = 4
epochs = 2

device = "cuda"
torch.manual_seed(0)
data = [torch.randn(batch_size, in_size, device=device) for _ in range(num_batches)]
targets = [torch.randn(batch_size, out_size, device=device) for _ in range(num_batches)]
loss_fn = torch.nn.MSELoss().cuda()

net = make_model(in_size, out_size, num_layers)
opt = torch.optim.SGD(net.parameters(), lr=0.001)
scaler = torch.cuda.amp.GradScaler()

start = time.perf_counter()
for epoch in range(epochs):
    for input, target in zip(data, targets):
        with torch.cuda.amp.autocast():
            output = net(input)
            loss = loss_fn(output, target)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print(f"{epochs} epochs in {time.perf_counter() - start:.3f} s, last loss {loss.item():.4f}")

checkpoint = {"model": net.state_dict(), "optimizer": opt.state_dict(), "scaler": scaler.state_dict()}
torch.save(checkpoint, "amp_checkpoint.pt")

dev = torch.cuda.current_device()
checkpoint = torch.load("amp_checkpoint.pt", map_location=lambda storage, loc: storage.cuda(dev))
net.load_state_dict(checkpoint["model"])
opt.load_state_dict(checkpoint["optimizer"])
scaler.load_state_dict(checkpoint["scaler"])
print("resumed from amp_checkpoint.pt")
