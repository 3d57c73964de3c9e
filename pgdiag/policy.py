"""A trained policy frozen for evaluation: its parameters and its observation normalizer, fixed.

    policy = pgdiag.load_policy("runs/hopper", iteration=150, agent=3)   # or ("sb3", "model.zip"), …
    action = policy.act(raw_obs)                      # the mean action
    action, log_prob = policy.sample(key, raw_obs)    # a draw from π(·|s)

Raw observations go through the observation filter with the statistics the
agent had at that iteration (normalize, then clip; ref §2.2), never updated.
A [`FrozenPolicy`][pgdiag.policy.FrozenPolicy] is a pytree, so it can be passed into ``jit``/``vmap``.
"""

from __future__ import annotations

import jax
from flax import struct

from pgdiag import networks
from pgdiag.normalize import RunningStat, observation_filter


@struct.dataclass
class FrozenPolicy:
    """A saved agent's policy with its observation normalizer frozen, to evaluate or sample
    ([`load_policy`][pgdiag.run.checkpoints.load_policy])."""

    params: dict
    obs_stat: RunningStat  # the observation normalizer's statistics, frozen
    knobs: dict            # the agent's knobs (activation and filter settings are what the policy reads)
    iteration: jax.Array   # the iteration after which it was saved
    value: dict | None = None  # the value function's parameters, where it was loaded with one

    def observe(self, raw_obs: jax.Array) -> jax.Array:
        """What the policy sees: the raw observation through the frozen filter."""
        return observation_filter(self.obs_stat, raw_obs, self.knobs)

    def distribution(self, raw_obs: jax.Array):
        """Mean and log-std of π(·|s) at raw observations ``[..., obs]``."""
        return networks.policy_apply(self.params, self.observe(raw_obs), self.knobs)

    def act(self, raw_obs: jax.Array) -> jax.Array:
        """The deterministic action: the Gaussian's mean (through tanh for a squashed policy)."""
        return networks.env_action(self.params, self.distribution(raw_obs)[0])

    def draw(self, key, raw_obs: jax.Array) -> jax.Array:
        """The policy's draw u = μ + σ·ε (the action itself unless the policy squashes it)."""
        mean, log_std = self.distribution(raw_obs)
        return mean + jax.numpy.exp(log_std) * jax.random.normal(key, mean.shape)

    def sample(self, key, raw_obs: jax.Array):
        """A draw from π(·|s): the action the task receives and its log-probability."""
        u = self.draw(key, raw_obs)
        return networks.env_action(self.params, u), self.log_prob(raw_obs, u)

    def log_prob(self, raw_obs: jax.Array, u: jax.Array) -> jax.Array:
        """log π(a|s) of the action a that the draw ``u`` gives (``u`` is the action unless the policy squashes
        it; for a tanh-squashed one, Brax's ``raw_action``)."""
        mean, log_std = self.distribution(raw_obs)
        if networks.squashes(self.params):
            return networks.squashed_log_prob(mean, log_std, u)
        return networks.gaussian_log_prob(mean, log_std, u)

    def entropy(self, raw_obs: jax.Array) -> jax.Array:
        """H[π(·|s)] of the action the task receives."""
        mean, log_std = self.distribution(raw_obs)
        if networks.squashes(self.params):
            return networks.squashed_entropy(mean, log_std)
        return networks.gaussian_entropy(log_std)

    def kl(self, other: "FrozenPolicy", raw_obs: jax.Array) -> jax.Array:
        """KL(π_self(·|s) ‖ π_other(·|s)): the Gaussians' over u, which tanh (a bijection) leaves unchanged."""
        return networks.gaussian_kl(*self.distribution(raw_obs), *other.distribution(raw_obs))

    def values(self, raw_obs: jax.Array) -> jax.Array:
        """V(s) of the value function loaded beside the policy."""
        if self.value is None:
            raise ValueError("this policy was loaded without a value function")
        return networks.value_apply(self.value, self.observe(raw_obs), self.knobs)
