"""REINFORCE (vanilla policy gradient) on CartPole-v1 with gymnasium.

After every episode the log-probabilities are recomputed in one batched forward pass.
"""
from itertools import count

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

gamma = 0.99
lr = 1e-2
seed = 543
log_interval = 10

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # expect: DEV004

env = gym.make("CartPole-v1")
torch.manual_seed(seed)
np.random.seed(seed)


class Policy(nn.Module):
    def __init__(self, obs_dim, n_actions, hidden=128):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(obs_dim, hidden),
            nn.ReLU(),
            nn.Linear(hidden, n_actions),
        )

    def forward(self, x):
        return torch.softmax(self.net(x), dim=-1)


policy = Policy(env.observation_space.shape[0], env.action_space.n).to(device)
optimizer = optim.Adam(policy.parameters(), lr=lr)
eps = np.finfo(np.float32).eps.item()


def select_action(state):
    with torch.no_grad():
        probs = policy(torch.as_tensor(state, dtype=torch.float32, device=device).unsqueeze(0))
    return torch.multinomial(probs, 1).item()


def discounted(rewards):
    R, out = 0.0, []
    for r in reversed(rewards):
        R = r + gamma * R
        out.append(R)
    return out[::-1]


running_reward = 10.0
for i_episode in count(1):
    state, _ = env.reset(seed=seed + i_episode)
    states, actions, rewards = [], [], []
    for t in range(1, 10000):
        action = select_action(state)
        states.append(state)
        actions.append(action)
        state, reward, terminated, truncated, _ = env.step(action)
        rewards.append(reward)
        if terminated or truncated:
            break

    ep_reward = sum(rewards)
    running_reward = 0.05 * ep_reward + 0.95 * running_reward

    states_t = torch.as_tensor(np.array(states), dtype=torch.float32, device=device)
    actions_t = torch.as_tensor(actions, device=device)
    probs = policy(states_t)
    log_probs = torch.log(probs.gather(1, actions_t.unsqueeze(1)).squeeze(1) + 1e-8)

    returns = torch.tensor(discounted(rewards))
    returns = (returns - returns.mean()) / (returns.std() + eps)
    policy_loss = -(log_probs * returns).sum()  # expect: DEV006

    optimizer.zero_grad()
    policy_loss.backward()
    optimizer.step()

    if i_episode % log_interval == 0:
        print(f"Episode {i_episode}\tLast reward: {ep_reward:.2f}\tAverage reward: {running_reward:.2f}")
    if running_reward > env.spec.reward_threshold:
        print(f"Solved! Running reward is now {running_reward:.1f} and the last episode runs to {t} time steps!")
        break

torch.save(policy.state_dict(), "reinforce_cartpole.pt")

# quick greedy evaluation with the saved weights
eval_policy = Policy(env.observation_space.shape[0], env.action_space.n)
eval_policy.load_state_dict(torch.load("reinforce_cartpole.pt", map_location="cpu"))
eval_policy.eval()
scores = []
for ep in range(5):
    state, _ = env.reset(seed=10_000 + ep)
    done, total = False, 0.0
    while not done:
        with torch.no_grad():
            probs = eval_policy(torch.from_numpy(state).float())
        state, reward, terminated, truncated, _ = env.step(int(probs.argmax()))
        total += reward
        done = terminated or truncated
    scores.append(total)
print("greedy eval:", np.mean(scores), "+/-", np.std(scores))
env.close()
