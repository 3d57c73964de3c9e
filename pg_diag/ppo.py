"""PPO losses and the value/policy updates (ref §2.4, §2.5), pure functions.

The value network is updated first, then the policy, both on the same batch
with advantages from the pre-update value network; each runs ``epochs``
passes of ``num_minibatches`` shuffled minibatches, one Adam step each.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from pg_diag import networks
from pg_diag.optim import apply_update, clip_by_global_norm

ADV_EPS = 1e-8


def normalize_advantages(adv: jax.Array) -> jax.Array:
    """(A − mean)/(std + 1e-8) with the unbiased std, as torch computes it (ref §6)."""
    n = adv.shape[0]
    mean = jnp.mean(adv)
    std = jnp.sqrt(jnp.sum(jnp.square(adv - mean)) / (n - 1))
    return (adv - mean) / (std + ADV_EPS)


def ppo_surrogate_loss(log_prob, old_log_prob, adv, clip_eps):
    """Negative clipped surrogate (CL eq. 3 / PPO eq. 7):
    −mean(min(r·Â, clip(r, 1−ε, 1+ε)·Â)), r = π_θ(a|s)/π_old(a|s).

    Returns the loss and the ratios. A huge ε (PPO-NoClip) leaves r unclipped.
    """
    ratio = jnp.exp(log_prob - old_log_prob)
    clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
    return -jnp.mean(jnp.minimum(ratio * adv, clipped * adv)), ratio


# --- IM opt. 1: value function clipping ------------------------------------------

def value_loss(values, old_values, targets, mask, knobs):
    """Value regression to V_old + Â over non-terminal samples (ref §2.4).

    With IM opt. 1 on, the per-sample loss is the **max** of the unclipped and
    the clipped squared error, V_old + clip(V − V_old, ±ε_v) (ref §2.4, §8 B8;
    the IM paper's text writes min). Samples with ``mask`` 0 (done steps) are
    excluded, as in the original.
    """
    unclipped = jnp.square(values - targets)
    eps_v = knobs["value_clip_eps"]
    clipped = jnp.square(old_values + jnp.clip(values - old_values, -eps_v, eps_v) - targets)
    per_sample = jnp.where(knobs["value_clipping"], jnp.maximum(unclipped, clipped), unclipped)
    mask = mask.astype(jnp.float32)
    return jnp.sum(per_sample * mask) / jnp.maximum(jnp.sum(mask), 1.0)


@struct.dataclass
class UpdateBatch:
    """A flattened batch for the updates: every field is [B, ...]."""

    obs: jax.Array
    action: jax.Array
    old_log_prob: jax.Array
    advantages: jax.Array
    old_values: jax.Array
    value_targets: jax.Array
    value_mask: jax.Array


def _minibatch_indices(key, batch_size: int, num_minibatches: int):
    return jax.random.permutation(key, batch_size).reshape(num_minibatches, -1)


def value_update(params, opt_state, batch: UpdateBatch, lr, knobs, key, epochs: int,
                 num_minibatches: int):
    """``epochs`` × ``num_minibatches`` Adam steps on :func:`value_loss`.
    Returns params, optimizer state and the losses [epochs, minibatches]."""
    batch_size = batch.obs.shape[0]

    def loss_fn(p, idx):
        v = networks.value_apply(p, batch.obs[idx], knobs)
        return value_loss(v, batch.old_values[idx], batch.value_targets[idx], batch.value_mask[idx], knobs)

    def minibatch(carry, idx):
        p, s = carry
        loss, grads = jax.value_and_grad(loss_fn)(p, idx)
        p, s = apply_update(p, grads, s, lr, knobs["adam_eps"])
        return (p, s), loss

    def epoch(carry, k):
        return jax.lax.scan(minibatch, carry, _minibatch_indices(k, batch_size, num_minibatches))

    (params, opt_state), losses = jax.lax.scan(epoch, (params, opt_state), jax.random.split(key, epochs))
    return params, opt_state, losses


@struct.dataclass
class PolicyUpdateInfo:
    loss: jax.Array           # [E, M] surrogate loss (entropy term excluded)
    clip_fraction: jax.Array  # [E, M] fraction of samples with |r − 1| > ε
    grad_norm: jax.Array      # [E, M] global gradient norm before clipping


def policy_update(params, opt_state, batch: UpdateBatch, lr, knobs, key, epochs: int,
                  num_minibatches: int):
    """PPO policy step (ref §2.5): per minibatch, normalize advantages, take the
    clipped surrogate minus entropy_coef·H, clip the gradient norm (IM opt. 9)
    and apply one Adam step."""
    batch_size = batch.obs.shape[0]

    def loss_fn(p, idx):
        mean, log_std = networks.policy_apply(p, batch.obs[idx], knobs)
        log_prob = networks.gaussian_log_prob(mean, log_std, batch.action[idx])
        adv = normalize_advantages(batch.advantages[idx])
        surrogate, ratio = ppo_surrogate_loss(log_prob, batch.old_log_prob[idx], adv, knobs["clip_eps"])
        entropy = jnp.mean(networks.gaussian_entropy(log_std))
        clip_fraction = jnp.mean((jnp.abs(ratio - 1.0) > knobs["clip_eps"]).astype(jnp.float32))
        return surrogate - knobs["entropy_coef"] * entropy, (surrogate, clip_fraction)

    def minibatch(carry, idx):
        p, s = carry
        (_, (surrogate, clip_fraction)), grads = jax.value_and_grad(loss_fn, has_aux=True)(p, idx)
        grads, norm = clip_by_global_norm(grads, knobs)
        p, s = apply_update(p, grads, s, lr, knobs["adam_eps"])
        return (p, s), PolicyUpdateInfo(loss=surrogate, clip_fraction=clip_fraction, grad_norm=norm)

    def epoch(carry, k):
        return jax.lax.scan(minibatch, carry, _minibatch_indices(k, batch_size, num_minibatches))

    (params, opt_state), info = jax.lax.scan(epoch, (params, opt_state), jax.random.split(key, epochs))
    return params, opt_state, info
