"""DQN on CartPole-v1 with a target network and uniform replay."""
import argparse
import random
from collections import deque

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--episodes", type=int, default=600)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--tau", type=float, default=0.005)
    p.add_argument("--eps-start", type=float, default=0.9)
    p.add_argument("--eps-end", type=float, default=0.05)
    p.add_argument("--eps-decay", type=float, default=1000)
    p.add_argument("--seed", type=int, default=42)
    return p.parse_args()


class QNet(nn.Module):
    def __init__(self, n_obs, n_actions, hidden=128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_obs, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, n_actions))

    def forward(self, x):
        return self.net(x)


class Replay:
    def __init__(self, capacity=10000):
        self.buf = deque(maxlen=capacity)

    def push(self, *transition):
        self.buf.append(transition)

    def sample(self, n):
        batch = random.sample(self.buf, n)
        return list(zip(*batch))

    def __len__(self):
        return len(self.buf)


def main():
    args = get_args()
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.cuda.manual_seed_all(args.seed)

    device = torch.device("cuda" if torch.cuda.is_available()
                          else "mps" if torch.backends.mps.is_available() else "cpu")
    print(f"device={device} ({torch.cuda.get_device_name()})")  # expect: DEV011

    env = gym.make("CartPole-v1")
    n_actions = env.action_space.n
    obs, _ = env.reset(seed=args.seed)
    policy = QNet(len(obs), n_actions).to(device)
    target = QNet(len(obs), n_actions).to(device)
    target.load_state_dict(policy.state_dict())
    optimizer = torch.optim.AdamW(policy.parameters(), lr=args.lr, amsgrad=True)
    memory = Replay()
    steps = 0

    def select_action(state):
        nonlocal steps
        eps = args.eps_end + (args.eps_start - args.eps_end) * np.exp(-steps / args.eps_decay)
        steps += 1
        if random.random() > eps:
            with torch.no_grad():
                return policy(state).argmax(dim=1).item()
        return env.action_space.sample()

    def optimize():
        if len(memory) < args.batch_size:
            return None
        states, actions, rewards, next_states, dones = memory.sample(args.batch_size)
        state_b = torch.cat(states)
        action_b = torch.tensor(actions, device=device).unsqueeze(1)
        reward_b = torch.tensor(rewards, dtype=torch.float32)
        done_b = torch.tensor(dones, dtype=torch.float32, device=device)
        next_b = torch.cat(next_states)
        q = policy(state_b).gather(1, action_b).squeeze(1)
        with torch.no_grad():
            next_q = target(next_b).max(dim=1).values
        expected = reward_b + args.gamma * next_q * (1 - done_b)  # expect: DEV006
        loss = F.smooth_l1_loss(q, expected)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_value_(policy.parameters(), 100)
        optimizer.step()
        return loss.item()

    durations = []
    for episode in range(args.episodes):
        obs, _ = env.reset()
        state = torch.tensor(obs, dtype=torch.float32, device=device).unsqueeze(0)
        for t in range(500):
            action = select_action(state)
            obs, reward, terminated, truncated, _ = env.step(action)
            next_state = torch.tensor(obs, dtype=torch.float32, device=device).unsqueeze(0)
            memory.push(state, action, reward, next_state, float(terminated))
            state = next_state
            optimize()
            with torch.no_grad():
                for tp, pp in zip(target.parameters(), policy.parameters()):
                    tp.mul_(1 - args.tau).add_(args.tau * pp)
            if terminated or truncated:
                durations.append(t + 1)
                break
        if episode % 20 == 0:
            print(f"episode {episode}: mean duration (last 20) {np.mean(durations[-20:]):.1f}")

    probe = torch.tensor(np.stack([env.observation_space.sample() for _ in range(256)]),
                         dtype=torch.float32, device=device)
    with torch.no_grad():
        q_values = policy(probe).max(dim=1).values
    q_values.cpu()  # expect: DEV008
    np.save("q_probe.npy", q_values.numpy())  # expect: DEV001
    torch.save(policy.state_dict(), "dqn_cartpole.pt")


if __name__ == "__main__":
    main()
