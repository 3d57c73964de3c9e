"""Every objective the algorithms, the training metrics and the diagnostics use, each defined once.

* [`probability_ratio`][pgdiag.objectives.probability_ratio] — r = π_θ(a|s) / π_old(a|s) from log-probabilities;
* [`surrogate`][pgdiag.objectives.surrogate] — CL eq. 15's surrogate reward mean(r·Â) (TRPO's objective);
* [`clipped_surrogate`][pgdiag.objectives.clipped_surrogate] — PPO's mean(min(r·Â, clip(r, 1−ε, 1+ε)·Â)) (CL eq. 13);
* [`value_loss`][pgdiag.objectives.value_loss] — squared error to V_old + Â, with IM opt. 1 (value clipping); per
  sample [`value_loss_terms`][pgdiag.objectives.value_loss_terms];
* [`mean_relative_error`][pgdiag.objectives.mean_relative_error] — the value diagnostics' mean |V − target| /
  |target| (CL §5.2);
* [`original_gae_relative_error`][pgdiag.objectives.original_gae_relative_error] — the original code's "GAE MRE":
  the value loss's per-sample term over |target| (ref §4.1 item 3), the quantity CL Fig 4a's "GAE MRE" reads;
* [`kl`][pgdiag.objectives.kl] / [`kl_stats`][pgdiag.objectives.kl_stats] — KL(π_old ‖ π_new) per state, and its
  mean and max;
* [`entropy`][pgdiag.objectives.entropy] — the Gaussian policy's entropy;
* [`normalize_advantages`][pgdiag.objectives.normalize_advantages] — Â standardized as the original does (per PPO
  minibatch, per TRPO batch).

Objectives are written as quantities to **maximize** (surrogates) or
**minimize** (the value loss) and return ``(value, info)`` where there is
something to report beside the value.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from pgdiag import networks

ADV_EPS = 1e-8


def normalize_advantages(adv: jax.Array) -> jax.Array:
    """(Â − mean)/(std + 1e-8) with the unbiased std, as torch computes it (ref §6)."""
    n = adv.shape[0]
    mean = jnp.mean(adv)
    std = jnp.sqrt(jnp.sum(jnp.square(adv - mean)) / (n - 1))
    return (adv - mean) / (std + ADV_EPS)


def probability_ratio(log_prob: jax.Array, old_log_prob: jax.Array) -> jax.Array:
    """r = π_θ(a|s)/π_old(a|s) = exp(log π_θ − log π_old), per sample."""
    return jnp.exp(log_prob - old_log_prob)


def surrogate(ratio: jax.Array, adv: jax.Array) -> jax.Array:
    """The surrogate reward L(θ) = mean(r·Â) (CL eq. 15; TRPO's objective)."""
    return jnp.mean(ratio * adv)


@struct.dataclass
class ClipInfo:
    clip_fraction: jax.Array  # fraction of samples with |r − 1| > ε


def clipped_surrogate(ratio: jax.Array, adv: jax.Array, clip_eps) -> tuple[jax.Array, ClipInfo]:
    """PPO's clipped surrogate L^C(θ) = mean(min(r·Â, clip(r, 1−ε, 1+ε)·Â)) (CL eq. 13 / PPO eq. 7).

    A huge ε (PPO-NoClip) leaves r unclipped and L^C = L."""
    clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
    value = jnp.mean(jnp.minimum(ratio * adv, clipped * adv))
    fraction = jnp.mean((jnp.abs(ratio - 1.0) > clip_eps).astype(jnp.float32))
    return value, ClipInfo(clip_fraction=fraction)


# --- IM opt. 1: value function clipping ------------------------------------------

def value_loss_terms(values, old_values, targets, knobs) -> jax.Array:
    """The value loss per sample (ref §2.4): (V − target)², or with IM opt. 1 on the **max** of that and the
    clipped squared error (V_old + clip(V − V_old, ±ε_v) − target)² (ref §8 B8; the IM paper's text writes
    min)."""
    unclipped = jnp.square(values - targets)
    eps_v = knobs["value_clip_eps"]
    clipped = jnp.square(old_values + jnp.clip(values - old_values, -eps_v, eps_v) - targets)
    return jnp.where(knobs["value_clipping"], jnp.maximum(unclipped, clipped), unclipped)


def value_loss(values, old_values, targets, mask, knobs) -> jax.Array:
    """Value regression to V_old + Â over non-terminal samples (ref §2.4): the mean of
    [`value_loss_terms`][pgdiag.objectives.value_loss_terms] over the samples ``mask`` keeps (done steps are
    excluded, as in the original)."""
    per_sample = value_loss_terms(values, old_values, targets, knobs)
    mask = mask.astype(jnp.float32)
    return jnp.sum(per_sample * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def _mean_over_target(error, target, mask) -> jax.Array:
    """mean over the samples ``mask`` selects of error / |target|, samples with target exactly 0 left out; NaN
    when nothing is selected."""
    keep = mask & (target != 0)
    rel = error / jnp.where(keep, jnp.abs(target), 1.0)
    n = jnp.sum(keep)
    return jnp.where(n > 0, jnp.sum(jnp.where(keep, rel, 0.0)) / jnp.maximum(n, 1), jnp.nan)


def mean_relative_error(pred, target, mask) -> jax.Array:
    """MRE = mean over the selected samples of |pred − target| / |target| (CL §5.2, Figs 4/14/15).

    The paper's intent (ref §4.1 item 3; the original's own formulas differ
    between repositories): a true relative error over the samples ``mask``
    selects; samples with target exactly 0, where it is undefined, are left
    out. NaN when nothing is selected."""
    return _mean_over_target(jnp.abs(pred - target), target, mask)


def original_gae_relative_error(values, old_values, targets, mask, knobs) -> jax.Array:
    """The original code's "GAE MRE" (ref §4.1 item 3; [M] ``value_loss_gae(..., re=True)``): the mean over the
    samples ``mask`` selects (non-terminal ones) of the value loss's per-sample term as configured
    ([`value_loss_terms`][pgdiag.objectives.value_loss_terms]: the squared error, or with value clipping the max of
    the clipped and unclipped squared errors) divided by |target|, target = V_old + Â.

    Not a relative error: a squared error over a value, so it has the units of the value and scales with the reward
    scale (a network off by 10% of targets of size 5 reads 0.05, of size 50 reads 0.5). It is what CL's "GAE MRE"
    (Fig 4a, "small") measured. Samples with target exactly 0 (where the original divides by zero) are left out, as
    in [`mean_relative_error`][pgdiag.objectives.mean_relative_error]; NaN when nothing is selected."""
    return _mean_over_target(value_loss_terms(values, old_values, targets, knobs), targets, mask)


def masked_mse(v, target, mask) -> jax.Array:
    """Mean of (v − target)² over the samples ``mask`` selects; NaN where nothing is selected."""
    n = jnp.sum(mask)
    return jnp.where(n > 0, jnp.sum(jnp.where(mask, jnp.square(v - target), 0.0)) / jnp.maximum(n, 1), jnp.nan)


def explained_variance(v, target, mask) -> jax.Array:
    """1 − Var(target − v)/Var(target) over ``mask``; NaN where nothing is selected or the target is constant."""
    n = jnp.sum(mask)
    w = mask.astype(jnp.float32) / jnp.maximum(n, 1)
    var = jnp.sum(w * jnp.square(target - jnp.sum(w * target)))
    resid = jnp.where(mask, target - v, 0.0)
    rvar = jnp.sum(w * jnp.square(resid - jnp.sum(w * resid)))
    return jnp.where((n > 0) & (var > 0), 1.0 - rvar / jnp.where(var > 0, var, 1.0), jnp.nan)


# --- KL and entropy (ref §2.7, §4.1) ------------------------------------------------

def kl(old_mean, old_log_std, mean, log_std) -> jax.Array:
    """KL(π_old ‖ π_new) per state, the old policy given by its outputs."""
    return networks.gaussian_kl(old_mean, old_log_std, mean, log_std)


@struct.dataclass
class KLStats:
    mean_kl: jax.Array
    max_kl: jax.Array


def kl_stats(old_mean, old_log_std, mean, log_std) -> KLStats:
    """Mean and max over states of KL(π_old ‖ π_new) (ref §4.1: the trust-region metrics)."""
    per_state = kl(old_mean, old_log_std, mean, log_std)
    return KLStats(mean_kl=jnp.mean(per_state), max_kl=jnp.max(per_state))


def entropy(log_std) -> jax.Array:
    """Entropy of the state-independent diagonal Gaussian (one value per ``log_std`` row)."""
    return networks.gaussian_entropy(log_std)
