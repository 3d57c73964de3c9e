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

Precision. The original keeps these statistics in float64. In float32 the
running update loses accuracy as n grows: each push adds an increment of
size ~σ/n to a mean of size up to ~25σ (Hopper), and a term of size ~σ² to
a sum S of size ~nσ², so the rounding of every addition (relative 6e-8 of
the *accumulator*) becomes large against the increment; after 10⁶ pushes
the std and mean are off by ~3e-4 to 2e-3 of σ, and a float32 count stops
at 2²⁴. Without enabling x64, [`RunningStat`][pgdiag.normalize.RunningStat] therefore stores the
mean and S as double-float pairs ``hi + lo`` (float32 each, |lo| ≤
ulp(hi)/2) updated with error-free transformations (TwoSum / Fast2Sum),
which keeps the accumulators to ~2⁻⁴⁸ relative; a batch's moments are taken
from deviations to the current mean (so nothing of size |μ| is rounded
there), and the count is an exact int32. After 10⁶ pushes the pairs are
within ~1e-10 of σ (~1e-7 once rounded to float32).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

NORM_EPS = 1e-8


def _two_sum(a: jax.Array, b: jax.Array):
    """Knuth's TwoSum: s + e == a + b exactly, s = fl(a + b). Branch-free, any magnitudes.
    (XLA keeps float additions as written: no reassociation without fast-math.)"""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def _fast_two_sum(a: jax.Array, b: jax.Array):
    """Dekker's Fast2Sum, exact when |a| ≥ |b| (or a == 0): renormalizes a pair."""
    s = a + b
    return s, b - (s - a)


def _add_pair(hi: jax.Array, lo: jax.Array, x: jax.Array):
    """(hi + lo) + x as a renormalized double-float pair: error ~2⁻⁴⁸·|hi| + ~2⁻²⁴·|lo|."""
    s, e = _two_sum(hi, x)
    return _fast_two_sum(s, e + lo)


@struct.dataclass
class RunningStat:
    """Running count, mean and sum of squared deviations (Welford's S).

    ``mean`` and ``m2`` (S) are kept as double-float pairs ``*_hi + *_lo``; the
    properties return them rounded to float32. ``n`` is an exact int32 count.
    """

    n: jax.Array        # int32 []
    mean_hi: jax.Array  # float32 [*shape]
    mean_lo: jax.Array  # float32 [*shape]
    m2_hi: jax.Array    # float32 [*shape]
    m2_lo: jax.Array    # float32 [*shape]

    @staticmethod
    def zeros(shape=()) -> "RunningStat":
        z = jnp.zeros(shape, jnp.float32)
        return RunningStat(n=jnp.int32(0), mean_hi=z, mean_lo=z, m2_hi=z, m2_lo=z)

    @staticmethod
    def from_moments(n, mean, m2) -> "RunningStat":
        """A statistic with the given count, mean and S (float32 values, zero low parts)."""
        mean = jnp.asarray(mean, jnp.float32)
        m2 = jnp.broadcast_to(jnp.asarray(m2, jnp.float32), mean.shape)
        z = jnp.zeros(mean.shape, jnp.float32)
        return RunningStat(n=jnp.asarray(n, jnp.int32), mean_hi=mean, mean_lo=z, m2_hi=m2, m2_lo=z)

    @property
    def mean(self) -> jax.Array:
        return self.mean_hi + self.mean_lo  # == mean_hi for a normalized pair

    @property
    def m2(self) -> jax.Array:
        return self.m2_hi + self.m2_lo

    @property
    def var(self) -> jax.Array:
        # ref §6: n = 1 gives var = mean² (std = |x|); n > 1 gives S/(n−1).
        nf = self.n.astype(jnp.float32)
        return jnp.where(self.n > 1, self.m2 / jnp.maximum(nf - 1, 1), jnp.square(self.mean))

    @property
    def std(self) -> jax.Array:
        return jnp.sqrt(self.var)

    def center(self, x: jax.Array) -> jax.Array:
        """x − mean, using both halves of the mean (exact to ~2⁻²⁴·|x − mean|)."""
        return (x - self.mean_hi) - self.mean_lo


