# source: https://github.com/bitsandbytes-foundation/bitsandbytes/blob/95f9af309d4d5793847169c39288dcd3fcbdf564/check_bnb_install.py
import torch

import bitsandbytes as bnb

p = torch.nn.Parameter(torch.rand(10, 10).cuda()) # expect: DEV003
a = torch.rand(10, 10).cuda() # expect: DEV003

p1 = p.data.sum().item()

adam = bnb.optim.Adam([p])

out = a * p
loss = out.sum()
loss.backward()
adam.step()

p2 = p.data.sum().item()

assert p1 != p2
print("SUCCESS!")
print("Installation was successful!")
