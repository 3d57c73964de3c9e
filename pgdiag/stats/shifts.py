"""Two groups of agents by their shift: the studentized permutation Brunner–Munzel test, the Hodges–Lehmann
estimate with the interval inverting it, and the effect it detects with probability 0.8.

Unit of independence, estimand and simulated coverage of each: [`pgdiag.stats`][pgdiag.stats]."""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from pgdiag.stats.medians import Interval, _NONE, _units


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
