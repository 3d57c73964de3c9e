"""Bootstrap confidence intervals and the AAI / ACLI metrics."""

import numpy as np
import pytest

from pg_diag.stats import PUBLISHED, aai, acli, bootstrap_mean_ci, index_ci


def test_bootstrap_ci_covers_the_true_mean_at_about_the_nominal_rate():
    """Synthetic agents: 60 draws from a skewed distribution with known mean 1
    (exponential). Over 400 repetitions a 95% percentile interval should cover the
    true mean ~95% of the time (percentile intervals run a little short on skewed
    data with n = 60, so allow 0.90-0.98). The count of hits is binomial: at a true
    coverage between 0.93 and 0.95 its SD over 400 trials is ≤ 0.013, so the band is
    ≥ 2.3 SD from either end — a false-failure rate below 2% for an unlucky draw;
    the seeds are fixed (numpy's generator is the same on every CPU), so the outcome
    is the same everywhere."""
    rng = np.random.default_rng(1)
    hits = 0
    trials = 400
    for t in range(trials):
        sample = rng.exponential(1.0, size=60)
        mean, low, high = bootstrap_mean_ci(sample, resamples=1000, seed=t)
        assert low < mean < high
        hits += low <= 1.0 <= high
    assert 0.90 <= hits / trials <= 0.98


def test_bootstrap_ci_width_matches_the_normal_approximation():
    """On 400 normal draws the percentile interval's width is 2 · 1.96 · SE to within the bootstrap's own
    Monte-Carlo error: with 4,000 resamples each 2.5% quantile is off by about 0.03 SE (SD of a quantile
    estimate, sqrt(q(1 − q)/B)/φ(1.96) ≈ 0.04 SE), far inside the 10% allowed."""
    rng = np.random.default_rng(2)
    x = rng.normal(10.0, 2.0, size=400)
    mean, low, high = bootstrap_mean_ci(x, resamples=4000)
    se = x.std(ddof=1) / np.sqrt(x.size)
    assert mean == pytest.approx(x.mean())
    assert high - low == pytest.approx(2 * 1.96 * se, rel=0.1)


def test_bootstrap_edge_cases():
    assert np.isnan(bootstrap_mean_ci([])[0])
    m, lo, hi = bootstrap_mean_ci([3.0, np.nan])
    assert m == 3.0 and np.isnan(lo) and np.isnan(hi)
    assert bootstrap_mean_ci([1.0, 2.0, 3.0], seed=4) == bootstrap_mean_ci([1.0, 2.0, 3.0], seed=4)


@pytest.mark.parametrize("task, expected_aai, expected_acli", [
    ("walker2d", 242, 557),
    ("humanoid", 224, 444),
    # published 421; from the published (rounded) means: max(|2513−2142|, |2466−2043|) = 423
    ("hopper", 99, 423),
])
def test_aai_acli_reproduce_the_published_table_from_its_means(task, expected_aai, expected_acli):
    means = {k: v[0] for k, v in PUBLISHED[task].items() if isinstance(v, tuple)}
    assert aai(means) == expected_aai
    assert acli(means) == expected_acli
    assert abs(acli(means) - PUBLISHED[task]["acli"]) <= 2 and aai(means) == PUBLISHED[task]["aai"]


def test_aai_and_acli_intervals_from_resampled_agents():
    rng = np.random.default_rng(7)
    # AAI = |PPO − TRPO+| here (PPO-M and TRPO are equal constants): its bootstrap interval is that of a
    # difference of two means, whose 95% half-width is 1.96·√(s₁²/n₁ + s₂²/n₂) to within the bootstrap's
    # own error (a few % at 40 agents and 1000 resamples; the data and resamples are fixed by their seeds)
    scores = {"ppo": rng.normal(2500, 100, 40), "trpo+": rng.normal(2000, 100, 40),
              "ppo-m": np.full(40, 1000.0), "trpo": np.full(40, 1000.0)}
    value, low, high = index_ci(scores, aai)
    assert value == abs(scores["ppo"].mean() - scores["trpo+"].mean())
    half = 1.96 * np.sqrt(scores["ppo"].var(ddof=1) / 40 + scores["trpo+"].var(ddof=1) / 40)
    assert abs((high - low) / 2 - half) < 0.2 * half and low < value < high
    # agents that all score the same leave nothing to resample: the interval is the value
    flat = {k: np.full(5, m) for k, m in (("ppo", 2500.0), ("ppo-m", 2100.0), ("trpo", 2000.0), ("trpo+", 2450.0))}
    assert index_ci(flat, acli) == (450.0, 450.0, 450.0)
    # one agent: no interval
    value, low, high = index_ci({**flat, "ppo": np.array([2500.0])}, acli)
    assert value == 450.0 and np.isnan(low) and np.isnan(high)
