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
  consistent with the interval). Guaranteed but weak: up to 9 v 9 it concludes only on complete separation
  (2-SD shift of normal agents, 0.95 interval excluding 0: 0.38 / 0.22 / 0.17 at 5 v 5 / 7 v 7 / 8 v 8);
  group comparisons use the shift below instead.
* [`shift_interval`][pgdiag.stats.shift_interval], [`shift_p`][pgdiag.stats.shift_p],
  [`relative_effect`][pgdiag.stats.relative_effect] — unit: the agent, two independent groups (failed agents at
  −inf keep their rank); estimand θ = the median of A − B for independent agents A, B of the two groups (the
  population Hodges–Lehmann shift: the difference of medians, and of means, under a shift), tested through the
  relative effect p(t) = P(A − t > B) + ½·P(A − t = B) (θ > t ⇔ p(t) > ½, continuous case) by the studentized
  permutation Brunner–Munzel test (exact permutation up to 20,000 relabellings, else a fixed-seed Monte Carlo),
  and the Hodges–Lehmann estimate with the interval inverting it. Simulated: one-sided size 0.048–0.050 for
  identical populations and ≈ 0.055 at 7 v 7 (0.053 at 8 v 8) for normal SDs 1 v 3 at α = 0.05; coverage
  0.942–0.963 at 0.95 over 5–16 agents per group on normal, lognormal, unequal-σ lognormal and failed-seed
  agents; the 0.95 interval excludes 0 at a 2-SD shift of normal agents in 0.71 / 0.91 / 0.95 at 5 v 5 / 7 v 7 /
  8 v 8 (tests/test_stats_groups.py, benchmarks/groups_power.py).
* [`mean_difference_interval`][pgdiag.stats.mean_difference_interval],
  [`mean_difference_p`][pgdiag.stats.mean_difference_p] — unit: the agent, two independent groups; estimand
  μ_A − μ_B, the difference of the groups' MEAN agents (IM's tables and §5), tested by Welch's t with its
  permutation distribution (Janssen 1997; shift_p's relabellings: exact up to 20,000, else a fixed-seed Monte
  Carlo) and the interval inverting it (bisection to 1e-6 standard errors). Failed seeds (non-finite agents) are
  left out of the means. Exact where the groups differ by a shift (simulated 0.947–0.957 at 0.95 over 5–16 agents
  per group on normal, lognormal and failed-seed shifts); on different shapes it runs short as Welch's interval
  does: lognormal σ 1 v 0.5 0.85–0.87, a 20%-collapsed group against a normal one 0.88–0.93, normal SDs 1 v 3
  0.93–0.95 (tests/test_im_means.py).
* [`shift_power_effect`][pgdiag.stats.shift_power_effect], [`shift_power_sd`][pgdiag.stats.shift_power_sd],
  [`smallest_shift_p`][pgdiag.stats.smallest_shift_p] — what an inconclusive group comparison could have seen:
  the relative effect P(A > B), and the shift of normal agents in SDs, that shift_p detects with probability 0.8
  (simulated 0.80 ± 0.02 on normal agents), and the smallest p it can give at the group sizes.
* [`holm`][pgdiag.stats.holm] — Holm's step-down adjusted p-values over a report's claims (family-wise error ≤ α, any
  dependence).
* [`t_interval`][pgdiag.stats.t_interval] — a mean and its Student-t interval (exact for normal units); the curves
  over agents and over the K independent estimates of one subject use it. On skewed agents it runs short: lognormal
  (σ = 1) 0.82 at 5 agents, 0.83 at 8, 0.86 at 16, 0.91 at 80 —
  [`t_coverage_on_skewed`][pgdiag.stats.t_coverage_on_skewed] simulates the figure for a table to state beside its
  intervals.
* [`welch_interval`][pgdiag.stats.welch_interval] — a difference of two independent groups' means
  (Welch–Satterthwaite). Not distribution-free: 0.85–0.90 at 5 v 5 and 0.87–0.92 at 8 v 8 on lognormal, exponential
  and failed-seed agents; compare groups of agents with [`shift_interval`][pgdiag.stats.shift_interval] instead.
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
import itertools
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


def sign_test_power(n: int, q: float, alpha: float) -> float:
    """The probability that the one-sided sign test (``sign_test_p``) of ``n`` agents reaches p ≤ ``alpha`` when
    each agent lies on the tested side with probability ``q``: P(Bin(n, q) ≥ s*), s* the fewest agents on the side
    whose p is ≤ alpha (exact; 0 where no count reaches alpha)."""
    s_star = next((s for s in range(1, n + 1) if _lower_tails(n, n - s + 1)[-1] <= alpha), None)
    if s_star is None:
        return 0.0
    return float(sum(math.comb(n, s) * q ** s * (1 - q) ** (n - s) for s in range(s_star, n + 1)))


def sign_test_detectable(n: int, alpha: float, power: float = 0.8) -> float:
    """The smallest share q of agents on the tested side that the sign test of ``n`` agents detects (p ≤ ``alpha``)
    with probability ``power``: what an inconclusive one-group finding could have seen (1.0 bounds it where even
    unanimity does not reach alpha: NaN then). Bisection on sign_test_power, increasing in q."""
    if sign_test_power(n, 1.0, alpha) < power:
        return _NONE
    lo, hi = 0.5, 1.0
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if sign_test_power(n, mid, alpha) < power else (lo, mid)
    return hi



