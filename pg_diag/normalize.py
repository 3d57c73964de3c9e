"""Running statistics, observation normalization/clipping, reward scaling/clipping.

Semantics follow the original code exactly (reference/original-code.md §2.2,
§2.3, §6):

* running moments use Welford's rules, with variance ``S/(n−1)`` for n > 1
  and ``mean²`` for n = 1 (so the first observation normalizes to 0);
* observations are pushed first, then normalized with the updated moments,
  ``(x − μ)/(σ + 1e-8)``, then clipped;
* reward scaling keeps a discounted return ``ret ← γ·ret + r`` per
  environment, pushes it, and divides the raw reward by the return's std
  (no mean subtraction); ``ret`` restarts at 0 on every environment reset.

Several environments per agent share one set of statistics; a step's batch
is merged with Chan's parallel update, which equals pushing the samples one
at a time.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

NORM_EPS = 1e-8


@struct.dataclass
class RunningStat:
    """Running count, mean and sum of squared deviations (Welford's S)."""

    n: jax.Array     # float32 []
    mean: jax.Array  # float32 [*shape]
    m2: jax.Array    # float32 [*shape]

    @staticmethod
    def zeros(shape=()) -> "RunningStat":
        return RunningStat(n=jnp.float32(0), mean=jnp.zeros(shape, jnp.float32),
                           m2=jnp.zeros(shape, jnp.float32))

    @property
    def var(self) -> jax.Array:
        # ref §6: n = 1 gives var = mean² (std = |x|); n > 1 gives S/(n−1).
        return jnp.where(self.n > 1, self.m2 / jnp.maximum(self.n - 1, 1), jnp.square(self.mean))

    @property
    def std(self) -> jax.Array:
        return jnp.sqrt(self.var)


def push(stat: RunningStat, x: jax.Array, mask: jax.Array | None = None) -> RunningStat:
    """Add the rows of ``x`` ([B, *shape]) whose ``mask`` ([B] bool) is set."""
    w = jnp.ones(x.shape[0], jnp.float32) if mask is None else mask.astype(jnp.float32)
    wx = w.reshape((-1,) + (1,) * (x.ndim - 1))
    count = jnp.sum(w)
    safe = jnp.maximum(count, 1.0)
    batch_mean = jnp.sum(wx * x, axis=0) / safe
    batch_m2 = jnp.sum(wx * jnp.square(x - batch_mean), axis=0)
    n = stat.n + count
    delta = batch_mean - stat.mean
    frac = count / jnp.maximum(n, 1.0)
    return RunningStat(n=n, mean=stat.mean + delta * frac,
                       m2=stat.m2 + batch_m2 + jnp.square(delta) * stat.n * frac)


# --- IM opt. 6 and 7: observation normalization and clipping -----------------

def normalize_observation(stat: RunningStat, obs: jax.Array, knobs) -> jax.Array:
    """IM opt. 6 (ref §2.2): (x − μ)/(σ + 1e-8) with the already-updated stats."""
    normalized = (obs - stat.mean) / (stat.std + NORM_EPS)
    return jnp.where(knobs["obs_normalization"], normalized, obs)


def clip_observation(obs: jax.Array, knobs) -> jax.Array:
    """IM opt. 7 (ref §2.2): clip to ±obs_clip. Part of the normalizing filter in
    the original, so it acts only when observation normalization is on."""
    bound = knobs["obs_clip"]
    active = jnp.logical_and(knobs["obs_clipping"], knobs["obs_normalization"])
    return jnp.where(active, jnp.clip(obs, -bound, bound), obs)


def observation_filter(stat: RunningStat, obs: jax.Array, knobs) -> jax.Array:
    """What the policy sees: normalization then clipping."""
    return clip_observation(normalize_observation(stat, obs, knobs), knobs)


# --- IM opt. 2 and 5: reward scaling and clipping --------------------------------

def scale_reward(ret_stat: RunningStat, rew_stat: RunningStat, ret: jax.Array, reward: jax.Array, knobs):
    """IM opt. 2 (ref §2.3): update the discounted return, push it, divide.

    ``ret`` and ``reward`` are per environment ([B]). With
    ``reward_scaling_uses_rewards`` the original's other filter applies
    instead (norm_rewards='rewards'): push the raw reward and output
    (r − μ)/(σ + 1e-8) + μ. Returns the new return accumulators, both
    statistics and the scaled reward (the raw reward when reward scaling is
    off; the statistics are kept either way).
    """
    ret = knobs["gamma"] * ret + reward
    ret_stat = push(ret_stat, ret)
    rew_stat = push(rew_stat, reward)
    by_returns = reward / (ret_stat.std + NORM_EPS)
    by_rewards = (reward - rew_stat.mean) / (rew_stat.std + NORM_EPS) + rew_stat.mean
    scaled = jnp.where(knobs["reward_scaling_uses_rewards"], by_rewards, by_returns)
    return ret, ret_stat, rew_stat, jnp.where(knobs["reward_scaling"], scaled, reward)


def clip_reward(reward: jax.Array, knobs) -> jax.Array:
    """IM opt. 5 (ref §2.3): clip to ±reward_clip; in the original it acts only on
    normalized rewards, so it is inactive when reward scaling is off."""
    bound = knobs["reward_clip"]
    active = jnp.logical_and(knobs["reward_clipping"], knobs["reward_scaling"])
    return jnp.where(active, jnp.clip(reward, -bound, bound), reward)
