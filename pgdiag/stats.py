"""Statistics for the tables and the claims reports: confidence intervals with stated coverage, AAI / ACLI.

Every interval here names its unit of independence, and its coverage at the unit counts the package uses is
checked by simulation in ``tests/test_stats.py``:

* [`median_interval`][pgdiag.stats.median_interval] — the median unit and its distribution-free interval from order
  statistics (the sign test inverted): for continuous data its coverage is ``1 − 2·P(Bin(n, ½) ≤ k − 1)`` exactly,
  whatever the distribution; the claims' verdicts over agents use it.
* [`sign_test_p`][pgdiag.stats.sign_test_p], [`band_p`][pgdiag.stats.band_p] — unit: the agent; exact one-sided
  sign-test p-values (and their TOST for "inside a band") that invert
  [`median_interval`][pgdiag.stats.median_interval]: the interval of coverage c lies above t ⇔ p ≤ (1 − c)/2.
* [`median_difference_interval`][pgdiag.stats.median_difference_interval] — unit: the agent, two independent
  groups; median(A) − median(B) with an order-statistic interval guaranteed ≥ 1 − (1 − cov_A) − (1 − cov_B) for any
  distributions (failed agents at ±inf included): ≥ 0.95 from 7 v 7 agents; 0.875 at 5 v 5, 0.9375 at 6 v 6 (the
  bound it reports); simulated 0.977–1.000 on lognormal, exponential, t₂, Pareto and failed-seed agents at 5–16 per
  group. [`median_difference_p`][pgdiag.stats.median_difference_p] is its one-sided p-value (the same nested ranks:
  consistent with the interval).
* [`holm`][pgdiag.stats.holm] — Holm's step-down adjusted p-values over a report's claims (family-wise error ≤ α, any
  dependence).
* [`t_interval`][pgdiag.stats.t_interval] — a mean and its Student-t interval (exact for normal units); the curves
  over agents and over the K independent estimates of one subject use it. On skewed agents it runs short: lognormal
  (σ = 1) 0.82 at 5 agents, 0.83 at 8, 0.86 at 16, 0.91 at 80 —
  [`t_coverage_on_skewed`][pgdiag.stats.t_coverage_on_skewed] simulates the figure for a table to state beside its
  intervals.
* [`welch_interval`][pgdiag.stats.welch_interval] — a difference of two independent groups' means
  (Welch–Satterthwaite). Not distribution-free: 0.85–0.90 at 5 v 5 and 0.87–0.92 at 8 v 8 on lognormal, exponential
  and failed-seed agents; compare groups of agents with
  [`median_difference_interval`][pgdiag.stats.median_difference_interval] instead.
* [`pairwise_interval`][pgdiag.stats.pairwise_interval] — the mean pairwise cosine of K estimates: a U-statistic
  whose K(K−1)/2 pairs share estimates, so its unit is the estimate; jackknife over the K estimates, Student-t with
  K − 1 d.f.
* [`min_difference_interval`][pgdiag.stats.min_difference_interval] — the smallest of several differences of group
  means, from Welch intervals simultaneous by Bonferroni (IM's claim that the optimizations matter more than the
  step).

IM Table 2 and 3 report, per algorithm and task, the mean agent reward with a 95% confidence interval (the paper's
from a 1000-sample percentile bootstrap over agents, ref §4.2 item 10; here
[`t_interval`][pgdiag.stats.t_interval]: the percentile bootstrap covered 0.87 at the smoke scale's 8 agents even
for normal units) and two summary metrics (IM §5), each with [`index_interval`][pgdiag.stats.index_interval]:

* AAI (average algorithmic improvement) = max(|PPO − TRPO+|, |PPO-M − TRPO|),
  the largest effect of switching the step with the optimizations held fixed;
* ACLI (average code-level improvement) = max(|PPO − PPO-M|, |TRPO+ − TRPO|),
  the largest effect of adding the optimizations with the step held fixed.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist
from typing import Mapping, NamedTuple

import numpy as np


class Interval(NamedTuple):
    """An estimate with its confidence interval: ``n`` units, ``coverage`` the interval's own level (below the
    asked level only where no interval of the method reaches it at that ``n``, e.g. a median of 5 units; a
    guaranteed lower bound on it for median_difference_interval)."""

    estimate: float
    low: float
    high: float
    n: int
    coverage: float


_NONE = float("nan")


def _units(values, keep_inf: bool = False) -> np.ndarray:
    x = np.asarray(values, np.float64).ravel()
    return x[~np.isnan(x)] if keep_inf else x[np.isfinite(x)]


def _median_sorted(x: np.ndarray) -> float:
    with np.errstate(invalid="ignore"):
        med = float(np.median(x))
    return float(x[(x.size - 1) // 2]) if np.isnan(med) else med   # −inf and +inf in the middle: the lower one


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
    med = _median_sorted(x)
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


def _lower_tails(n: int, kmax: int) -> list[float]:
    """[P(Bin(n, ½) ≤ k − 1) for k = 1, …, kmax], summed in exact integers (median_coverage's sum)."""
    out, total, term, whole = [], 0, 1, 2 ** n
    for i in range(kmax):
        total += term                               # term = C(n, i)
        out.append(total / whole)
        term = term * (n - i) // (i + 1)
    return out


def sign_test_p(values, threshold: float, side: str = ">") -> float:
    """Exact one-sided sign-test p-value that the median of ``values`` (independent units; ±inf keep their
    rank, NaN dropped) lies on ``side`` (">" or "<") of ``threshold``: P(Bin(n, ½) ≥ s), s the units strictly
    on that side. A tie with the threshold stays in n but never counts for the side (valid for any
    distribution, atoms included: under the null P(unit on the side) ≤ ½). It inverts median_interval:
    its [x_(k), x_(n+1−k)] of coverage c = 1 − 2·P(Bin(n, ½) ≤ k − 1) lies wholly above t ⇔ s ≥ n + 1 − k ⇔
    sign_test_p(values, t, ">") ≤ (1 − c)/2 (the tail is strictly monotone in s). No units: 1.0."""
    if side not in (">", "<"):
        raise ValueError(f"side must be '>' or '<', not {side!r}")
    x = _units(values, keep_inf=True)
    s = int(np.sum(x > threshold if side == ">" else x < threshold))
    return 1.0 if s == 0 else _lower_tails(x.size, x.size - s + 1)[-1]   # P(Bin ≥ s) = P(Bin ≤ n − s)


def band_p(values, low: float, high: float) -> float:
    """The TOST p-value that the median of ``values`` lies inside (low, high): the larger of the two one-sided
    sign-test p-values (median > low, median < high). band_p ≤ α ⇔ the order-statistic interval of coverage
    1 − 2α (median_interval's ranks) lies inside the band."""
    return max(sign_test_p(values, low, ">"), sign_test_p(values, high, "<"))


@functools.lru_cache(maxsize=256)
def _difference_path(na: int, nb: int) -> tuple[tuple[int, int, float], ...]:
    """Rank pairs (ka, kb, e = tail_a(ka) + tail_b(kb)) for median_difference_*, fixed by (na, nb) alone and
    nested (each step raises ka or kb by one, so each step's bounds are tighter and e larger). Each step goes
    where the expected width it removes per unit of error it adds is largest, widths taken from normal scores
    of equal-spread groups (Blom: E x_(n+1−k) ≈ Φ⁻¹((n + 0.625 − k)/(n + 0.25))); ties go to a. At equal sizes
    (6–100) its pair at 0.90, 0.95 and 0.99 is the narrowest of all pairs with the guarantee; at unequal sizes
    (8–40 v up to 60, 0.95) 1.3% wider on average, at worst 21% (9 v 20: ranks (1, 5), not (2, 4))."""
    tails = [_lower_tails(n, max(1, n // 2)) for n in (na, nb)]
    half = [[NormalDist().inv_cdf((n + 0.625 - k) / (n + 0.25)) for k in range(1, len(t) + 1)]
            for n, t in zip((na, nb), tails)]
    k, path = [1, 1], [(1, 1, tails[0][0] + tails[1][0])]
    while True:
        rates = [((half[g][k[g] - 1] - half[g][k[g]]) / max(tails[g][k[g]] - tails[g][k[g] - 1], 1e-300), -g)
                 for g in (0, 1) if k[g] < len(tails[g])]
        if not rates:
            return tuple(path)
        k[-max(rates)[1]] += 1
        path.append((k[0], k[1], tails[0][k[0] - 1] + tails[1][k[1] - 1]))


def _bound(x: float, y: float, lower: bool) -> float:
    d = float(x) - float(y)       # inf − inf (a censored unit in each): the widest bound
    return (-math.inf if lower else math.inf) if math.isnan(d) else d


def median_difference_interval(a, b, level: float = 0.95) -> Interval:
    """median(A) − median(B), the difference of two independent groups' median units (agents; ±inf allowed: a
    failed agent keeps its rank; NaN dropped), with the distribution-free interval
    [a_(ka) − b_(nb+1−kb), a_(na+1−ka) − b_(kb)] from the two groups' order-statistic median intervals.
    Guarantee: the low end exceeds Δ = mA − mB only if a_(ka) > mA or b_(nb+1−kb) < mB (else
    a_(ka) − b_(nb+1−kb) ≤ mA − mB), each with probability ≤ tail(k) = P(Bin(n, ½) ≤ k − 1) for any
    distribution, atoms included; so each side fails with probability ≤ tail_a(ka) + tail_b(kb) (reached, less
    tail_a·tail_b, by the tests' adversarial pair) and the coverage is ≥ 1 − (1 − cov_a) − (1 − cov_b) (not
    reached: no pair found misses on both sides at that rate). (ka, kb) is the last pair of _difference_path
    whose guarantee reaches ``level`` — fixed before the data: choosing the narrowest pair on the data would
    void the guarantee; below the sizes where one does (5 v 5: 0.875, 6 v 6: 0.9375, 5 v 8: 0.930), [min, max]
    of each. ``coverage`` is the guaranteed bound, not an exact level; ``n`` the smaller group. Unlike Welch's
    interval (0.85–0.90 on lognormal, exponential and failed-seed agents at 5 v 5) it assumes no shape."""
    a, b = np.sort(_units(a, keep_inf=True)), np.sort(_units(b, keep_inf=True))
    n = int(min(a.size, b.size))
    if n == 0:
        return Interval(_NONE, _NONE, _NONE, 0, _NONE)
    estimate = _median_sorted(a) - _median_sorted(b)          # inf − inf: NaN, no estimate
    if n < 2:
        return Interval(estimate, _NONE, _NONE, n, _NONE)
    path = _difference_path(a.size, b.size)
    ka, kb, e = next((p for p in reversed(path) if 1.0 - 2.0 * p[2] >= level), path[0])
    return Interval(estimate, _bound(a[ka - 1], b[b.size - kb], True), _bound(a[a.size - ka], b[kb - 1], False),
                    n, max(0.0, 1.0 - 2.0 * e))


def median_difference_p(a, b, threshold: float, side: str = ">") -> float:
    """One-sided p-value that median(A) − median(B) lies on ``side`` (">" or "<") of ``threshold``: the
    smallest guaranteed error e = tail_a(ka) + tail_b(kb) over _difference_path's pairs whose one-sided bound
    excludes the threshold (1.0 when none does). The pairs are nested, so the set rejecting is the path's tail
    and P(p ≤ α) ≤ α under the null; a minimum over all pairs, not nested, could reach 2α. Consistent with
    median_difference_interval: its low end > t ⇔ median_difference_p(a, b, t, ">") ≤ (1 − coverage)/2."""
    if side not in (">", "<"):
        raise ValueError(f"side must be '>' or '<', not {side!r}")
    a, b = np.sort(_units(a, keep_inf=True)), np.sort(_units(b, keep_inf=True))
    if min(a.size, b.size) < 2:
        return 1.0
    for ka, kb, e in _difference_path(a.size, b.size):
        if (_bound(a[ka - 1], b[b.size - kb], True) > threshold if side == ">"
                else _bound(a[a.size - ka], b[kb - 1], False) < threshold):
            return e
    return 1.0


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
