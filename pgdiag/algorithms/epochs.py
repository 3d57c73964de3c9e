"""Minibatch epochs and the value network's update, shared by every algorithm (ref §2.4).

Every algorithm trains its value network the same way: ``epochs`` passes of
``num_minibatches`` shuffled minibatches, one Adam step each on
[`pgdiag.objectives.value_loss`][pgdiag.objectives.value_loss]. Minibatch algorithms (PPO, PPO-KL) run
their policy epochs through the same loop, and training may run both
networks in one loop ([`lockstep_epochs`][pgdiag.algorithms.epochs.lockstep_epochs]), each on its own shuffles,
with the numbers each gives alone.
"""

from __future__ import annotations

import jax

from pgdiag import networks
from pgdiag.objectives import value_loss
from pgdiag.optim import apply_update
from pgdiag.rollout import UpdateBatch


def minibatch_indices(key, batch_size: int, num_minibatches: int):
    return jax.random.permutation(key, batch_size).reshape(num_minibatches, -1)


def lockstep_epochs(minibatches, carries, keys, batch_size: int, epochs: int, num_minibatches: int):
    """Several learners' ``epochs`` passes of freshly shuffled minibatches, in one loop.

    Learner ``i`` runs ``minibatches[i]`` (``(carry, indices) -> (carry, out)``) from
    ``carries[i]`` on permutations drawn from ``keys[i]`` alone, so each learner's
    result is exactly what it computes alone. Sharing the loop lets the two
    networks' independent minibatch steps run side by side instead of one loop
    after the other (docs/benchmarks.md, "Where an iteration's time goes")."""

    def epoch(cs, ks):
        indices = tuple(minibatch_indices(k, batch_size, num_minibatches) for k in ks)

        def step(cs, idx):
            outs = tuple(f(c, i) for f, c, i in zip(minibatches, cs, idx))
            return tuple(o[0] for o in outs), tuple(o[1] for o in outs)

        return jax.lax.scan(step, cs, indices)

    return jax.lax.scan(epoch, tuple(carries), tuple(jax.random.split(k, epochs) for k in keys))


def epochs(minibatch, carry, key, batch_size: int, num_epochs: int, num_minibatches: int):
    """``num_epochs`` passes of ``minibatch`` over freshly shuffled minibatch indices."""
    (carry,), (out,) = lockstep_epochs((minibatch,), (carry,), (key,), batch_size, num_epochs, num_minibatches)
    return carry, out


def value_minibatch(batch: UpdateBatch, lr, knobs):
    """One Adam step of the value network on [`pgdiag.objectives.value_loss`][pgdiag.objectives.value_loss] over the
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


def value_update(params, opt_state, batch: UpdateBatch, lr, knobs, key, num_epochs: int, num_minibatches: int):
    """``num_epochs`` × ``num_minibatches`` Adam steps on
    [`pgdiag.objectives.value_loss`][pgdiag.objectives.value_loss]. Returns params, optimizer state and the losses
    [epochs, minibatches]."""
    (params, opt_state), losses = epochs(value_minibatch(batch, lr, knobs), (params, opt_state), key,
                                         batch.obs.shape[0], num_epochs, num_minibatches)
    return params, opt_state, losses
