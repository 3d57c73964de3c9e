"""PPO's policy step and the value-network update (ref §2.4, §2.5), pure functions.

Both run ``epochs`` passes of ``num_minibatches`` shuffled minibatches, one
Adam step each, on the same batch with advantages from the pre-update value
network. Neither touches an agent: each returns new parameters, a new
optimizer state and what it measured, and the caller decides what to keep.
Training runs the two in one loop (:func:`ppo_update`), each network on its
own shuffles, with the same numbers as one after the other.
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


def lockstep_epochs(minibatches, carries, keys, batch_size: int, epochs: int, num_minibatches: int):
    """Several learners' ``epochs`` passes of freshly shuffled minibatches, in one loop.

    Learner ``i`` runs ``minibatches[i]`` (``(carry, indices) -> (carry, out)``) from
    ``carries[i]`` on permutations drawn from ``keys[i]`` alone, so each learner's
    result is exactly what it computes alone. Sharing the loop lets the two
    networks' independent minibatch steps run side by side instead of one loop
    after the other (README, "Where an iteration's time goes")."""

    def epoch(cs, ks):
        indices = tuple(_minibatch_indices(k, batch_size, num_minibatches) for k in ks)

        def step(cs, idx):
            outs = tuple(f(c, i) for f, c, i in zip(minibatches, cs, idx))
            return tuple(o[0] for o in outs), tuple(o[1] for o in outs)

        return jax.lax.scan(step, cs, indices)

    return jax.lax.scan(epoch, tuple(carries), tuple(jax.random.split(k, epochs) for k in keys))


def _epochs(minibatch, carry, key, batch_size: int, epochs: int, num_minibatches: int):
    """``epochs`` passes of ``minibatch`` over freshly shuffled minibatch indices."""
    (carry,), (out,) = lockstep_epochs((minibatch,), (carry,), (key,), batch_size, epochs, num_minibatches)
    return carry, out


def value_minibatch(batch: UpdateBatch, lr, knobs):
    """One Adam step of the value network on :func:`pg_diag.objectives.value_loss` over the
    minibatch ``idx``: ``((params, opt_state), idx) -> ((params, opt_state), loss)``."""

    def loss_fn(p, idx):
        v = networks.value_apply(p, batch.obs[idx], knobs)
        return value_loss(v, batch.old_values[idx], batch.value_targets[idx], batch.value_mask[idx], knobs)

    def minibatch(carry, idx):
        p, s = carry
        loss, grads = jax.value_and_grad(loss_fn)(p, idx)
        p, s = apply_update(p, grads, s, lr, knobs["adam_eps"])
        return (p, s), loss

    return minibatch


def value_update(params, opt_state, batch: UpdateBatch, lr, knobs, key, epochs: int,
                 num_minibatches: int):
    """``epochs`` × ``num_minibatches`` Adam steps on :func:`pg_diag.objectives.value_loss`.
    Returns params, optimizer state and the losses [epochs, minibatches]."""
    (params, opt_state), losses = _epochs(value_minibatch(batch, lr, knobs), (params, opt_state), key,
                                          batch.obs.shape[0], epochs, num_minibatches)
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


def policy_minibatch(batch: UpdateBatch, lr, knobs):
    """One PPO minibatch step (ref §2.5): the gradient of :func:`policy_loss` over the
    minibatch ``idx``, clipped in global norm (IM opt. 9), one Adam step:
    ``((params, opt_state), idx) -> ((params, opt_state), PPOInfo)``."""

    def minibatch(carry, idx):
        p, s = carry
        (_, info), grads = jax.value_and_grad(policy_loss, has_aux=True)(
            p, batch.obs[idx], batch.action[idx], batch.old_log_prob[idx], batch.advantages[idx], knobs)
        grads, norm = clip_by_global_norm(grads, knobs)
        p, s = apply_update(p, grads, s, lr, knobs["adam_eps"])
        return (p, s), PPOInfo(loss=info.surrogate_loss, clip_fraction=info.clip_fraction, grad_norm=norm)

    return minibatch


def ppo_step(params, opt_state, batch: UpdateBatch, lr, knobs, key, epochs: int, num_minibatches: int):
    """PPO's policy step (ref §2.5): ``epochs`` passes of :func:`policy_minibatch`.
    Returns the new parameters, optimizer state and a :class:`PPOInfo` [epochs, minibatches]."""
    (params, opt_state), info = _epochs(policy_minibatch(batch, lr, knobs), (params, opt_state), key,
                                        batch.obs.shape[0], epochs, num_minibatches)
    return params, opt_state, info


def ppo_update(policy, policy_opt, value, value_opt, batch: UpdateBatch, lr_policy, lr_value, knobs, key_value,
               key_policy, epochs: int, num_minibatches: int):
    """:func:`value_update` and :func:`ppo_step` with equal epoch counts, run in one
    loop (:func:`lockstep_epochs`); each result equals the separate call's with the
    same key. Returns ``((value, value_opt, losses), (policy, policy_opt, PPOInfo))``."""
    ((value, value_opt), (policy, policy_opt)), (losses, info) = lockstep_epochs(
        (value_minibatch(batch, lr_value, knobs), policy_minibatch(batch, lr_policy, knobs)),
        ((value, value_opt), (policy, policy_opt)), (key_value, key_policy), batch.obs.shape[0], epochs,
        num_minibatches)
    return (value, value_opt, losses), (policy, policy_opt, info)
