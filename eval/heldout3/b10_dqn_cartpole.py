"""Double DQN with a prioritized replay buffer on CartPole-v1."""
import argparse
import random
from collections import deque

import gymnasium as gym
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device(
    "cuda" if torch.cuda.is_available()
    else "mps" if torch.backends.mps.is_available()
    else "cpu"
)


class QNet(nn.Module):
    def __init__(self, obs_dim, n_actions, hidden=128):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(obs_dim, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, n_actions),
        )

    def forward(self, x):
        return self.net(x)


class PrioritizedReplay:
    def __init__(self, capacity, alpha=0.6):
        self.capacity, self.alpha = capacity, alpha
        self.data = []
        self.prios = np.zeros(capacity, dtype=np.float32)
        self.pos = 0

    def push(self, *transition):
        max_prio = self.prios.max() if self.data else 1.0
        if len(self.data) < self.capacity:
            self.data.append(transition)
        else:
            self.data[self.pos] = transition
        self.prios[self.pos] = max_prio
        self.pos = (self.pos + 1) % self.capacity

    def sample(self, batch_size, beta=0.4):
        prios = self.prios[: len(self.data)] ** self.alpha
        probs = prios / prios.sum()
        idx = np.random.choice(len(self.data), batch_size, p=probs)
        weights = (len(self.data) * probs[idx]) ** (-beta)
        weights /= weights.max()
        s, a, r, s2, d = zip(*[self.data[i] for i in idx])
        return (np.array(s), np.array(a), np.array(r, dtype=np.float32), np.array(s2),
                np.array(d, dtype=np.float32), idx, weights.astype(np.float32))

    def update(self, idx, td_errors):
        self.prios[idx] = np.abs(td_errors) + 1e-5

    def __len__(self):
        return len(self.data)


def select_action(policy, state, eps, n_actions):
    if random.random() < eps:
        return random.randrange(n_actions)
    with torch.no_grad():
        s = torch.as_tensor(state, dtype=torch.float32, device=device).unsqueeze(0)
        return int(policy(s).argmax(1).item())


def optimize(policy, target, buffer, optimizer, args):
    s, a, r, s2, d, idx, w = buffer.sample(args.batch_size)
    states = torch.from_numpy(s).float().pin_memory().to(device, non_blocking=True)  # expect: DEV005
    actions = torch.as_tensor(a, dtype=torch.long, device=device)
    rewards = torch.tensor(r)
    next_states = torch.as_tensor(s2, dtype=torch.float32, device=device)
    dones = torch.as_tensor(d, device=device)
    weights = torch.as_tensor(w, device=device)

    q = policy(states).gather(1, actions.unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        next_a = policy(next_states).argmax(1, keepdim=True)
        next_q = target(next_states).gather(1, next_a).squeeze(1)
        td_target = rewards + args.gamma * next_q * (1.0 - dones)  # expect: DEV006
    td = q - td_target
    loss = (weights * F.smooth_l1_loss(q, td_target, reduction="none")).mean()

    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(policy.parameters(), 10.0)
    optimizer.step()
    buffer.update(idx, td.detach().numpy())  # expect: DEV001
    return loss.item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--episodes", type=int, default=400)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--target-update", type=int, default=500)
    p.add_argument("--buffer", type=int, default=50000)
    args = p.parse_args()

    env = gym.make("CartPole-v1")
    obs_dim, n_actions = env.observation_space.shape[0], env.action_space.n
    policy = QNet(obs_dim, n_actions).to(device)
    target = QNet(obs_dim, n_actions).to(device)
    target.load_state_dict(policy.state_dict())
    target.eval()
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.lr)
    buffer = PrioritizedReplay(args.buffer)

    steps, returns, losses = 0, [], deque(maxlen=100)
    for ep in range(args.episodes):
        state, _ = env.reset(seed=ep)
        ep_ret, done = 0.0, False
        while not done:
            eps = max(0.05, 1.0 - steps / 10000)
            action = select_action(policy, state, eps, n_actions)
            nxt, reward, term, trunc, _ = env.step(action)
            done = term or trunc
            buffer.push(state, action, reward, nxt, float(term))
            state, ep_ret, steps = nxt, ep_ret + reward, steps + 1
            if len(buffer) >= 1000:
                losses.append(optimize(policy, target, buffer, optimizer, args))
            if steps % args.target_update == 0:
                target.load_state_dict(policy.state_dict())
        returns.append(ep_ret)
        if ep % 20 == 0:
            print(f"ep {ep} return {np.mean(returns[-20:]):.1f} "
                  f"loss {np.mean(losses) if losses else float('nan'):.4f}")

    # Q-values along one greedy episode
    state, _ = env.reset(seed=0)
    qs, done = [], False
    while not done:
        with torch.no_grad():
            q = policy(torch.as_tensor(state, dtype=torch.float32, device=device))
        qs.append(q.cpu().numpy())
        state, _, term, trunc, _ = env.step(int(q.argmax().item()))
        done = term or trunc
    plt.figure(figsize=(10, 4))
    plt.subplot(1, 2, 1)
    plt.plot(returns)
    plt.title("episode return")
    plt.subplot(1, 2, 2)
    plt.plot(np.stack(qs))
    plt.title("Q(s, a) along a greedy rollout")
    plt.savefig("dqn_cartpole.png")


if __name__ == "__main__":
    main()
