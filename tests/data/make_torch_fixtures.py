"""Make the CleanRL and Stable-Baselines3 fixtures of tests/test_policy_loaders.py with the real libraries.

Run where torch, stable-baselines3 and gymnasium[mujoco] are installed (not pgdiag's own environment; pgdiag
reads these files without torch):

    python tests/data/make_torch_fixtures.py tests/data

Writes, for Hopper-v5 (11-d observation, 3-d action):
- cleanrl_hopper.cleanrl_model: a CleanRL `ppo_continuous_action.Agent`'s state dict as its `--save-model` writes
  it (`torch.save(agent.state_dict(), path)`), its weights moved off their initialization; cleanrl_hopper.json:
  the `NormalizeObservation` statistics the run kept, fixed raw observations, what the wrapper made of them and
  what the agent computed on them (mean action, actions, log-probabilities, entropy, values).
- sb3_hopper.zip and sb3_hopper_vecnormalize.pkl: an SB3 `PPO("MlpPolicy")` trained a few hundred steps under
  `VecNormalize`, saved by `model.save` and `VecNormalize.save`; sb3_hopper.json: the same quantities as
  SB3's policy computed them.
"""

import json
import os
import sys

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions.normal import Normal


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    """CleanRL's ppo_continuous_action.Agent (the same modules, names and forward pass)."""

    def __init__(self, obs_size, act_size):
        super().__init__()
        self.critic = nn.Sequential(layer_init(nn.Linear(obs_size, 64)), nn.Tanh(), layer_init(nn.Linear(64, 64)),
                                    nn.Tanh(), layer_init(nn.Linear(64, 1), std=1.0))
        self.actor_mean = nn.Sequential(layer_init(nn.Linear(obs_size, 64)), nn.Tanh(),
                                        layer_init(nn.Linear(64, 64)), nn.Tanh(),
                                        layer_init(nn.Linear(64, act_size), std=0.01))
        self.actor_logstd = nn.Parameter(torch.zeros(1, act_size))

    def get_action_and_value(self, x, action=None):
        action_mean = self.actor_mean(x)
        action_logstd = self.actor_logstd.expand_as(action_mean)
        probs = Normal(action_mean, torch.exp(action_logstd))
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action).sum(1), probs.entropy().sum(1), self.critic(x)


def observations(env, n, seed):
    """Raw observations along a random-action episode (reset when it ends)."""
    obs, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    out = []
    while len(out) < n:
        out.append(np.asarray(obs, np.float64))
        obs, _, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            obs, _ = env.reset()
    return np.stack(out)


def cleanrl(out):
    torch.manual_seed(1)
    env = gym.make("Hopper-v5")
    wrapped = gym.wrappers.NormalizeObservation(env)
    raw = observations(env, 64, seed=3)
    for x in raw[:56]:
        wrapped.obs_rms.update(x[None])          # the statistics a run's wrapper kept
    wrapped.update_running_mean = False
    test = raw[56:]
    seen = np.stack([np.clip(wrapped.observation(x), -10, 10) for x in test])   # + TransformObservation's clip
    agent = Agent(11, 3)
    with torch.no_grad():                        # as after training: weights off their initialization
        for p in agent.parameters():
            p.add_(0.05 * torch.randn_like(p))
        agent.actor_logstd.copy_(torch.tensor([[-0.3, 0.1, -0.6]]))
    torch.save(agent.state_dict(), os.path.join(out, "cleanrl_hopper.cleanrl_model"))
    x = torch.tensor(seen)
    actions = torch.tensor(np.random.default_rng(0).uniform(-1.5, 1.5, (len(test), 3)), dtype=torch.float32)
    with torch.no_grad():
        _, log_prob, entropy, value = agent.get_action_and_value(x, actions)
        mean = agent.actor_mean(x)
    record = dict(obs_mean=wrapped.obs_rms.mean.tolist(), obs_var=wrapped.obs_rms.var.tolist(),
                  obs_count=float(wrapped.obs_rms.count), raw_obs=test.tolist(), seen_obs=seen.tolist(),
                  mean=mean.tolist(), actions=actions.tolist(), log_prob=log_prob.tolist(),
                  entropy=entropy.tolist(), value=value[:, 0].tolist())
    with open(os.path.join(out, "cleanrl_hopper.json"), "w") as f:
        json.dump(record, f)


def sb3(out):
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    venv = VecNormalize(DummyVecEnv([lambda: gym.make("Hopper-v5")]), gamma=0.99)
    model = PPO("MlpPolicy", venv, n_steps=128, batch_size=64, n_epochs=2, seed=2, device="cpu")
    model.learn(total_timesteps=256)
    model.save(os.path.join(out, "sb3_hopper.zip"))
    venv.save(os.path.join(out, "sb3_hopper_vecnormalize.pkl"))
    venv.training = False
    test = observations(gym.make("Hopper-v5"), 8, seed=5)
    seen = venv.normalize_obs(test).astype(np.float32)
    x = torch.tensor(seen)
    actions = torch.tensor(np.random.default_rng(1).uniform(-1.5, 1.5, (len(test), 3)), dtype=torch.float32)
    with torch.no_grad():
        dist = model.policy.get_distribution(x)
        record = dict(raw_obs=test.tolist(), seen_obs=seen.tolist(), mean=dist.distribution.mean.tolist(),
                      actions=actions.tolist(), log_prob=dist.log_prob(actions).tolist(),
                      entropy=dist.entropy().tolist(), value=model.policy.predict_values(x)[:, 0].tolist(),
                      gamma=model.gamma, gae_lambda=model.gae_lambda, clip_range=0.2)
    with open(os.path.join(out, "sb3_hopper.json"), "w") as f:
        json.dump(record, f)


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    cleanrl(target)
    sb3(target)
