"""Statistics for the tables and the claims reports: confidence intervals with stated coverage, AAI / ACLI.

Every interval here names its unit of independence, and its coverage at the unit counts the package uses is
checked by simulation in ``tests/test_stats.py``:

* :func:`median_interval` — the median unit and its distribution-free interval from order statistics (the
  sign test inverted): for continuous data its coverage is ``1 − 2·P(Bin(n, ½) ≤ k − 1)`` exactly, whatever
  the distribution; the claims' verdicts over agents use it.
* :func:`t_interval` — a mean and its Student-t interval (exact for normal units); the curves over agents and
  over the K independent estimates of one subject use it.
* :func:`welch_interval` — a difference of two independent groups' means (Welch–Satterthwaite).
* :func:`pairwise_interval` — the mean pairwise cosine of K estimates: a U-statistic whose K(K−1)/2 pairs share
  estimates, so its unit is the estimate; jackknife over the K estimates, Student-t with K − 1 d.f.
* :func:`min_difference_interval` — the smallest of several differences of group means, from Welch
  intervals simultaneous by Bonferroni (IM's claim that the optimizations matter more than the step).

IM Table 2 and 3 report, per algorithm and task, the mean agent reward with a 95% confidence interval (the
paper's from a 1000-sample percentile bootstrap over agents, ref §4.2 item 10; here :func:`t_interval`: the
percentile bootstrap covered 0.87 at the smoke scale's 8 agents even for normal units) and two summary
metrics (IM §5), each with :func:`index_interval`:

* AAI (average algorithmic improvement) = max(|PPO − TRPO+|, |PPO-M − TRPO|),
  the largest effect of switching the step with the optimizations held fixed;
* ACLI (average code-level improvement) = max(|PPO − PPO-M|, |TRPO+ − TRPO|),
  the largest effect of adding the optimizations with the step held fixed.
"""

from __future__ import annotations

import math
from typing import Mapping, NamedTuple

import numpy as np


class Interval(NamedTuple):
    """An estimate with its confidence interval: ``n`` units, ``coverage`` the interval's own level (below the
    asked level only where no interval of the method reaches it at that ``n``, e.g. a median of 5 units)."""

    estimate: float
    low: float
    high: float
    n: int
    coverage: float


_NONE = float("nan")


def _units(values, keep_inf: bool = False) -> np.ndarray:
    x = np.asarray(values, np.float64).ravel()
    return x[~np.isnan(x)] if keep_inf else x[np.isfinite(x)]


def median_coverage(n: int, k: int) -> float:
    """Coverage of [x_(k), x_(n+1−k)] (order statistics of n continuous units) for the median:
    1 − 2·P(Bin(n, ½) ≤ k − 1), in exact integers (2^n overflows a float from n = 1,024)."""
    total, term = 0, 1
    for i in range(k):   # term = C(n, i)
        total += term
        term = term * (n - i) // (i + 1)
    return 1.0 - 2.0 * (total / 2 ** n)