def mean_power_sd(na: int, nb: int, alpha: float, power: float = 0.8) -> float:
    """The difference of mean agents, in units of the agents' common SD, that the one-sided test of two groups'
    means (``mean_difference_p``) detects with probability ``power`` at level ``alpha`` between normal agents: the
    Student t test's, which the studentized permutation test approaches (noncentral t with na + nb − 2 degrees of
    freedom, its noncentrality δ / √(1/na + 1/nb); bisection on δ)."""
    from scipy import stats as sps

    df, scale = na + nb - 2, math.sqrt(1.0 / na + 1.0 / nb)
    if df < 1:
        return math.inf
    crit = float(sps.t.ppf(1.0 - alpha, df))
    lo, hi = 0.0, 50.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if float(sps.nct.sf(crit, df, mid / scale)) < power else (lo, mid)
    return hi

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


# ---- two groups of agents: the studentized permutation Brunner–Munzel test and its inverted interval ----------
#
# Every quantity below is computed from doubled placements, which are integers: an a-agent's placement among b
# is #{b < a − t} + ½·#{b = a − t}, so 2·placement = #{b < a − t} + #{b ≤ a − t}. From their sums (s) and sums
# of squares (q) the statistic is exact up to one division and one square root, so a relabelling and the
# observed labelling with the same integers get the same float.

#: the permutation distribution enumerates all C(m + n, m) relabellings up to this count; above it, a Monte
#: Carlo of _SHIFT_DRAWS relabellings from a fixed seed (the same data always get the same p)
_SHIFT_EXACT_MAX = 20_000
_SHIFT_DRAWS = 20_000
_SHIFT_SEED = 20070101            # Neubert & Brunner (2007)


