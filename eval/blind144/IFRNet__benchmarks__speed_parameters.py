# source: https://github.com/ltkong218/IFRNet/blob/b117bcafcf074b2de756b882f8a6ca02c3169bfe/benchmarks/speed_parameters.py
import os
import sys
sys.path.append('.')
import time
import torch
import torch.nn as nn
import torch.nn.functional as F
from models.IFRNet import Model
# from models.IFRNet_L import Model
# from models.IFRNet_S import Model

if torch.cuda.is_available():
    torch.backends.cudnn.enabled = True
    torch.backends.cudnn.benchmark = True

img0 = torch.randn(1, 3, 256, 448).cuda() # expect: DEV003
img1 = torch.randn(1, 3, 256, 448).cuda() # expect: DEV003
embt = torch.tensor(1/2).float().view(1, 1, 1, 1).cuda() # expect: DEV003

model = Model().cuda().eval() # expect: DEV003

with torch.no_grad():
    for i in range(100):
        out = model.inference(img0, img1, embt)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    time_stamp = time.time()
    for i in range(100):
        out = model.inference(img0, img1, embt)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    print('Time: {:.3f}s'.format((time.time() - time_stamp) / 100))

total = sum([param.nelement() for param in model.parameters()])
print('Parameters: {:.2f}M'.format(total / 1e6))