def median_interval(values, level: float = 0.95) -> Interval:
    """The median of ``values`` (one per independent unit; ±inf allowed: a censored unit keeps its rank)
    and the narrowest order-statistic interval [x_(k), x_(n+1−k)] whose exact coverage is ≥ ``level``;
    below that n (≤ 5 at 95%) the widest, [min, max], with its coverage (5 units: 1 − 2/32 = 0.9375)."""
    x = np.sort(_units(values, keep_inf=True))
    n = x.size
    if n == 0:
        return Interval(_NONE, _NONE, _NONE, 0, _NONE)
    with np.errstate(invalid="ignore"):
        med = float(np.median(x))
    if np.isnan(med):  # −inf and +inf in the middle: the lower middle unit
        med = float(x[(n - 1) // 2])
    if n == 1:
        return Interval(med, _NONE, _NONE, 1, _NONE)
    # k grows while [x_(k+1), x_(n−k)] keeps the level; the binomial tail P(Bin(n, ½) ≤ k − 1) kept in
    # integers as it grows (median_coverage's sum, one term a step)
    k, tail, term, whole = 1, 1, n, 2 ** n          # tail = C(n, 0); term = C(n, 1)
    while k + 1 <= n // 2 and 1.0 - 2.0 * ((tail + term) / whole) >= level:
        tail += term
        term = term * (n - k) // (k + 1)            # C(n, k + 1)
        k += 1
    return Interval(med, float(x[k - 1]), float(x[n - k]), n, 1.0 - 2.0 * (tail / whole))


def t_interval(values, level: float = 0.95) -> Interval:
    """The mean of ``values`` (independent units) and its Student-t interval (n − 1 d.f.)."""
    from scipy import stats

    x = _units(values)
    n = x.size
    if n < 2:
        return Interval(float(x.mean()) if n else _NONE, _NONE, _NONE, n, _NONE)
    mean, se = float(x.mean()), float(x.std(ddof=1) / math.sqrt(n))
    q = float(stats.t.ppf(0.5 + level / 2.0, n - 1))
    return Interval(mean, mean - q * se, mean + q * se, n, level)


def welch_interval(a, b, level: float = 0.95) -> Interval:
    """mean(a) − mean(b) of two independent groups with Welch's t interval (Welch–Satterthwaite d.f.);
    ``n`` is the smaller group's size."""
    from scipy import stats

    a, b = _units(a), _units(b)
    if a.size < 2 or b.size < 2:
        d = float(a.mean() - b.mean()) if a.size and b.size else _NONE
        return Interval(d, _NONE, _NONE, int(min(a.size, b.size)), _NONE)
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    d, se = float(a.mean() - b.mean()), math.sqrt(va + vb)
    if se == 0.0:
        return Interval(d, d, d, int(min(a.size, b.size)), level)
    df = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    q = float(stats.t.ppf(0.5 + level / 2.0, df))
    return Interval(d, d - q * se, d + q * se, int(min(a.size, b.size)), level)


def pairwise_interval(i, j, cosine, level: float = 0.95) -> Interval:
    """The mean over pairs (i < j) of K estimates' pairwise cosines, with a jackknife-over-estimates
    Student-t interval (K − 1 d.f.): leaving estimate k out drops the K − 1 pairs that contain it. The pairs
    are not independent (each estimate is in K − 1 of them), so they are never resampled themselves."""
    from scipy import stats

    i, j, c = (np.asarray(v).ravel() for v in (i, j, cosine))
    ok = np.isfinite(c.astype(np.float64))
    i, j, c = i[ok].astype(int), j[ok].astype(int), c[ok].astype(np.float64)
    ids = np.unique(np.concatenate([i, j]))
    K = ids.size
    if c.size == 0:
        return Interval(_NONE, _NONE, _NONE, 0, _NONE)
    mean = float(c.mean())
    if K < 3:
        return Interval(mean, _NONE, _NONE, K, _NONE)
    total, count = c.sum(), c.size
    loo = np.array([(total - c[(i == k) | (j == k)].sum()) / (count - ((i == k) | (j == k)).sum()) for k in ids])
    se = math.sqrt((K - 1) / K * float(np.sum((loo - loo.mean()) ** 2)))
    q = float(stats.t.ppf(0.5 + level / 2.0, K - 1))
    return Interval(mean, mean - q * se, mean + q * se, K, level)


#: the two differences of group means of which each index is the larger absolute value (IM §5)
INDEX_DIFFERENCES = {"aai": (("ppo", "trpo+"), ("ppo-m", "trpo")), "acli": (("ppo", "ppo-m"), ("trpo+", "trpo"))}


def _index(means: Mapping[str, float], index: str) -> float:
    return max(abs(means[a] - means[b]) for a, b in INDEX_DIFFERENCES[index])


def aai(means: Mapping[str, float]) -> float:
    """Average algorithmic improvement, IM §5: max(|PPO − TRPO+|, |PPO-M − TRPO|)."""
    return _index(means, "aai")


def acli(means: Mapping[str, float]) -> float:
    """Average code-level improvement, IM §5: max(|PPO − PPO-M|, |TRPO+ − TRPO|)."""
    return _index(means, "acli")


def index_interval(scores: Mapping[str, "np.ndarray"], index: str, level: float = 0.95) -> Interval:
    """AAI or ACLI (``index``: "aai", "acli"), max(|d₁|, |d₂|) of two differences of the algorithms' mean
    scores, with an interval from Welch intervals of d₁ and d₂ simultaneous by Bonferroni (each at
    1 − (1 − level)/2): when both cover, |dᵢ| lies in [its interval's distance from 0, its farthest end], so
    the max lies in [the larger of those lows, the larger of those highs] — coverage ≥ ``level`` at any
    number of agents, where a bootstrap of the max (biased upward when the differences are small beside
    their noise) covered 0.45 at 8 agents. ``n`` is the smallest group."""
    each = 1.0 - (1.0 - level) / 2.0
    ivs = [welch_interval(scores[a], scores[b], each) for a, b in INDEX_DIFFERENCES[index]]
    value = max(abs(iv.estimate) for iv in ivs)
    if not all(np.isfinite(iv.low) for iv in ivs):
        return Interval(value, _NONE, _NONE, min(iv.n for iv in ivs), _NONE)
    lows = [0.0 if iv.low <= 0.0 <= iv.high else min(abs(iv.low), abs(iv.high)) for iv in ivs]
    highs = [max(abs(iv.low), abs(iv.high)) for iv in ivs]
    return Interval(value, max(lows), max(highs), min(iv.n for iv in ivs), level)


def min_difference_interval(scores: Mapping[str, "np.ndarray"], differences, level: float = 0.95) -> Interval:
    """min over ``differences`` ((a, b) pairs of groups) of mean(a) − mean(b), with an interval from Welch
    intervals of the differences that are simultaneous at ``level`` (Bonferroni: each at
    1 − (1 − level)/m): when all m cover, min(d) lies in [min of their lows, min of their highs]. A lower
    bound above 0 is the intersection–union test that every difference is positive. ``n`` is the smallest
    group."""
    each = 1.0 - (1.0 - level) / len(differences)
    ivs = [welch_interval(scores[a], scores[b], each) for a, b in differences]
    return Interval(min(iv.estimate for iv in ivs), min(iv.low for iv in ivs), min(iv.high for iv in ivs),
                    min(iv.n for iv in ivs), level if all(np.isfinite(iv.low) for iv in ivs) else _NONE)


#: IM §5's claim that the code-level optimizations matter more than the step, as main effects of the 2 × 2
#: design (step: PPO / TRPO; optimizations: with / without): with the optimizations' effect
#: c_opt = (PPO − PPO-M + TRPO+ − TRPO)/2 > 0 and the step's c_step = (PPO − TRPO+ + PPO-M − TRPO)/2,
#: c_opt > |c_step| ⇔ c_opt − c_step = TRPO+ − PPO-M > 0 and c_opt + c_step = PPO − TRPO > 0.
OPTIMIZATIONS_OVER_STEP = (("trpo+", "ppo-m"), ("ppo", "trpo"))


#: IM Table 2 and 3 as published (ref §5): mean [95% CI].
PUBLISHED = {
    "walker2d": {"ppo": (3292, 3157, 3426), "ppo-m": (2735, 2602, 2866), "trpo": (2791, 2709, 2873),
                 "trpo+": (3050, 2976, 3126), "ppo-noclip": (2867, 2701, 3024), "aai": 242, "acli": 557},
    "hopper": {"ppo": (2513, 2391, 2632), "ppo-m": (2142, 2008, 2279), "trpo": (2043, 1948, 2136),
               "trpo+": (2466, 2381, 2549), "ppo-noclip": (2371, 2316, 2424), "aai": 99, "acli": 421},
    "humanoid": {"ppo": (806, 785, 827), "ppo-m": (674, 656, 695), "trpo": (586, 576, 596),
                 "trpo+": (1030, 979, 1083), "ppo-noclip": (831, 798, 869), "aai": 224, "acli": 444},
}
