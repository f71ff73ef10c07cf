# -*- coding: utf-8 -*-
"""
在 Mac (M1/M2) 和 NVIDIA 显卡上都能跑的回归小例子。
设备选择顺序:CUDA > MPS > CPU。
"""
import matplotlib.pyplot as plt
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.cuda.manual_seed(0)  # 没有 GPU 时这句什么都不做

# 选择设备
if torch.cuda.is_available():
    device = torch.device("cuda")
elif torch.backends.mps.is_available():
    device = torch.device("mps")
else:
    device = torch.device("cpu")
print(f"使用设备: {device}")

# 直接在设备上创建张量
x = torch.rand(5, 3, device=device)
y = torch.ones_like(x)
z = (x + y).cpu().numpy()
print(z)

# 构造数据: y = x^2 + 噪声
X = torch.linspace(-1, 1, 200).unsqueeze(1)
Y = X.pow(2) + 0.2 * torch.rand(X.size())
dataset = TensorDataset(X, Y)
loader = DataLoader(dataset, batch_size=20, shuffle=True, pin_memory=torch.cuda.is_available())

model = nn.Sequential(
    nn.Linear(1, 32),
    nn.ReLU(),
    nn.Linear(32, 1),
)
model.to(device)  # 模型的 .to() 是原地操作,不需要赋值

loss_fn = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
use_amp = device.type == "cuda"
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)

for epoch in range(100):
    for xb, yb in loader:
        xb = xb.to(device, non_blocking=True)
        yb = yb.to(device, non_blocking=True)
        with torch.amp.autocast(device_type=device.type, enabled=use_amp):
            pred = model(xb)
            loss = loss_fn(pred, yb)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    if epoch % 20 == 0:
        print(epoch, loss.item())

# 预测并画图:先 .cpu() 再 .numpy()
model.eval()
with torch.no_grad():
    pred = model(X.to(device)).detach().cpu().numpy()

plt.scatter(X.numpy(), Y.numpy(), s=5)
plt.plot(X.numpy(), pred, "r-", lw=2)
plt.savefig("regression.png")

# 保存并重新加载,map_location 保证在没有 GPU 的机器上也能加载
torch.save(model.state_dict(), "reg.pt")
state = torch.load("reg.pt", map_location=device)
model.load_state_dict(state)
print("最终损失:", loss_fn(model(X.to(device)), Y.to(device)).item())
