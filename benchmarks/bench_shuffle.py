"""The minibatch shuffle against ``jax.random.permutation`` and against the sorts they are made of.

An update's epochs draw one permutation of the batch per epoch and network (PPO's preset: 2 × 10 an iteration).
``jax.random.permutation`` does each round of its shuffle as a sort of a key-value pair; pgdiag's shuffle
(``pgdiag.algorithms.epochs.shuffle``) packs the position into the key's low bits and sorts one uint32 operand.
For ``--agents`` agents vmapped, a batch of ``--batch`` pairs: each way's time per permutation, beside one sort of
the bits alone (the floor of a round), one key-value sort, and the random bits themselves. Best of ``--repeats``
calls, each of 20 permutations in one compiled loop (an iteration's worth).

    python benchmarks/bench_shuffle.py [--agents 7] [--batch 2048]
"""

from __future__ import annotations

import argparse
import math

import jax
import jax.numpy as jnp
from bench_throughput import timed

from pgdiag.algorithms.epochs import shuffle, shuffle_rounds

DRAWS = 20


def looped(one):
    """``DRAWS`` calls of ``one(key)`` for every agent, each on its own key, summed so that none is dropped."""

    def run(keys):
        def body(total, k):
            return total + jnp.sum(jax.vmap(one)(k).astype(jnp.uint32)), None

        return jax.lax.scan(body, jnp.uint32(0), jax.vmap(lambda k: jax.random.split(k, DRAWS), out_axes=1)(keys))[0]

    return jax.jit(run)


def rows(agents: int, batch: int):
    bits = lambda k: jax.random.bits(k, (batch,), jnp.uint32)  # noqa: E731
    position = jnp.arange(batch, dtype=jnp.uint32)
    ways = {
        "jax.random.permutation (a key-value sort a round)": lambda k: jax.random.permutation(k, batch),
        "pgdiag's shuffle (one uint32 sort a round)": lambda k: shuffle(k, batch),
        "one sort of a uint32 key-value pair (a round of jax's)": lambda k: jax.lax.sort_key_val(bits(k), position)[1],
        "one sort of a uint32 alone (a round of pgdiag's)": lambda k: jax.lax.sort(bits(k)),
        "the random bits alone": bits,
    }
    keys = jax.random.split(jax.random.PRNGKey(0), agents)
    return [(name, timed(looped(one), keys, repeats=7) / DRAWS) for name, one in ways.items()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=7)
    parser.add_argument("--batch", type=int, default=2048)
    args = parser.parse_args()
    measured = rows(args.agents, args.batch)
    index_bits, rounds = shuffle_rounds(args.batch)
    print(f"{args.agents} agents × a batch of {args.batch:,}; pgdiag's shuffle: {rounds} rounds of "
          f"{32 - index_bits}-bit keys; jax.random.permutation's: "
          f"{math.ceil(3 * math.log(max(1, args.batch)) / math.log(2 ** 32 - 1))} rounds of 32-bit keys\n")
    base = measured[0][1]
    print("| way | ms per permutation (all agents) | against jax.random.permutation |\n|---|---|---|")
    for name, s in measured:
        print(f"| {name} | {s * 1e3:.3f} | {s / base:.2f} |")


if __name__ == "__main__":
    main()
