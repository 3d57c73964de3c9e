"""Minibatch epochs and the value network's update, shared by every algorithm (ref §2.4).

Every algorithm trains its value network the same way: ``epochs`` passes of
``num_minibatches`` shuffled minibatches, one Adam step each on
[`pgdiag.objectives.value_loss`][pgdiag.objectives.value_loss]. Minibatch algorithms (PPO, PPO-KL) run
their policy epochs through the same loop, and training may run both
networks in one loop ([`lockstep_epochs`][pgdiag.algorithms.epochs.lockstep_epochs]), each on its own shuffles,
with the numbers each gives alone.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from pgdiag import networks
from pgdiag.objectives import value_loss
from pgdiag.optim import apply_update
from pgdiag.rollout import UpdateBatch


def shuffle_rounds(n: int) -> tuple[int, int]:
    """``(index_bits, rounds)`` of [`shuffle`][pgdiag.algorithms.epochs.shuffle] for ``n`` items: the bits a
    position takes, and the fewest rounds whose keys together have ≥ 3·log2(n) bits, the bound
    ``jax.random.permutation`` keeps (its ``exponent = 3``): the chance that two items tie in every round, the
    only way the order is not uniform, is then below C(n, 2)/n³ < 1/(2n)."""
    index_bits = max(1, (n - 1).bit_length())
    return index_bits, math.ceil(3 * math.log2(max(n, 2)) / max(32 - index_bits, 1))


def shuffle(key, n: int):
    """A uniformly random permutation of ``range(n)`` (int32), by ``jax.random.permutation``'s algorithm: rounds
    of a stable sort of the current order on fresh random keys. Each round's key is a random uint32 whose low
    bits are replaced by the item's current position, so one sort of a single uint32 operand does a round where
    ``jax.random.permutation`` sorts a key-value pair, which XLA:CPU does about 4× slower (docs/benchmarks.md,
    "The minibatch shuffle"). The keys keep 32 − ⌈log2 n⌉ bits, and the rounds are as many as
    [`shuffle_rounds`][pgdiag.algorithms.epochs.shuffle_rounds] says; past 2^24 items (8 key bits) it is
    ``jax.random.permutation`` itself."""
    index_bits, rounds = shuffle_rounds(n)
    if index_bits > 24:
        return jax.random.permutation(key, n).astype(jnp.int32)
    low = jnp.uint32((1 << index_bits) - 1)
    order = position = jnp.arange(n, dtype=jnp.uint32)
    for k in jax.random.split(key, rounds):
        packed = (jax.random.bits(k, (n,), jnp.uint32) & ~low) | position
        order = order[jax.lax.sort(packed) & low]   # ties in the key go by position: a stable sort
    return order.astype(jnp.int32)


def minibatch_indices(key, batch_size: int, num_minibatches: int):
    """One epoch's ``num_minibatches`` minibatches: a [`shuffle`][pgdiag.algorithms.epochs.shuffle] of the
    batch, split in order (the original's np.array_split of a shuffled index array, ref §2.4)."""
    return shuffle(key, batch_size).reshape(num_minibatches, -1)


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
