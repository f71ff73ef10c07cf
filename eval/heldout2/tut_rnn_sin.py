# -*- coding: utf-8 -*-
"""
RNN 回归:用 sin 曲线预测 cos 曲线
每一步取一小段 sin 序列作为输入,对应的 cos 序列作为目标
"""
import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"  # expect: DEV004

# 超参数
TIME_STEP = 10
INPUT_SIZE = 1
HIDDEN_SIZE = 32
LR = 0.02

torch.manual_seed(1)


class RNN(nn.Module):
    def __init__(self, num_layers=1):
        super(RNN, self).__init__()
        self.num_layers = num_layers
        self.hidden_size = HIDDEN_SIZE
        self.rnn = nn.RNN(
            input_size=INPUT_SIZE,
            hidden_size=HIDDEN_SIZE,
            num_layers=num_layers,
            batch_first=True,
        )
        self.out = nn.Linear(HIDDEN_SIZE, 1)

    def forward(self, x):
        # 初始化隐藏状态 h0: (num_layers, batch, hidden_size)
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size)  # expect: DEV013
        r_out, h_n = self.rnn(x, h0)
        outs = self.out(r_out)  # (batch, time_step, 1)
        return outs, h_n


rnn = RNN().to(device)
print(rnn)

optimizer = torch.optim.Adam(rnn.parameters(), lr=LR)
loss_func = nn.MSELoss()

plt.figure(1, figsize=(12, 5))
plt.ion()

for step in range(100):
    start, end = step * np.pi, (step + 1) * np.pi
    steps = np.linspace(start, end, TIME_STEP, dtype=np.float32, endpoint=False)
    x_np = np.sin(steps)
    y_np = np.cos(steps)

    # shape (batch, time_step, input_size)
    x = torch.from_numpy(x_np[np.newaxis, :, np.newaxis]).to(device)
    y = torch.from_numpy(y_np[np.newaxis, :, np.newaxis]).to(device)

    prediction, _ = rnn(x)
    loss = loss_func(prediction, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

    # 画图
    plt.plot(steps, y_np.flatten(), "r-")
    plt.plot(steps, prediction.detach().numpy().flatten(), "b-")  # expect: DEV001
    plt.draw()
    plt.pause(0.05)

plt.ioff()
plt.show()

# 测试:用训练好的 RNN 预测一段更长的序列
rnn.eval()
with torch.no_grad():
    steps = np.linspace(0, 4 * np.pi, 100, dtype=np.float32)
    test_x = torch.from_numpy(np.sin(steps)).view(1, -1, 1).to(device)
    test_pred, _ = rnn(test_x)
np.save("rnn_pred.npy", test_pred.cpu().numpy().flatten())
print("最后的 loss:", loss.item())
