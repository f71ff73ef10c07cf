"""Minimal PPO (clipped objective, GAE) for continuous control, e.g. Pendulum-v1."""
import argparse

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Normal


class ActorCritic(nn.Module):
    def __init__(self, obs_dim, act_dim, action_high, hidden=64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.mu_head = nn.Linear(hidden, act_dim)
        self.v_head = nn.Linear(hidden, 1)
        self.log_std = nn.Parameter(torch.full((act_dim,), -0.5))
        self.action_scale = torch.tensor(action_high, dtype=torch.float32)  # expect: DEV014

    def forward(self, obs):
        h = self.body(obs)
        mu = torch.tanh(self.mu_head(h)) * self.action_scale
        std = self.log_std.exp().expand_as(mu)
        return Normal(mu, std), self.v_head(h).squeeze(-1)


class RolloutBuffer:
    def __init__(self, n_steps, obs_dim, act_dim):
        self.obs = torch.zeros(n_steps, obs_dim)
        self.actions = torch.zeros(n_steps, act_dim)
        self.logp = torch.zeros(n_steps)
        self.rewards = torch.zeros(n_steps)
        self.dones = torch.zeros(n_steps)
        self.values = torch.zeros(n_steps + 1)

    def gae(self, gamma, lam):
        n = len(self.rewards)
        adv = torch.zeros(n)
        last = 0.0
        for t in reversed(range(n)):
            nonterminal = 1.0 - self.dones[t]
            delta = self.rewards[t] + gamma * self.values[t + 1] * nonterminal - self.values[t]
            last = delta + gamma * lam * nonterminal * last
            adv[t] = last
        return adv + self.values[:-1], adv


class PPOAgent:
    def __init__(self, env, n_steps=2048, epochs=10, minibatch=64, lr=3e-4, gamma=0.99, lam=0.95, clip=0.2):
        if torch.cuda.is_available():  # expect: DEV004
            self.device = torch.device("cuda")
        else:
            self.device = torch.device("cpu")
        self.env = env
        obs_dim = env.observation_space.shape[0]
        act_dim = env.action_space.shape[0]
        self.net = ActorCritic(obs_dim, act_dim, env.action_space.high)
        self.net.to(self.device)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=lr, eps=1e-5)
        self.buf = RolloutBuffer(n_steps, obs_dim, act_dim)
        self.n_steps, self.epochs, self.minibatch = n_steps, epochs, minibatch
        self.gamma, self.lam, self.clip = gamma, lam, clip

    @torch.no_grad()
    def act(self, obs):
        obs_t = torch.as_tensor(obs, dtype=torch.float32, device=self.device)
        dist, value = self.net(obs_t)
        action = dist.sample()
        return action.cpu(), dist.log_prob(action).sum(-1).item(), value.item()

    def collect(self, obs):
        ep_returns, ep_ret = [], 0.0
        for t in range(self.n_steps):
            action, logp, value = self.act(obs)
            next_obs, reward, terminated, truncated, _ = self.env.step(action.numpy())
            self.buf.obs[t] = torch.as_tensor(obs)
            self.buf.actions[t] = action
            self.buf.logp[t] = logp
            self.buf.rewards[t] = float(reward)
            self.buf.values[t] = value
            self.buf.dones[t] = float(terminated or truncated)
            ep_ret += reward
            obs = next_obs
            if terminated or truncated:
                ep_returns.append(ep_ret)
                ep_ret = 0.0
                obs, _ = self.env.reset()
        self.buf.values[self.n_steps] = self.act(obs)[2]
        return obs, ep_returns

    def update(self):
        returns, adv = self.buf.gae(self.gamma, self.lam)
        obs = self.buf.obs.to(self.device)
        actions = self.buf.actions.to(self.device)
        old_logp = self.buf.logp.to(self.device)
        returns = returns.to(self.device)
        adv = adv.to(self.device)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        for _ in range(self.epochs):
            perm = torch.randperm(self.n_steps, device=self.device)
            for start in range(0, self.n_steps, self.minibatch):
                idx = perm[start:start + self.minibatch]
                dist, values = self.net(obs[idx])
                logp = dist.log_prob(actions[idx]).sum(-1)
                ratio = torch.exp(logp - old_logp[idx])
                surr = torch.min(ratio * adv[idx], ratio.clamp(1 - self.clip, 1 + self.clip) * adv[idx])
                loss = -surr.mean() + 0.5 * (values - returns[idx]).pow(2).mean() - 0.001 * dist.entropy().mean()
                self.opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(self.net.parameters(), 0.5)
                self.opt.step()
        return loss.item()

    def save(self, path):
        state = self.net.state_dict()
        for v in state.values():
            v.cpu()  # expect: DEV008
        torch.save(state, path)

    def load(self, path):
        self.net.load_state_dict(torch.load(path, map_location=self.device))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--env", default="Pendulum-v1")
    ap.add_argument("--iterations", type=int, default=150)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    env = gym.make(args.env)
    agent = PPOAgent(env)
    obs, _ = env.reset(seed=args.seed)
    for it in range(args.iterations):
        obs, finished = agent.collect(obs)
        loss = agent.update()
        if finished:
            print(f"iter {it}: mean return {np.mean(finished):8.1f}  loss {loss:.3f}")
    agent.save(f"ppo_{args.env}.pt")
