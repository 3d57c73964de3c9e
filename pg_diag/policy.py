"""A trained policy frozen for evaluation: its parameters and its observation normalizer, fixed.

    policy = pg_diag.load_policy("runs/hopper", iteration=150, agent=3)
    action = policy.act(raw_obs)                      # the mean action
    action, log_prob = policy.sample(key, raw_obs)    # a draw from π(·|s)

Raw observations go through the observation filter with the statistics the
agent had at that iteration (normalize, then clip; ref §2.2), never updated.
A [`FrozenPolicy`][pg_diag.policy.FrozenPolicy] is a pytree, so it can be passed into ``jit``/``vmap``.
"""

from __future__ import annotations

import jax
from flax import struct

from pg_diag import networks
from pg_diag.normalize import RunningStat, observation_filter


@struct.dataclass
class FrozenPolicy:
    """A saved agent's policy with its observation normalizer frozen, to evaluate or sample
    ([`load_policy`][pg_diag.run.checkpoints.load_policy])."""

    params: dict
    obs_stat: RunningStat  # the observation normalizer's statistics, frozen
    knobs: dict            # the agent's knobs (activation and filter settings are what the policy reads)
    iteration: jax.Array   # the iteration after which it was saved

    def observe(self, raw_obs: jax.Array) -> jax.Array:
        """What the policy sees: the raw observation through the frozen filter."""
        return observation_filter(self.obs_stat, raw_obs, self.knobs)

    def distribution(self, raw_obs: jax.Array):
        """Mean and log-std of π(·|s) at raw observations ``[..., obs]``."""
        return networks.policy_apply(self.params, self.observe(raw_obs), self.knobs)

    def act(self, raw_obs: jax.Array) -> jax.Array:
        """The deterministic action: the Gaussian's mean."""
        return self.distribution(raw_obs)[0]

    def sample(self, key, raw_obs: jax.Array):
        """A draw a = μ + σ·ε from π(·|s) and its log-probability."""
        mean, log_std = self.distribution(raw_obs)
        action = mean + jax.numpy.exp(log_std) * jax.random.normal(key, mean.shape)
        return action, networks.gaussian_log_prob(mean, log_std, action)

    def log_prob(self, raw_obs: jax.Array, action: jax.Array) -> jax.Array:
        mean, log_std = self.distribution(raw_obs)
        return networks.gaussian_log_prob(mean, log_std, action)
