"""The landscape's true returns ([`pgdiag.studies.landscape.measure`][pgdiag.studies.landscape.measure]
explains the estimate): a policy's mean raw return from a number of complete episodes fixed before any is sampled,
and L̂, the mean length that converts pairs to episodes. ``r`` is the landscape's
[`Resolved`][pgdiag.studies.landscape.measure.Resolved] (``envs``, ``chunk_steps``, ``max_chunks``,
``length_episodes``)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from pgdiag.rollout import collect, reset_envs


@struct.dataclass
class ReturnSums:
    """Episodes counted, the state–action pairs they took, and the Chan-merged mean and M2 of their raw
    returns."""

    n: jax.Array
    pairs: jax.Array
    mean: jax.Array
    m2: jax.Array

    @staticmethod
    def of(returns, counted, lengths) -> "ReturnSums":
        w = counted.astype(jnp.float32)
        n = jnp.sum(w)
        mean = jnp.sum(w * returns) / jnp.maximum(n, 1.0)
        return ReturnSums(n=n, pairs=jnp.sum(w * lengths), mean=mean, m2=jnp.sum(w * jnp.square(returns - mean)))

    def merge(self, other: "ReturnSums") -> "ReturnSums":
        n = self.n + other.n
        delta = other.mean - self.mean
        safe = jnp.maximum(n, 1.0)
        return ReturnSums(n=n, pairs=self.pairs + other.pairs, mean=self.mean + delta * other.n / safe,
                          m2=self.m2 + other.m2 + delta * delta * self.n * other.n / safe)


def episode_counts(sizes, mean_length) -> jax.Array:
    """Episodes standing for N pairs at each size: round(N / L̂), at least 1 (``mean_length`` traced)."""
    n = jnp.round(jnp.asarray(sizes, jnp.float32) / jnp.maximum(mean_length, 1.0))
    return jnp.clip(n, 1, jnp.asarray(sizes, jnp.float32)).astype(jnp.int32)


def return_stream(env, r, policy, filters, knobs, key, counts, of: str = "return") -> ReturnSums:
    """The mean raw return of ``counts[s]`` complete episodes from reset under ``policy`` (filters frozen), for
    every size s: a [sizes]-stacked [`ReturnSums`][pgdiag.studies.landscape.return_streams.ReturnSums] (``of="length"``:
    of their lengths instead).

    ``r.envs`` environments run from reset through episode ends, in chunks of ``r.chunk_steps`` steps;
    environment e owns episodes e, e + envs, e + 2·envs, … of the sample, so size s counts the first
    ``counts[s]`` episodes (a prefix: sizes nest). Which episodes count is fixed before any is sampled, so
    each counted return is an independent draw of the episode return, whatever its length; the stream runs
    until every counted episode has ended (at the latest at the time limit), each environment idle once its own
    episodes have (no physics is spent on episodes that would not count)."""
    if of not in ("return", "length"):
        raise ValueError(f"of must be 'return' or 'length', got {of!r}")
    E = r.envs
    # quota[s, e]: episodes environment e contributes to size s
    quota = counts[:, None] // E + (jnp.arange(E)[None, :] < counts[:, None] % E)
    k_reset, k_run = jax.random.split(key)
    carry, _ = reset_envs(env, k_reset, E, filters, knobs, frozen=True)
    zero = jax.tree.map(lambda x: jnp.zeros(counts.shape, jnp.float32), ReturnSums(n=0, pairs=0, mean=0, m2=0))

    def unfinished(state):
        _, ended, _, c = state
        return (c < r.max_chunks) & jnp.any(ended < quota[-1])

    def body(state):
        carry, ended, acc, c = state
        # each environment runs its own episodes and then idles (native MuJoCo does not step it): a point whose
        # policy lives long keeps the loop going, not the physics of every environment that has finished
        carry, _, tr = collect(env, policy, carry, filters, jax.random.fold_in(k_run, c), knobs, r.chunk_steps,
                               frozen=True, quota=quota[-1] - ended)
        # the index, within its environment, of the episode that ends at each step
        index = ended[None, :] + jnp.cumsum(tr.done, axis=0) - 1                            # [T, E]
        counted = tr.done[None] & (index[None] < quota[:, None, :])                           # [S, T, E]
        value = tr.finished_return if of == "return" else tr.finished_length.astype(jnp.float32)
        part = jax.vmap(lambda w: ReturnSums.of(value, w, tr.finished_length))(counted)
        return carry, ended + jnp.sum(tr.done, axis=0), acc.merge(part), c + 1

    state = (carry, jnp.zeros(E, jnp.int32), zero, jnp.int32(0))
    return jax.lax.while_loop(unfinished, body, state)[2]


def episode_length(env, r, policy, filters, knobs, key) -> ReturnSums:
    """L̂: the mean length of ``r.length_episodes`` complete episodes of ``policy`` (filters frozen), as many
    environments each run from reset to its own episode's end, a
    [`ReturnSums`][pgdiag.studies.landscape.return_streams.ReturnSums] of their lengths (``mean`` = L̂, ``m2`` for its
    standard error). Their number is fixed before any is sampled and every one starts from its own reset, so the
    lengths are i.i.d. draws of the episode length and E[L̂] = E[L] (CL §5.3 counts a point's sample in pairs; this
    converts pairs to episodes without the censoring of the episodes that end inside a fixed-length batch, which
    keeps the short ones)."""
    wide = dataclasses.replace(r, envs=r.length_episodes)     # one episode per environment
    counts = jnp.asarray([r.length_episodes], jnp.int32)
    return jax.tree.map(lambda x: x[0], return_stream(env, wide, policy, filters, knobs, key, counts, of="length"))


__all__ = ["ReturnSums", "episode_counts", "episode_length", "return_stream"]
