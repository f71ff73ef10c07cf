# -*- coding: utf-8 -*-
"""
用 PyTorch 做一元线性回归,并在 GPU(CUDA / Apple MPS)上训练
y = 3x + 0.5 + 噪声
"""
import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

# 设备选择:CUDA -> MPS -> CPU
device = (
    "cuda" if torch.cuda.is_available()
    else "mps" if torch.backends.mps.is_available()
    else "cpu"
)
print(f"使用设备: {device}")

torch.manual_seed(42)
np.random.seed(42)

# 构造数据(numpy),再转成张量放到设备上
x_np = np.linspace(-1, 1, 200, dtype=np.float32).reshape(-1, 1)
y_np = 3 * x_np + 0.5 + np.random.normal(0, 0.1, x_np.shape).astype(np.float32)

x = torch.from_numpy(x_np).to(device)
y = torch.from_numpy(y_np).to(device)


class LinearRegression(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(1, 1)

    def forward(self, x):
        return self.linear(x)


model = LinearRegression()
model.to(device)  # 模型的 .to() 是原地操作,不需要重新赋值
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

losses = []
for epoch in range(300):
    pred = model(x)
    loss = criterion(pred, y)

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

    losses.append(loss.item())
    if (epoch + 1) % 50 == 0:
        print(f"epoch {epoch + 1}, loss = {loss.item():.4f}")

w = model.linear.weight.item()
b = model.linear.bias.item()
print(f"学到的参数: w = {w:.3f}, b = {b:.3f}")

with torch.no_grad():
    y_hat = model(x)

# 画图之前要先把张量拿回 CPU
plt.figure(figsize=(10, 4))
plt.subplot(1, 2, 1)
plt.scatter(x_np, y_np, s=5, label="数据")
plt.plot(x.cpu().numpy(), y_hat.cpu().numpy(), "r-", lw=2, label="拟合直线")
plt.legend()
plt.subplot(1, 2, 2)
plt.plot(np.array(losses))
plt.xlabel("epoch")
plt.ylabel("MSE")
plt.tight_layout()
plt.show()

# 参数以 numpy 形式保存
params = {name: p.detach().cpu().numpy() for name, p in model.named_parameters()}
np.savez("linear_params.npz", **params)

residual = (y_hat - y).to("cpu").numpy()
print("残差标准差:", residual.std())
print("前 5 个预测:", y_hat[:5].squeeze(1).tolist())
