"""Holm's step-down; Student-t and Welch intervals; the mean pairwise cosine's jackknife interval; IM's AAI and
ACLI with their intervals and the published tables.

Unit of independence, estimand and simulated coverage of each: [`pgdiag.stats`][pgdiag.stats]."""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from pgdiag.stats.medians import Interval, _NONE, _units


def holm(pvalues, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Holm's step-down (strong control of the family-wise error at ``alpha``, any dependence): the i-th
    smallest of m p-values adjusted to max_{j ≤ i} min(1, (m − j + 1)·p_(j)) (monotone in p), rejected where
    ≤ alpha. NaN entries (no test) are not counted in m, stay NaN and are never rejected."""
    p = np.asarray(pvalues, np.float64)
    flat, adjusted = p.ravel(), np.full(p.size, _NONE)
    tested = np.flatnonzero(~np.isnan(flat))
    order = tested[np.argsort(flat[tested], kind="stable")]
    m = order.size
    adjusted[order] = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * flat[order]))
    adjusted = adjusted.reshape(p.shape)
    return adjusted, np.where(np.isnan(adjusted), False, adjusted <= alpha)


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


def t_coverage_on_skewed(n: int, level: float = 0.95, sigma: float = 1.0, reps: int = 20_000,
                         seed: int = 0) -> float:
    """The simulated coverage of t_interval's interval of the mean at ``n`` units when the units are
    lognormal(0, ``sigma``) (mean exp(σ²/2)), as agents' scores often are: the t interval is exact only for
    normal units and runs short on skewed ones at few agents, so a table states this beside its intervals.
    Deterministic (fixed ``seed``); ``reps`` replicates, binomial SE ≤ 0.5/√reps (0.0035 at the default)."""
    from scipy import stats

    if n < 2:
        return _NONE
    x = np.random.default_rng(seed).lognormal(0.0, sigma, size=(reps, n))
    half = float(stats.t.ppf(0.5 + level / 2.0, n - 1)) * x.std(axis=1, ddof=1) / math.sqrt(n)
    return float(np.mean(np.abs(x.mean(axis=1) - math.exp(sigma ** 2 / 2.0)) <= half))

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