def _shift_w(sa, qa, sb, qb, m: int, n: int) -> np.ndarray:
    """The Brunner–Munzel W = (p̂ − ½)/SE from the doubled placements' sums (sa, sb) and sums of squares
    (qa, qb) of m a-agents among n b-agents and back (integer arrays of any common shape). With
    p̂ = sa/(2mn), Va = m·qa − sa² = 4m(m − 1)·var(Pa) and likewise Vb:
    SE² = var(Pa)/(m n²) + var(Pb)/(n m²) = (Va/(m − 1) + Vb/(n − 1))/(4m²n²), so
    W = (sa − mn)/√(Va/(m − 1) + Vb/(n − 1)). A zero variance estimate (complete separation, all ties):
    ±inf with the sign of p̂ − ½, 0 when p̂ = ½."""
    sa, qa, sb, qb = (np.asarray(v, np.int64) for v in (sa, qa, sb, qb))
    d = sa - m * n
    x = (m * qa - sa * sa) / (m - 1) + (n * qb - sb * sb) / (n - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = d / np.sqrt(x)
    return np.where(x > 0, w, np.sign(d) * np.where(d == 0, 0.0, np.inf))


def _placements(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Doubled placements at each threshold in ``t`` (shape (G,)): of a − t among b (G, m) and of b among
    a − t (G, n); ``a``, ``b`` sorted, ``t`` finite. A failed agent (−inf) in each group ties (½ each way).
    Both come from the same float comparisons of a_i − t with b_j (b + t against a could round the other way):
    with left_i = #{b < a_i − t} and right_i = #{b ≤ a_i − t}, a_i − t < b_j ⇔ right_i ≤ #{b < b_j} and
    a_i − t ≤ b_j ⇔ left_i < #{b ≤ b_j}, counted from per-threshold histograms of left and right."""
    G, n = t.size, b.size
    shifted = a[None, :] - t[:, None]
    left, right = np.searchsorted(b, shifted, "left"), np.searchsorted(b, shifted, "right")
    rows = (n + 1) * np.arange(G)[:, None]

    def at_most(k):                                        # (G, n + 1): #{i : k_i ≤ c} for c = 0 … n
        return np.cumsum(np.bincount((k + rows).ravel(), minlength=G * (n + 1)).reshape(G, n + 1), axis=1)

    pb = at_most(right)[:, np.searchsorted(b, b, "left")] + at_most(left)[:, np.searchsorted(b, b, "right") - 1]
    return left + right, pb


@functools.lru_cache(maxsize=16)
def _relabellings(N: int, m: int, exact: bool) -> np.ndarray:
    """The pooled positions (0 … N − 1, in sorted order) given to group a: all C(N, m) subsets when
    ``exact``, else _SHIFT_DRAWS uniform subsets from the fixed seed. (R, m), read-only."""
    if exact:
        idx = np.array(list(itertools.combinations(range(N), m)), np.int64).reshape(-1, m)
    else:
        keys = np.random.default_rng(_SHIFT_SEED).random((_SHIFT_DRAWS, N))
        idx = np.argsort(keys, axis=1)[:, :m]
    idx.setflags(write=False)
    return idx


@functools.lru_cache(maxsize=128)
def _null_w(m: int, n: int, blocks: tuple[int, ...], exact: bool) -> np.ndarray:
    """The sorted W of every relabelling (exact) or of the fixed Monte Carlo relabellings, for a pooled sample
    whose sorted values fall in tie blocks of sizes ``blocks`` (ascending): W depends on the data only through
    this and on which positions go to a. Per relabelling and block, C agents of a and D = E − C of b; an
    a-agent's doubled placement is 2·(b below its block) + D, a b-agent's 2·(a below) + C."""
    E = np.asarray(blocks, np.int64)
    K = E.size
    idx = _relabellings(m + n, m, exact)
    R = idx.shape[0]
    code = np.repeat(np.arange(K), E)[idx] + K * np.arange(R)[:, None]
    C = np.bincount(code.ravel(), minlength=R * K).reshape(R, K)
    D = E[None, :] - C
    pa = 2 * (np.cumsum(D, axis=1) - D) + D
    pb = 2 * (np.cumsum(C, axis=1) - C) + C
    w = np.sort(_shift_w((C * pa).sum(1), (C * pa * pa).sum(1), (D * pb).sum(1), (D * pb * pb).sum(1), m, n))
    w.setflags(write=False)
    return w


def _shift_exact(m: int, n: int) -> bool:
    return math.comb(m + n, m) <= _SHIFT_EXACT_MAX


def _shift_ps(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p for ">", p for "<") of the studentized permutation Brunner–Munzel test at each finite threshold in
    ``t``; ``a``, ``b`` sorted, sizes ≥ 2. Thresholds are grouped by their pooled tie blocks (one group for
    continuous data away from the pairwise differences) and each group's null W is looked up once."""
    m, n = a.size, b.size
    step = max(1, 2_000_000 // (m + n) // max(m, n))      # thresholds per batch: bounded memory
    if t.size > step:
        parts = [_shift_ps(a, b, t[i:i + step]) for i in range(0, t.size, step)]
        return np.concatenate([u for u, _ in parts]), np.concatenate([d for _, d in parts])
    exact = _shift_exact(m, n)
    pa, pb = _placements(a, b, t)
    w = _shift_w(pa.sum(1), (pa * pa).sum(1), pb.sum(1), (pb * pb).sum(1), m, n)
    pooled = np.sort(np.concatenate([a[None, :] - t[:, None], np.broadcast_to(b, (t.size, n))], axis=1), axis=1)
    same = pooled[:, 1:] == pooled[:, :-1]
    shapes, which = np.unique(same, axis=0, return_inverse=True)
    which = np.asarray(which).ravel()
    up, down = np.empty(t.size), np.empty(t.size)
    for s, shape in enumerate(shapes):
        rows = np.flatnonzero(which == s)
        blocks = tuple(np.diff(np.flatnonzero(np.r_[True, ~shape, True])).tolist())
        up[rows], down[rows] = _tail_ps(w[rows], _null_w(m, n, blocks, exact), exact)
    return up, down


def _tail_ps(w: np.ndarray, null: np.ndarray, exact: bool) -> tuple[np.ndarray, np.ndarray]:
    """(share of W* ≥ w, share of W* ≤ w) over the sorted null ``null``: exact, or (1 + #)/(1 + R) for the
    Monte Carlo (the observed labelling counted). Ties up to rounding: W's of different integers that are
    equal in exact arithmetic may differ in the last bits, so W* within 1e-9 (relative) of w counts as a tie."""
    tol = np.where(np.isfinite(w), 1e-9 * np.maximum(1.0, np.abs(w)), 0.0)
    ge = null.size - np.searchsorted(null, w - tol, "left")
    le = np.searchsorted(null, w + tol, "right")
    return (ge / null.size, le / null.size) if exact else ((1 + ge) / (1 + null.size), (1 + le) / (1 + null.size))


def _shift_statistic(a, b, threshold: float = 0.0) -> float:
    """shift_p's observed W of (a − threshold, b) (scipy.stats.brunnermunzel(b, a − threshold)'s statistic
    where the variance estimate is not 0)."""
    a, b = np.sort(_units(a, keep_inf=True)), np.sort(_units(b, keep_inf=True))
    pa, pb = _placements(a, b, np.array([_finite_threshold(threshold)]))
    return float(_shift_w(pa.sum(1), (pa * pa).sum(1), pb.sum(1), (pb * pb).sum(1), a.size, b.size)[0])


def _finite_threshold(threshold: float) -> float:
    t = float(threshold)
    if not math.isfinite(t):
        raise ValueError(f"threshold must be finite, not {threshold!r}")
    return t


def relative_effect(a, b, threshold: float = 0.0) -> float:
    """The Brunner–Munzel relative effect p̂(t) = P̂(A − t > B) + ½·P̂(A − t = B) over all pairs of an agent of
    ``a`` and one of ``b`` (independent agents; NaN dropped; ±inf keep their rank, so a failed agent at −inf
    loses to every finite one and ties another failed one), from mid-ranks: the mean placement of a − t among
    b over n. It estimates p(t), which is > ½ exactly when θ (the median of A − B, continuous case) is > t.
    NaN when a group is empty."""
    t = _finite_threshold(threshold)
    a, b = np.sort(_units(a, keep_inf=True)), np.sort(_units(b, keep_inf=True))
    if a.size == 0 or b.size == 0:
        return _NONE
    pa, _ = _placements(a, b, np.array([t]))
    return float(pa.sum()) / (2.0 * a.size * b.size)


def shift_p(a, b, threshold: float = 0.0, side: str = ">") -> float:
    """One-sided p-value that the shift θ between two groups of independent agents lies on ``side`` (">" or
    "<") of ``threshold``: the studentized permutation Brunner–Munzel test (Brunner & Munzel 2000; Neubert &
    Brunner 2007) of (a − t, b). Unit: the agent (NaN dropped; ±inf keep their rank: a failed agent is −inf).

    Estimand: θ = the median of A − B for an independent agent A of group a and B of group b (the population
    Hodges–Lehmann shift: the difference of medians, and of means, when the groups differ by a shift). For
    continuous agents θ > t ⇔ p(t) = P(A − t > B) + ½·P(A − t = B) > ½, and p(t) is what is tested: H0 for
    ">" is p(t) ≤ ½, for "<" p(t) ≥ ½. Mid-ranks count a tie with the threshold as half a win each way, so
    ties do not inflate the error.

    Statistic: W = (p̂ − ½)/SE with Brunner–Munzel's rank variance (W = ±inf, the sign of p̂ − ½, when that
    variance is 0 — complete separation — and 0 when p̂ = ½ too). p = the share of relabellings of the pooled
    agents with W* ≥ W (">") or W* ≤ W ("<"): all C(m + n, m) of them up to 20,000 (exact; complete
    separation at 5 v 5 gives 1/252), else 20,000 Monte Carlo relabellings from a fixed seed plus the observed
    one, p = (1 + #)/(1 + 20,000) (smallest_shift_p gives the floor). The permutation distribution makes the
    test exact when the groups' distributions are the same; the studentization keeps it asymptotically valid
    when they differ in spread or shape at p(t) = ½ (simulated size at one-sided 0.05 over 20,000 draws:
    0.049 / 0.050 at 7 v 7 / 8 v 8 for identical normal populations; 0.055 / 0.053 for normal SDs 1 v 3, slightly
    liberal; tests/test_stats_groups.py). Power at a 2-SD shift of normal agents, one-sided 0.05: 0.86 / 0.95 /
    0.98 at 5 v 5 / 7 v 7 / 8 v 8 (the exact Wilcoxon–Mann–Whitney test's), where median_difference_p has
    0.00 / 0.22 / 0.38; at one-sided 0.025: 0.70 / 0.91 / 0.94. Fewer than 2 agents in a group: 1.0."""
    if side not in (">", "<"):
        raise ValueError(f"side must be '>' or '<', not {side!r}")
    t = _finite_threshold(threshold)
    a, b = np.sort(_units(a, keep_inf=True)), np.sort(_units(b, keep_inf=True))
    if min(a.size, b.size) < 2:
        return 1.0
    up, down = _shift_ps(a, b, np.array([t]))
    return float(up[0] if side == ">" else down[0])


def _gap_points(d: np.ndarray) -> np.ndarray:
    """One threshold inside each gap between the sorted distinct finite breakpoints ``d`` (and below the first,
    above the last); with no breakpoint, 0."""
    if d.size == 0:
        return np.zeros(1)
    inner = d[:-1] + (d[1:] - d[:-1]) / 2.0
    return np.concatenate([[d[0] - (abs(d[0]) + 1.0)], inner, [d[-1] + (abs(d[-1]) + 1.0)]])


def shift_interval(a, b, level: float = 0.95) -> Interval:
    """The shift θ between two groups of independent agents (unit: the agent; NaN dropped; ±inf keep their
    rank, a failed agent is −inf) with the interval that inverts shift_p.

    Estimand: θ = the median of A − B for an independent agent A of a and B of b (the population
    Hodges–Lehmann shift; the difference of medians, and of means, under a shift). Estimate: the
    Hodges–Lehmann median of all pairwise differences a_i − b_j (inf − inf dropped; NaN when that median is
    undefined). Interval: {t : shift_p(a, b, t, ">") > α/2 and shift_p(a, b, t, "<") > α/2}, α = 1 − level.
    The test's p-values change only at the pairwise differences (the breakpoints), so every open gap between
    consecutive distinct finite differences (and the two unbounded ends) is tested, all at once, and the
    interval runs from the lower breakpoint of the lowest accepted gap to the upper breakpoint of the highest
    (−inf / +inf for the unbounded gaps): the ends are breakpoints and belong to it (conservative), and so
    does any rejected gap between accepted ones (no monotonicity assumed). The breakpoints themselves (a − t
    tying b) are not tested; an accepted one outside the accepted gaps would be missed, which matters only
    where θ can sit exactly on a difference (atoms). No gap accepted (e.g. every agent of a failed, 5 v 5):
    the one-sided ends, the first gap where ">" accepts to the last where "<" does ([−inf, −inf] there).
    Below the sizes where the test can reach α/2 (3 v 3 at 0.95: smallest_shift_p = 0.05) it is the whole line.
    Cost: m·n + 1 thresholds tested at once, ~1–3 ms at 5–16 per group, 3 s at 150 v 150.

    ``coverage`` = ``level``; simulated at 0.95 over 5–16 agents per group on normal, lognormal (σ = 1),
    lognormal with σ 1 v 0.5, and failed-seed (20% at −inf) agents: 0.942–0.963 (1,000 draws a cell,
    benchmarks/groups_power.py);
    ``n`` = the smaller group. Fewer than 2 agents in a group: the estimate with NaN ends."""
    a, b = np.sort(_units(a, keep_inf=True)), np.sort(_units(b, keep_inf=True))
    n = int(min(a.size, b.size))
    if n == 0:
        return Interval(_NONE, _NONE, _NONE, 0, _NONE)
    with np.errstate(invalid="ignore"):
        diff = (a[:, None] - b[None, :]).ravel()
    diff = np.sort(diff[~np.isnan(diff)])
    with np.errstate(invalid="ignore"):
        estimate = float(np.median(diff)) if diff.size else _NONE
    if n < 2:
        return Interval(estimate, _NONE, _NONE, n, _NONE)
    half = (1.0 - level) / 2.0
    d = np.unique(diff[np.isfinite(diff)])
    ends = np.concatenate([[-np.inf], d, [np.inf]])      # gap k runs from ends[k] to ends[k + 1]
    up, down = _shift_ps(a, b, _gap_points(d))
    kept = np.flatnonzero((up > half) & (down > half))
    if kept.size:
        low, high = ends[kept[0]], ends[kept[-1] + 1]
    else:
        above, below = np.flatnonzero(up > half), np.flatnonzero(down > half)
        low = ends[above[0]] if above.size else np.inf
        high = ends[below[-1] + 1] if below.size else -np.inf
        low, high = min(low, high), max(low, high)
    return Interval(estimate, float(low), float(high), n, level)


def smallest_shift_p(na: int, nb: int) -> float:
    """The smallest p-value shift_p can give at ``na`` v ``nb`` agents (no ties): 1/C(na + nb, na) when its
    relabellings are enumerated (≤ 20,000 of them: 1/252 at 5 v 5, 1/3432 at 7 v 7, 1/12870 at 8 v 8), else
    1/(1 + 20,000) for its Monte Carlo. Fewer than 2 agents in a group: 1.0."""
    if min(na, nb) < 2:
        return 1.0
    return 1.0 / math.comb(na + nb, na) if _shift_exact(na, nb) else 1.0 / (1 + _SHIFT_DRAWS)


def _normal_shift_power(p: float, na: int, nb: int, alpha: float) -> float:
    """The rank test's power at relative effect ``p`` = P(A > B) between normal agents of a common SD: p̂ is
    rejected above ½ + z_{1−α}·σ₀ (σ₀² = (na + nb + 1)/(12·na·nb), its variance under the null) and is
    ≈ N(p, σ₁²) with σ₁² = (p(1 − p) + (na + nb − 2)(q − p²))/(na·nb), q = P(A > B₁, A > B₂)
    = Φ₂(h, h; ½) = Φ(h) − 2·T(h, 1/√3) (Owen's T), h = Φ⁻¹(p)."""
    from scipy import special

    z, s0 = NormalDist().inv_cdf(1.0 - alpha), math.sqrt((na + nb + 1) / (12.0 * na * nb))
    h = NormalDist().inv_cdf(p)
    q = p - 2.0 * float(special.owens_t(h, 1.0 / math.sqrt(3.0)))
    v1 = (p * (1.0 - p) + (na + nb - 2) * (q - p * p)) / (na * nb)
    gap = p - 0.5 - z * s0
    return (1.0 if gap > 0 else 0.0) if v1 <= 0.0 else NormalDist().cdf(gap / math.sqrt(v1))


def shift_power_effect(na: int, nb: int, alpha: float, power: float = 0.8) -> float:
    """The relative effect P(A > B) that shift_p at one-sided level ``alpha`` detects with probability
    ``power`` at ``na`` v ``nb`` agents, from the normal approximation of the rank statistic p̂: the critical
    value from its null variance (Noether: ½ + z_{1−α}·√((na + nb + 1)/(12·na·nb))), its spread at the effect
    from its variance there for normal agents (_normal_shift_power; solved by bisection). 1.0 where the
    test cannot reach ``alpha`` (smallest_shift_p > alpha, e.g. 3 v 3 at 0.025). What a report prints for an
    inconclusive comparison: "detects P(A > B) ≥ 0.85 (a 1.5-SD shift of normal agents) with probability 0.8"
    (7 v 7, α = 0.05). Simulated power of shift_p there (normal agents, 4,000 draws): 0.81 / 0.80 / 0.81 / 0.80
    at 5 / 7 / 8 / 16 per group; at the same P(A > B) 0.75–0.78 for lognormal agents, 0.80–0.82 for
    lognormal v narrower lognormal (benchmarks/groups_power.py). Noether's
    formula with the null variance on both sides (p = ½ + (z_{1−α} + z_power)·σ₀) names larger effects, detected
    with probability 0.99 / 0.92 / 0.90 / 0.84 at those sizes, not 0.8."""
    if smallest_shift_p(na, nb) > alpha:
        return 1.0
    lo, hi = 0.5, 1.0
    if _normal_shift_power(1.0 - 1e-12, na, nb, alpha) < power:
        return 1.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if _normal_shift_power(mid, na, nb, alpha) < power else (lo, mid)
    return hi


def shift_power_sd(na: int, nb: int, alpha: float, power: float = 0.8) -> float:
    """shift_power_effect as a shift between normal agents of a common SD, in units of that SD:
    δ = √2·Φ⁻¹(P(A > B)) (P(A > B) = Φ(δ/√2) for A ~ N(δ, 1), B ~ N(0, 1)); inf when that effect is 1.
    One-sided 0.05, power 0.8: 1.8 SD at 5 v 5, 1.5 at 7 v 7, 1.4 at 8 v 8, 0.93 at 16 v 16."""
    p = shift_power_effect(na, nb, alpha, power)
    return math.inf if p >= 1.0 else math.sqrt(2.0) * NormalDist().inv_cdf(p)


# ---- two groups of agents: the difference of means, by the studentized permutation test (Janssen 1997) --------
#
# Welch's t of (a − t, b) and its permutation distribution over the relabellings of the pooled agents, from the
# same relabellings as shift_p (_relabellings: all C(m + n, m) up to 20,000, else 20,000 from a fixed seed). Every
# relabelled group is a mix of k agents of a and m − k of b, so its mean and sum of squares at any threshold follow
# from per-part sums that do not depend on the threshold (_mean_parts), centred on each group's own mean and
# combined as within-part plus between-part sums of squares (no cancellation however far the threshold lies): the
# bisection of mean_difference_interval then costs one pass over the relabellings per step.

#: mean_difference_interval's bisection stops when its bracket is narrower than this share of Welch's standard
#: error of the data (the end reported is the bracket's rejected side: the interval errs wide by at most that)
_MEAN_TOL = 1e-6
#: at most this many doublings of the step when looking for a rejected (or an accepted) threshold
_MEAN_DOUBLINGS = 64


@functools.lru_cache(maxsize=8)
def _label_matrix(N: int, m: int, exact: bool) -> np.ndarray:
    """(1 + R, N) 0/1: row 0 the observed labelling (positions 0 … m − 1 are group a), then the relabellings of
    _relabellings(N, m, exact) (the exact ones include the observed once more, as the null must). Read-only."""
    idx = _relabellings(N, m, exact)
    R = idx.shape[0]
    out = np.zeros((R + 1, N))
    out[0, :m] = 1.0
    out[np.arange(R)[:, None] + 1, idx] = 1.0
    out.setflags(write=False)
    return out


class _MeanParts(NamedTuple):
    """Per labelling (rows: the observed, then the null's) and data set (columns): a relabelled group A* holds ka
    agents of a (mean ma, centred) and m − ka of b (mean mb); B* the other m − ka of a (mean na_) and n − m + ka
    of b (mean nb_); wa, wb the within-part sums of squares of A* and B*. Coordinates: a − mean(a) and
    b − mean(b), a threshold t entering as u = t − (mean(a) − mean(b)) subtracted from a's agents."""

    ka: np.ndarray
    ma: np.ndarray
    mb: np.ndarray
    na_: np.ndarray
    nb_: np.ndarray
    wa: np.ndarray
    wb: np.ndarray
    m: int
    n: int
    exact: bool
    scale: np.ndarray        # (G,) the largest |agent| of each data set: the rounding's scale


def _part(count, total, squares):
    """(mean, within sum of squares) of parts of ``count`` values with these sums (0, 0 for an empty part)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(count > 0, total / np.where(count > 0, count, 1), 0.0)
    return mean, np.maximum(squares - mean * total, 0.0)


def _mean_parts(a: np.ndarray, b: np.ndarray) -> _MeanParts:
    """_MeanParts of data sets a (G, m), b (G, n): finite, each row sorted (the relabellings index positions in
    [sorted a, sorted b], so the same agents in any order give the same p), m, n ≥ 2."""
    G, m = a.shape
    n = b.shape[1]
    exact = _shift_exact(m, n)
    labels = _label_matrix(m + n, m, exact)
    ca, cb = a - a.mean(axis=1, keepdims=True), b - b.mean(axis=1, keepdims=True)
    la, lb = labels[:, :m], labels[:, m:]
    ka = la.sum(axis=1)[:, None]
    sa, qa = la @ ca.T, la @ (ca * ca).T
    sb, qb = lb @ cb.T, lb @ (cb * cb).T
    ma, wa_a = _part(ka, sa, qa)
    mb, wa_b = _part(m - ka, sb, qb)
    na_, wb_a = _part(m - ka, ca.sum(axis=1) - sa, (ca * ca).sum(axis=1) - qa)
    nb_, wb_b = _part(n - m + ka, cb.sum(axis=1) - sb, (cb * cb).sum(axis=1) - qb)
    scale = np.maximum(np.abs(a).max(axis=1), np.abs(b).max(axis=1))
    return _MeanParts(ka, ma, mb, na_, nb_, wa_a + wa_b, wb_a + wb_b, m, n, exact, scale)


def _mean_t(parts: _MeanParts, u: np.ndarray) -> np.ndarray:
    """Welch's t of every labelling (rows) of each data set (columns) at u (G,): the mean of A* minus that of B*
    over √(var(A*)/m + var(B*)/n). A variance sum below (1e-12 × the data's scale)² (a group whose agents are
    equal up to rounding) counts as 0: then ±inf with the sign of the difference, 0 where it is within
    1e-12 × the scale of 0."""
    ka, m, n = parts.ka, parts.m, parts.n
    xa = parts.ma - u                      # A*'s agents of a, at the threshold
    ya = parts.na_ - u                     # B*'s agents of a
    diff = (ka * xa + (m - ka) * parts.mb) / m - ((m - ka) * ya + (n - m + ka) * parts.nb_) / n
    ssa = parts.wa + ka * (m - ka) / m * (xa - parts.mb) ** 2
    ssb = parts.wb + (m - ka) * (n - m + ka) / n * (ya - parts.nb_) ** 2
    v = ssa / (m * (m - 1)) + ssb / (n * (n - 1))
    tiny = 1e-12 * parts.scale
    with np.errstate(divide="ignore", invalid="ignore"):
        t = diff / np.sqrt(v)
    edge = np.where(diff > tiny, np.inf, np.where(diff < -tiny, -np.inf, 0.0))
    return np.where(v > tiny * tiny, t, edge)


def _mean_ps(parts: _MeanParts, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p for ">", p for "<") at u (G,): the share of the null's t* ≥ (≤) the observed t, exact, or
    (1 + #)/(1 + R) for the Monte Carlo. t* within 1e-9 (relative) of the observed t counts as a tie (equal in
    exact arithmetic, summed in another order)."""
    t = _mean_t(parts, u)
    obs, null = t[0], t[1:]
    tol = np.where(np.isfinite(obs), 1e-9 * np.maximum(1.0, np.abs(obs)), 0.0)
    ge = np.sum(null >= obs - tol, axis=0)
    le = np.sum(null <= obs + tol, axis=0)
    R = null.shape[0]
    return (ge / R, le / R) if parts.exact else ((1 + ge) / (1 + R), (1 + le) / (1 + R))


def _mean_groups(a, b) -> tuple[np.ndarray, np.ndarray, int]:
    """The finite agents of a and b, sorted, and how many were left out (±inf, a failed seed; NaN is no agent)."""
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    fa, fb = np.sort(a[np.isfinite(a)]), np.sort(b[np.isfinite(b)])
    return fa, fb, int(a.size - fa.size + b.size - fb.size)


def _welch_t(a, b, threshold: float = 0.0) -> float:
    """mean_difference_p's observed statistic: Welch's t of (a − threshold, b) over the finite agents
    (scipy.stats.ttest_ind(a − threshold, b, equal_var=False)'s, where the variances are not 0)."""
    a, b, _ = _mean_groups(a, b)
    u = _finite_threshold(threshold) - (a.mean() - b.mean())
    return float(_mean_t(_mean_parts(a[None], b[None]), np.array([u]))[0, 0])


def mean_difference_p(a, b, threshold: float = 0.0, side: str = ">") -> float:
    """One-sided p-value that μ_A − μ_B, the difference of two groups' mean agents (independent agents; unit: the
    agent), lies on ``side`` (">" or "<") of ``threshold``: the studentized permutation test of (a − t, b)
    (Janssen 1997; Janssen & Pauls 2003). H0 for ">" is μ_A − μ_B ≤ t, for "<" μ_A − μ_B ≥ t.

    Statistic: Welch's t = (mean(a) − t − mean(b))/√(var(a)/m + var(b)/n) (unbiased variances; ±inf with the
    sign of the difference where both are 0). p = the share of relabellings of the pooled agents (a − t, b)
    whose t* ≥ t (">") or ≤ t ("<"): all C(m + n, m) of them up to 20,000 (exact), else 20,000 Monte Carlo
    relabellings from a fixed seed plus the observed one, (1 + #)/(1 + 20,000) — shift_p's relabellings, so the
    same data always give the same p and the smallest p is smallest_shift_p(m, n) (1/252 at 5 v 5, 1/3432 at
    7 v 7, 1/12870 at 8 v 8). The permutation distribution makes the test exact where the groups differ by a
    shift (a − Δ and b exchangeable), whatever their shape; the studentization keeps it asymptotically exact at
    level α for any two distributions with finite variances (Janssen 1997), where the plain permutation test of
    the difference of means is not when the spreads or sizes differ. Simulated coverage of the interval that
    inverts it: see mean_difference_interval.

    Failed seeds: a group's mean with a non-finite agent (a diverged agent's −inf) is undefined, so non-finite
    agents are left out of the means and the test (NaN dropped too), and the claims name how many
    ("7 vs 6 agents (1 failed seed left out)"); a group with fewer than 2 finite agents: 1.0."""
    if side not in (">", "<"):
        raise ValueError(f"side must be '>' or '<', not {side!r}")
    t = _finite_threshold(threshold)
    a, b, _ = _mean_groups(a, b)
    if min(a.size, b.size) < 2:
        return 1.0
    up, down = _mean_ps(_mean_parts(a[None], b[None]), np.array([t - (a.mean() - b.mean())]))
    return float(up[0] if side == ">" else down[0])


def _mean_end(parts: _MeanParts, d: int, half: float, step: np.ndarray) -> np.ndarray:
    """The end of the accepted set in u on side d (−1: low, read by the ">" test; +1: high, by "<") for each
    data set: an accepted u (0, the estimate, or found by doubling steps away from d), a rejected one (doubling
    steps toward d), then bisection between them to _MEAN_TOL × ``step``; the rejected side is returned.
    No rejected u within 2^_MEAN_DOUBLINGS steps: d·inf; no accepted one: −d·inf (the set is empty)."""
    which = 0 if d < 0 else 1

    def accepted(u):
        return _mean_ps(parts, u)[which] > half

    G = step.size
    inner = np.zeros(G)
    found = accepted(inner)
    for k in range(_MEAN_DOUBLINGS):
        if found.all():
            break
        cand = np.where(found, inner, -d * step * 2.0 ** k)
        ok = accepted(cand)
        inner, found = np.where(found, inner, cand), found | ok
    outer, rejected = inner.copy(), np.zeros(G, bool)
    for k in range(_MEAN_DOUBLINGS):
        if (rejected | ~found).all():
            break
        cand = np.where(rejected | ~found, outer, inner + d * step * 2.0 ** k)
        ok = accepted(cand)
        moving = found & ~rejected
        inner = np.where(moving & ok, cand, inner)
        outer = np.where(moving & ~ok, cand, outer)
        rejected = rejected | (moving & ~ok)
    live = found & rejected
    while True:
        active = live & (np.abs(outer - inner) > _MEAN_TOL * step)
        if not active.any():
            break
        mid = inner + (outer - inner) / 2.0
        ok = accepted(mid)
        inner = np.where(active & ok, mid, inner)
        outer = np.where(active & ~ok, mid, outer)
    return np.where(live, outer, np.where(found, d * np.inf, -d * np.inf))


def _mean_intervals(a: np.ndarray, b: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, low, high) of mean_difference_interval for data sets a (G, m), b (G, n): finite, rows sorted,
    m, n ≥ 2 (one call bisects all G at once: the simulations of its coverage use it)."""
    est = a.mean(axis=1) - b.mean(axis=1)
    G, (m, n) = a.shape[0], (a.shape[1], b.shape[1])
    half = (1.0 - level) / 2.0
    if smallest_shift_p(m, n) > half:   # no relabelling can reject at this level: the whole line
        return est, np.full(G, -np.inf), np.full(G, np.inf)
    se = np.sqrt(a.var(axis=1, ddof=1) / m + b.var(axis=1, ddof=1) / n)
    step = np.where(se > 0, se, np.maximum(np.abs(est), 1.0))
    parts = _mean_parts(a, b)
    low, high = _mean_end(parts, -1, half, step), _mean_end(parts, +1, half, step)
    low, high = np.minimum(low, high), np.maximum(low, high)
    return est, est + low, est + high


def mean_difference_interval(a, b, level: float = 0.95) -> Interval:
    """μ_A − μ_B, the difference of two groups' mean agents (independent agents; unit: the agent), with the
    interval that inverts mean_difference_p: {t : mean_difference_p(a, b, t, ">") > α/2 and
    mean_difference_p(a, b, t, "<") > α/2}, α = 1 − ``level``. Estimate: mean(a) − mean(b).

    Each end is searched by bisection on its one-sided test: from the estimate (accepted) and a rejected
    threshold found by doubling steps of Welch's standard error away from it, until the bracket is narrower than
    1e-6 standard errors (_MEAN_TOL); the end reported is the bracket's rejected side, so the interval is wide by
    at most that. Welch's t of the observed and of every relabelled group is continuous in the threshold, so the
    p-value, a step function, changes only where the observed t crosses a relabelling's; the bisection finds a
    crossing where p passes α/2 (where it passes it more than once on one side, one of them). Below the sizes
    where a relabelling can reject (smallest_shift_p(m, n) > α/2, e.g. 3 v 3 at 0.95) the whole line. Cost:
    ~10–50 ms at 5–16 agents per group.

    Failed seeds: non-finite agents (a diverged agent's −inf) are left out of the means and the interval (NaN
    dropped too); see mean_difference_p. ``n`` = the smaller group's finite agents; fewer than 2 in a group: the
    estimate (NaN where a group has none) with NaN ends.

    ``coverage`` = ``level``. Simulated at 0.95 (``python tests/test_im_means.py``: 2,000 draws a cell, binomial
    SE ≈ 0.005; tests/test_im_means.py asserts each cell on 400 other draws), beside welch_interval on the same
    draws; A shifted by 1.5 from B's population except where the shapes differ; failed seeds: 20% of agents
    finite but collapsed, 0.8·N(μ, 1) + 0.2·N(μ − 6, 0.5) (mean μ − 1.2); the target μ_A − μ_B in closed form:

    | A v B, at 5 / 7 / 8 / 16 agents a group | mean_difference_interval | welch_interval |
    |---|---|---|
    | normal, SD 1 (a shift) | 0.953 / 0.956 / 0.952 / 0.955 | 0.960 / 0.957 / 0.952 / 0.955 |
    | normal, SD 1 v 3 | 0.933 / **0.928** / 0.937 / 0.945 | 0.945 / 0.948 / 0.950 / 0.953 |
    | lognormal σ = 1 (a shift) | 0.955 / 0.954 / 0.957 / 0.951 | 0.980 / 0.981 / 0.982 / 0.968 |
    | lognormal σ 1 v 0.5 | **0.852 / 0.854 / 0.850 / 0.870** | 0.860 / 0.865 / 0.855 / 0.873 |
    | failed seeds in both (a shift) | 0.949 / 0.950 / 0.949 / 0.947 | 0.979 / 0.972 / 0.965 / 0.950 |
    | failed seeds v normal SD 1 | **0.878 / 0.883 / 0.892** / 0.931 | 0.886 / 0.885 / 0.897 / 0.936 |

    Where the groups differ by a shift the test is exact (≥ 0.95 whatever the shape, at 16 a group up to the
    Monte Carlo's error: the cells' 0.947–0.957 are that within their SE) and Welch's interval over-covers skewed
    agents (0.97–0.98). Below the 0.93 target (bold): agents of different shapes, where Welch's interval runs as
    short — lognormal σ 1 v 0.5, 0.85–0.87, nearly every miss (0.13–0.15 of draws, 0.003–0.005 the other way)
    with the high end below μ_A − μ_B (the more skewed group's mean is underestimated together with its spread);
    a group with 20% collapsed agents against a normal one, 0.88–0.89 at 5–8 agents, the misses with the low end
    above it (0.10–0.11 of draws: a wrong "holds" for a ">" claim at 4× its nominal 0.025; 0.06 at 16); normal
    SDs 1 v 3 at 7 v 7, 0.928 (Welch's 0.948: at equal sizes Welch's t is Student's pooled t, whose permutation
    distribution is near t with m + n − 2 d.f., lighter-tailed than its sampling distribution's near
    Welch–Satterthwaite d.f.). No interval for a mean is distribution-free at any size (Bahadur & Savage 1956):
    the figures are what the agents' shape costs. The bisected ends covered μ_A − μ_B exactly where the accepted
    set did in all of 400 draws a cell."""
    a, b, _ = _mean_groups(a, b)
    n = int(min(a.size, b.size))
    estimate = float(a.mean() - b.mean()) if n else _NONE
    if n < 2:
        return Interval(estimate, _NONE, _NONE, n, _NONE)
    est, low, high = _mean_intervals(a[None], b[None], level)
    return Interval(float(est[0]), float(low[0]), float(high[0]), n, level)


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
