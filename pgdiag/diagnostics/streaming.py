"""Gradient estimates whose memory does not grow with N: sums streamed chunk by chunk.

The estimate (CL eq. 1 at θ = θ_old, ref §4.2 items 1–2) is the gradient of
the surrogate with advantages normalized over the estimate's own N pairs, as
the algorithm normalizes them (``objectives.normalize_advantages``):

    ĝ_N = (1/N) Σ_i (Â_i − μ)/(σ + ε) · ∇_θ log π_θ(a_i|s_i)
        = (S_Â∇ − μ·S_∇) / (N·(σ + ε)),

    S_Â∇ = Σ_i Â_i ∇log π_i,  S_∇ = Σ_i ∇log π_i,  μ = Σ_i Â_i / N,  σ² = Σ_i (Â_i − μ)² / (N − 1).

Why a prefix sum gives the estimate computed from scratch: μ and σ are
constants of the N pairs, and the gradient is linear in per-pair weights,
so ĝ_N depends on the pairs only through N, S_Â∇, S_∇, μ and M2 = Σ(Â_i − μ)².
Over disjoint chunks the S's add and (N, μ, M2) merge exactly (Chan, Golub &
LeVeque's pairwise update), so the sums over a stream's first N pairs — its
prefix — yield exactly the ĝ_N of those N pairs taken at once (to float
rounding; ``tests/test_diagnostics.py`` checks it). Each chunk costs one
forward pass and two VJPs (cotangents Â and 1), never a per-sample gradient.

Unnormalized (``normalize=False``): ĝ_N = S_Â∇ / N.

Which N pairs ([`Grid`][pgdiag.diagnostics.streaming.Grid]): a size N at or above ``pool`` is the stream's
first N pairs (within the first chunk, or whole chunks). A size below
``pool`` is N pairs drawn uniformly at random, without replacement, from the
stream's first ``pool`` pairs — with ``pool`` the algorithm's batch, from one
whole batch, its advantages computed on the whole batch as the algorithm
computes them — so only the count changes with N, not the states: a prefix
shorter than a segment would hold only a segment's first steps (CL §5.1
compares estimates at each N from the distribution the algorithm samples).
The draws are nested: the N pairs of a smaller size are among those of a
larger one (the first N of one random order of the pool's pairs), and every
size at or above ``pool`` contains the whole pool. ``pool=0`` keeps prefixes
at every size.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct
from jax.flatten_util import ravel_pytree

from pgdiag import networks
from pgdiag.diagnostics.sampling import Chunk, Sampling, sample_chunk, start_carry
from pgdiag.objectives import ADV_EPS


@struct.dataclass
class GradSums:
    n: jax.Array          # int32 [] pairs summed
    mean: jax.Array       # mean of Â
    m2: jax.Array         # Σ (Â − mean)²
    adv_score: jax.Array  # [P] Σ Â_i ∇log π_i
    score: jax.Array      # [P] Σ ∇log π_i

    @staticmethod
    def zeros(size: int) -> "GradSums":
        z = jnp.float32(0)
        return GradSums(n=jnp.int32(0), mean=z, m2=z, adv_score=jnp.zeros(size, jnp.float32),
                        score=jnp.zeros(size, jnp.float32))


def merge(a: GradSums, b: GradSums) -> GradSums:
    """The sums of the union of two disjoint sets of pairs (Chan et al. for the mean and M2)."""
    n = a.n + b.n
    na, nb, nf = (x.astype(jnp.float32) for x in (a.n, b.n, n))
    safe = jnp.maximum(nf, 1.0)
    delta = b.mean - a.mean
    return GradSums(n=n, mean=a.mean + delta * nb / safe, m2=a.m2 + b.m2 + delta * delta * na * nb / safe,
                    adv_score=a.adv_score + b.adv_score, score=a.score + b.score)


def estimate(s: GradSums, normalize: bool = True) -> jax.Array:
    """ĝ_N from the sums (see the module docstring)."""
    n = s.n.astype(jnp.float32)
    if not normalize:
        return s.adv_score / n
    std = jnp.sqrt(s.m2 / (n - 1.0))
    return (s.adv_score - s.mean * s.score) / (n * (std + ADV_EPS))


def chunk_sums(policy, knobs, chunk: Chunk, masks: jax.Array) -> GradSums:
    """The sums over the pairs each row of ``masks`` [M, C] (bool) selects, [M]-stacked ([M, H] when the
    chunk carries H advantage heads, ``advantage`` [H, C]).

    One forward pass of the policy on the chunk; per row, one VJP with
    cotangent mask (shared by the heads) and one per head with cotangent
    mask·Â, run in turn so memory is that of a single backward pass."""
    flat, unravel = ravel_pytree(policy)

    def log_prob(theta):
        mean, log_std = networks.policy_apply(unravel(theta), chunk.obs, knobs)
        return networks.gaussian_log_prob(mean, log_std, chunk.action)

    _, vjp = jax.vjp(log_prob, flat)
    adv = chunk.advantage if chunk.advantage.ndim == 2 else chunk.advantage[None]
    w = masks.astype(jnp.float32)

    def row(r):
        return jax.lax.map(lambda a: vjp(r * a)[0], adv), vjp(r)[0]

    adv_score, score = jax.lax.map(row, w)                                   # [M, H, P], [M, P]
    n = jnp.sum(masks, axis=1).astype(jnp.int32)
    mean = jnp.einsum("mc,hc->mh", w, adv) / jnp.maximum(n, 1)[:, None]
    m2 = jnp.einsum("mc,mhc->mh", w, jnp.square(adv[None] - mean[:, :, None]))
    heads = adv.shape[0]
    sums = GradSums(n=jnp.repeat(n[:, None], heads, axis=1), mean=mean, m2=m2, adv_score=adv_score,
                    score=jnp.repeat(score[:, None], heads, axis=1))
    return sums if chunk.advantage.ndim == 2 else jax.tree.map(lambda x: x[:, 0], sums)


#: fold_in data of the key that orders the pool's pairs (a stream's chunk keys are split from its key)
SUBSET_KEY = 0x5B5E7


@dataclasses.dataclass(frozen=True)
class Grid:
    """The nested sample sizes of one stream (static). Sizes below one chunk are
    exact (masked sums of the first chunk); larger sizes are whole chunks. Sizes
    below ``pool`` (at most a chunk) are uniform random draws from the first
    ``pool`` pairs, the others prefixes (see the module docstring)."""

    sizes: tuple   # the N of every estimate, increasing
    chunk: int     # pairs per chunk
    pool: int = 0  # sizes below it are drawn at random from the stream's first `pool` pairs (0: prefixes)

    def __post_init__(self):
        if not 0 <= self.pool <= self.chunk:
            raise ValueError(f"Grid pool must be between 0 and the chunk ({self.chunk} pairs), got {self.pool}")

    @property
    def num_chunks(self) -> int:
        return -(-self.sizes[-1] // self.chunk)

    @property
    def partial(self) -> tuple:
        """Sizes that end inside the first chunk."""
        return tuple(n for n in self.sizes if n < self.chunk)

    @property
    def whole(self) -> tuple:
        """Sizes that end at a chunk boundary, as the index of that chunk."""
        return tuple(n // self.chunk - 1 for n in self.sizes if n >= self.chunk)


def first_chunk_order(grid: Grid, key) -> jax.Array:
    """[chunk] int32: each pair of the first chunk's place in the order the sizes take pairs in — a size N
    keeps the pairs whose place is below N. The pool's pairs get a uniformly random permutation of
    0 … pool − 1 (a uniform permutation's inverse is uniform), the rest their own position."""
    position = jnp.arange(grid.chunk, dtype=jnp.int32)
    if not grid.pool:
        return position
    ranks = jax.random.permutation(key, grid.pool).astype(jnp.int32)
    return position.at[:grid.pool].set(ranks)


def size_masks(grid: Grid, key) -> jax.Array:
    """[M, chunk] bool: the first chunk's pairs each size of ``grid.partial`` keeps, then the whole chunk
    (``key``: the stream's key, as [`stream`][pgdiag.diagnostics.streaming.stream] takes it)."""
    cuts = jnp.asarray(grid.partial + (grid.chunk,), jnp.int32)
    return first_chunk_order(grid, jax.random.fold_in(key, SUBSET_KEY))[None, :] < cuts[:, None]


def with_batch(sizes, batch: int, near: float = 0.1) -> tuple:
    """``sizes`` with the algorithm's ``batch`` among them, in place of any size within ``near`` of it."""
    return tuple(n for n in sizes if abs(n - batch) > near * batch) + (batch,)


def snap_sizes(requested, chunk: int) -> tuple:
    """The sample sizes a stream of ``chunk``-pair chunks can give: sizes below a
    chunk as asked, larger ones rounded to the nearest whole number of chunks.
    Duplicates after rounding are dropped."""
    out = []
    for n in sorted(int(x) for x in requested):
        m = n if n < chunk else max(1, round(n / chunk)) * chunk
        if m not in out:
            out.append(m)
    return tuple(out)


def stream(env, sampling: Sampling, grid: Grid, agent, knobs, key, normalize: bool = True, exact_value=None,
           heads=None):
    """One stream: estimates at every size of ``grid`` ([G, P]) and the sums of the
    whole stream (to merge streams into a larger-sample estimate).

    ``heads``: several advantage estimators on the very same pairs, a tuple of (advantages kind, value
    network parameters or None, normalize); the estimates are then [H, G, P] and the sums [H]-stacked. Each
    chunk is sampled once and costs one VJP per head plus one shared, not a rollout per head.

    Chunk c is sampled with key fold_in(key, c): a stream's first N pairs do not
    depend on how long it runs or on the other sizes asked for; nor does the random
    order sizes below ``grid.pool`` draw in ([`size_masks`][pgdiag.diagnostics.streaming.size_masks])."""
    single = heads is None
    if single:
        heads = ((sampling.advantages, agent.value, normalize),)
    normalized = jnp.asarray([h[2] for h in heads])
    advantage_heads = tuple((kind, value) for kind, value, _ in heads)
    size, count = ravel_pytree(agent.policy)[0].shape[0], len(heads)
    k_start, k_chunks = jax.random.split(key)
    carry = start_carry(env, sampling, agent, knobs, k_start)
    first_masks = size_masks(grid, key)                                   # [M, C]
    cuts = first_masks.shape[0]
    whole_index = jnp.asarray(grid.whole, jnp.int32).reshape(-1)

    def estimates(s: GradSums):  # [H]-stacked sums -> [H, P], each head normalized as asked
        return jax.vmap(lambda x, norm: jnp.where(norm, estimate(x, True), estimate(x, False)))(s, normalized)

    def body(state, c):
        carry, acc, partial, whole = state
        carry, chunk = sample_chunk(env, sampling, agent, knobs, carry, jax.random.fold_in(k_chunks, c), exact_value,
                                    advantage_heads)
        # Only the first chunk needs the masked sums of the sizes that end inside it.
        sums = jax.lax.cond(c == 0, lambda: chunk_sums(agent.policy, knobs, chunk, first_masks),
                            lambda: jax.tree.map(lambda x: jnp.repeat(x, cuts, axis=0),
                                                 chunk_sums(agent.policy, knobs, chunk, first_masks[-1:])))
        if grid.partial:
            partial = jnp.where(c == 0, jax.vmap(estimates)(jax.tree.map(lambda x: x[:-1], sums)), partial)
        acc = merge(acc, jax.tree.map(lambda x: x[-1], sums))
        whole = jnp.where((whole_index == c)[:, None, None], estimates(acc)[None], whole)
        return (carry, acc, partial, whole), None

    zeros = jax.tree.map(lambda x: jnp.broadcast_to(x, (count,) + x.shape), GradSums.zeros(size))
    init = (carry, zeros, jnp.zeros((len(grid.partial), count, size), jnp.float32),
            jnp.zeros((len(grid.whole), count, size), jnp.float32))
    (_, acc, partial, whole), _ = jax.lax.scan(body, init, jnp.arange(grid.num_chunks))
    out = jnp.swapaxes(jnp.concatenate([partial, whole]), 0, 1)          # [H, G, P]
    return (out[0], jax.tree.map(lambda x: x[0], acc)) if single else (out, acc)
