"""PPO's policy step and the value-network update (ref §2.4, §2.5), pure functions.

Both run ``epochs`` passes of ``num_minibatches`` shuffled minibatches, one
Adam step each, on the same batch with advantages from the pre-update value
network. Neither touches an agent: each returns new parameters, a new
optimizer state and what it measured, and the caller decides what to keep.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from pg_diag import networks
from pg_diag.objectives import (clipped_surrogate, entropy, normalize_advantages, probability_ratio,
                                value_loss)
from pg_diag.optim import apply_update, clip_by_global_norm
from pg_diag.rollout import UpdateBatch


def _minibatch_indices(key, batch_size: int, num_minibatches: int):
    return jax.random.permutation(key, batch_size).reshape(num_minibatches, -1)


def _epochs(minibatch, carry, key, batch_size: int, epochs: int, num_minibatches: int):
    """``epochs`` passes of ``minibatch`` over freshly shuffled minibatch indices."""

    def epoch(c, k):
        return jax.lax.scan(minibatch, c, _minibatch_indices(k, batch_size, num_minibatches))

    return jax.lax.scan(epoch, carry, jax.random.split(key, epochs))


def value_update(params, opt_state, batch: UpdateBatch, lr, knobs, key, epochs: int,
                 num_minibatches: int):
    """``epochs`` × ``num_minibatches`` Adam steps on :func:`pg_diag.objectives.value_loss`.
    Returns params, optimizer state and the losses [epochs, minibatches]."""

    def loss_fn(p, idx):
        v = networks.value_apply(p, batch.obs[idx], knobs)
        return value_loss(v, batch.old_values[idx], batch.value_targets[idx], batch.value_mask[idx], knobs)

    def minibatch(carry, idx):
        p, s = carry
        loss, grads = jax.value_and_grad(loss_fn)(p, idx)
        p, s = apply_update(p, grads, s, lr, knobs["adam_eps"])
        return (p, s), loss

    (params, opt_state), losses = _epochs(minibatch, (params, opt_state), key, batch.obs.shape[0], epochs,
                                          num_minibatches)
    return params, opt_state, losses


@struct.dataclass
class PolicyLossInfo:
    surrogate_loss: jax.Array  # −L^C (entropy term excluded)
    clip_fraction: jax.Array   # fraction of samples with |r − 1| > ε


def policy_loss(params, obs, action, old_log_prob, advantages, knobs):
    """PPO's minibatch loss (ref §2.5): −L^C with advantages normalized over the
    minibatch, minus entropy_coef·H. Returns ``(loss, PolicyLossInfo)``."""
    mean, log_std = networks.policy_apply(params, obs, knobs)
    ratio = probability_ratio(networks.gaussian_log_prob(mean, log_std, action), old_log_prob)
    objective, clip = clipped_surrogate(ratio, normalize_advantages(advantages), knobs["clip_eps"])
    bonus = jnp.mean(entropy(log_std))
    return -objective - knobs["entropy_coef"] * bonus, PolicyLossInfo(surrogate_loss=-objective,
                                                                      clip_fraction=clip.clip_fraction)


@struct.dataclass
class PPOInfo:
    loss: jax.Array           # [E, M] surrogate loss (entropy term excluded)
    clip_fraction: jax.Array  # [E, M] fraction of samples with |r − 1| > ε
    grad_norm: jax.Array      # [E, M] global gradient norm before clipping


def ppo_step(params, opt_state, batch: UpdateBatch, lr, knobs, key, epochs: int, num_minibatches: int):
    """PPO's policy step (ref §2.5): per minibatch, the gradient of
    :func:`policy_loss`, clipped in global norm (IM opt. 9), one Adam step.
    Returns the new parameters, optimizer state and a :class:`PPOInfo`."""

    def minibatch(carry, idx):
        p, s = carry
        (_, info), grads = jax.value_and_grad(policy_loss, has_aux=True)(
            p, batch.obs[idx], batch.action[idx], batch.old_log_prob[idx], batch.advantages[idx], knobs)
        grads, norm = clip_by_global_norm(grads, knobs)
        p, s = apply_update(p, grads, s, lr, knobs["adam_eps"])
        return (p, s), PPOInfo(loss=info.surrogate_loss, clip_fraction=info.clip_fraction, grad_norm=norm)

    (params, opt_state), info = _epochs(minibatch, (params, opt_state), key, batch.obs.shape[0], epochs,
                                        num_minibatches)
    return params, opt_state, info
