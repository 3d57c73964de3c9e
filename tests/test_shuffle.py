"""The minibatch shuffle (pgdiag.algorithms.epochs.shuffle): the order a second method computes from the same random
bits, its number of rounds from the bound it keeps, and uniform permutations."""

import math
from itertools import permutations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from pgdiag.algorithms.epochs import minibatch_indices, shuffle, shuffle_rounds


def _stably_sorted(key, n):
    """The same permutation by another method: each round numpy's stable argsort of the current order on the
    round's keys (their bits above the position's), nothing packed."""
    index_bits, rounds = shuffle_rounds(n)
    order = np.arange(n)
    for k in jax.random.split(key, rounds):
        order = order[np.argsort(np.asarray(jax.random.bits(k, (n,), jnp.uint32)) >> index_bits, kind="stable")]
    return order


@pytest.mark.parametrize("n", [1, 2, 7, 64, 2048, 3000])
def test_each_round_is_a_stable_sort_on_fresh_keys(n):
    shuffled = jax.jit(shuffle, static_argnums=1)
    for seed in range(3):
        key = jax.random.PRNGKey(seed)
        np.testing.assert_array_equal(np.asarray(shuffled(key, n)), _stably_sorted(key, n))


def test_ties_go_by_position():
    """At n = 2^20 the keys keep 12 bits, so about 256 items share each key in every round: each round still
    keeps tied items in their order, as a stable sort does."""
    n = 2 ** 20
    key = jax.random.PRNGKey(5)
    got = np.asarray(jax.jit(shuffle, static_argnums=1)(key, n))
    np.testing.assert_array_equal(got, _stably_sorted(key, n))


def test_rounds_keep_jax_permutations_bound():
    """2^(key bits × rounds) ≥ n³ (jax.random.permutation's exponent 3), with the fewest rounds that do: worked out
    by hand for the batch sizes training uses."""
    assert shuffle_rounds(64) == (6, 1)          # 26 key bits ≥ 18
    assert shuffle_rounds(2048) == (11, 2)       # 21 bits: 21 < 33 ≤ 42
    assert shuffle_rounds(65536) == (16, 3)      # 16 bits: 32 < 48 ≤ 48
    for n in (3, 100, 2048, 10 ** 5, 2 ** 24):
        bits, rounds = shuffle_rounds(n)
        assert (32 - bits) * rounds >= 3 * math.log2(n) > (32 - bits) * (rounds - 1)


def test_every_permutation_is_equally_likely():
    """All 24 orders of 4 items over 48,000 draws: Pearson's χ² on 23 degrees of freedom below its 1 − 10⁻⁶
    quantile (a fixed seed; a uniform shuffle fails it with probability 10⁻⁶)."""
    draws = np.asarray(jax.jit(jax.vmap(lambda k: shuffle(k, 4)))(jax.random.split(jax.random.PRNGKey(11), 48_000)))
    index = {p: i for i, p in enumerate(permutations(range(4)))}
    counts = np.bincount([index[tuple(row)] for row in draws], minlength=24)
    assert stats.chisquare(counts).statistic < stats.chi2.isf(1e-6, 23)


def test_an_item_lands_anywhere_over_two_rounds():
    """Where items 0 and 2047 of 2048 land (two rounds), over 20,480 draws: χ² on 2047 degrees of freedom below
    its 1 − 10⁻⁶ quantile, and the two apart (χ² of independence on a 16 × 16 grid of their places, 225
    degrees)."""
    keys = jax.random.split(jax.random.PRNGKey(12), 20_480)
    draws = np.asarray(jax.jit(jax.vmap(lambda k: shuffle(k, 2048)))(keys))
    first, last = np.argmax(draws == 0, axis=1), np.argmax(draws == 2047, axis=1)
    for places in (first, last):
        assert stats.chisquare(np.bincount(places, minlength=2048)).statistic < stats.chi2.isf(1e-6, 2047)
    grid = np.zeros((16, 16))
    np.add.at(grid, (first // 128, last // 128), 1)
    assert stats.chi2_contingency(grid).statistic < stats.chi2.isf(1e-6, 225)


def test_minibatches_split_one_shuffle_in_order():
    key = jax.random.PRNGKey(4)
    np.testing.assert_array_equal(np.asarray(minibatch_indices(key, 64, 4)),
                                  np.asarray(shuffle(key, 64)).reshape(4, 16))