def push(stat: RunningStat, x: jax.Array, mask: jax.Array | None = None) -> RunningStat:
    """Add the rows of ``x`` ([B, *shape]) whose ``mask`` ([B] bool) is set."""
    x = jnp.asarray(x, jnp.float32)
    w = jnp.ones(x.shape[0], jnp.float32) if mask is None else mask.astype(jnp.float32)
    wx = w.reshape((-1,) + (1,) * (x.ndim - 1))
    count = jnp.sum(w)                       # exact: at most B
    n_old = stat.n
    n = n_old + count.astype(jnp.int32)      # exact int32 count (float32 stops at 2²⁴)
    # Deviations from the current mean, not raw values: fl(x − μ_hi) has error
    # ~2⁻²⁴·|x − μ| (~σ), while a float32 batch mean of raw x would round at ~2⁻²⁴·|μ|.
    d = stat.center(x)
    batch_dev = jnp.sum(wx * d, axis=0) / jnp.maximum(count, 1.0)  # batch mean − mean
    batch_m2 = jnp.sum(wx * jnp.square(d - batch_dev), axis=0)
    frac = count / jnp.maximum(n.astype(jnp.float32), 1.0)          # count/n
    # Chan: mean += δ·count/n; S += S_batch + δ²·n_old·count/n. The increments
    # are small against the accumulators, so each is added error-free into a pair.
    mean_hi, mean_lo = _add_pair(stat.mean_hi, stat.mean_lo, batch_dev * frac)
    m2_hi, m2_lo = _add_pair(stat.m2_hi, stat.m2_lo,
                             batch_m2 + jnp.square(batch_dev) * (n_old.astype(jnp.float32) * frac))
    return RunningStat(n=n, mean_hi=mean_hi, mean_lo=mean_lo, m2_hi=m2_hi, m2_lo=m2_lo)


# --- IM opt. 6 and 7: observation normalization and clipping -----------------

def normalize_observation(stat: RunningStat, obs: jax.Array, knobs) -> jax.Array:
    """IM opt. 6 (ref §2.2): (x − μ)/(σ + 1e-8) with the already-updated stats."""
    normalized = stat.center(obs) / (stat.std + NORM_EPS)
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

def scale_reward(ret_stat: RunningStat, rew_stat: RunningStat, ret: jax.Array, reward: jax.Array, knobs,
                 update: bool = True):
    """IM opt. 2 (ref §2.3): update the discounted return, push it, divide.

    ``ret`` and ``reward`` are per environment ([B]). With
    ``reward_scaling_uses_rewards`` the original's other filter applies
    instead (norm_rewards='rewards'): push the raw reward and output
    (r − μ)/(σ + 1e-8) + μ. Returns the new return accumulators, both
    statistics and the scaled reward (the raw reward when reward scaling is
    off; the statistics are kept either way). With ``update=False`` (static)
    nothing is pushed: the scaler divides by the statistics it was given.
    """
    ret = knobs["gamma"] * ret + reward
    if update:
        ret_stat = push(ret_stat, ret)
        rew_stat = push(rew_stat, reward)
    by_returns = reward / (ret_stat.std + NORM_EPS)
    by_rewards = (reward - rew_stat.mean) / (rew_stat.std + NORM_EPS) + rew_stat.mean
    scaled = jnp.where(knobs["reward_scaling_uses_rewards"], by_rewards, by_returns)
    return ret, ret_stat, rew_stat, jnp.where(knobs["reward_scaling"], scaled, reward)


def reward_affine(ret_stat: RunningStat, rew_stat: RunningStat, knobs):
    """(a, b) with scaled reward = a·r + b under frozen statistics (before clipping): the map
    [`scale_reward`][pgdiag.normalize.scale_reward] applies, so a value of raw rewards converts to the learner's
    units."""
    by_returns = 1.0 / (ret_stat.std + NORM_EPS)
    a_rew = 1.0 / (rew_stat.std + NORM_EPS)
    a = jnp.where(knobs["reward_scaling_uses_rewards"], a_rew, by_returns)
    b = jnp.where(knobs["reward_scaling_uses_rewards"], rew_stat.mean * (1.0 - a_rew), 0.0)
    return jnp.where(knobs["reward_scaling"], a, 1.0), jnp.where(knobs["reward_scaling"], b, 0.0)


def clip_reward(reward: jax.Array, knobs) -> jax.Array:
    """IM opt. 5 (ref §2.3): clip to ±reward_clip; in the original it acts only on
    normalized rewards, so it is inactive when reward scaling is off."""
    bound = knobs["reward_clip"]
    active = jnp.logical_and(knobs["reward_clipping"], knobs["reward_scaling"])
    return jnp.where(active, jnp.clip(reward, -bound, bound), reward)
