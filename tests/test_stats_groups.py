"""Two groups of independent agents: the studentized permutation Brunner–Munzel test (stats.shift_p), its
relative effect, its inverted interval of the shift θ = median(A − B) (stats.shift_interval) and its power
statements (stats.shift_power_effect / shift_power_sd): numbers worked out independently, the test's size at
the boundary null, the interval's coverage and the test's power, simulated (seeded) at 5–16 agents per group.

The large simulations (size, power) compute W for thousands of data sets at once from their placements and look
the p-values up in shift_p's own null distribution (_batch_p); the first replicates of each also go through
shift_p itself, which must agree."""

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats as sps

from pgdiag import stats


# ---- independent references ------------------------------------------------------------------------------------

def _brute_w(x, y) -> float:
    """The Brunner–Munzel W of x over y from mid-ranks, written out (scipy's rankdata, loop-free but no placements
    trick): placements = pooled rank − within-group rank; W = (p̂ − ½)/SE; a zero SE gives ±inf or 0."""
    m, n = len(x), len(y)
    pooled = sps.rankdata(np.concatenate([x, y]))
    px, py = pooled[:m] - sps.rankdata(x), pooled[m:] - sps.rankdata(y)
    phat = px.mean() / n
    se = math.sqrt(px.var(ddof=1) / (m * n * n) + py.var(ddof=1) / (n * m * m))
    if se == 0.0:
        return 0.0 if phat == 0.5 else math.copysign(math.inf, phat - 0.5)
    return (phat - 0.5) / se


def _brute_p(a, b, t, side) -> float:
    """The exact permutation p over itertools.combinations of the pooled (a − t, b)."""
    z = np.concatenate([np.asarray(a, float) - t, np.asarray(b, float)])
    m, N = len(a), len(a) + len(b)
    w0 = _brute_w(z[:m], z[m:])
    count = total = 0
    for chosen in itertools.combinations(range(N), m):
        mask = np.zeros(N, bool)
        mask[list(chosen)] = True
        w = _brute_w(z[mask], z[~mask])
        count += (w >= w0 - 1e-9 * max(1.0, abs(w0))) if side == ">" else (w <= w0 + 1e-9 * max(1.0, abs(w0)))
        total += 1
    return count / total


def _brute_effect(a, b, t) -> float:
    d = np.asarray(a, float)[:, None] - t
    b = np.asarray(b, float)[None, :]
    return float(np.mean((d > b) + 0.5 * (d == b)))


def _batch_p(A, B, side=">"):
    """shift_p(A[i], B[i], 0, side) for every row of continuous (tie-free) samples at once: W from the placements
    (2·#{b < a}), looked up in shift_p's own null of the tie-free pooled sample."""
    m, n = A.shape[1], B.shape[1]
    pa = 2 * (A[:, :, None] > B[:, None, :]).sum(2)
    pb = 2 * (B[:, :, None] > A[:, None, :]).sum(2)
    w = stats.shifts._shift_w(pa.sum(1), (pa * pa).sum(1), pb.sum(1), (pb * pb).sum(1), m, n)
    exact = stats.shifts._shift_exact(m, n)
    up, down = stats.shifts._tail_ps(w, stats.shifts._null_w(m, n, (1,) * (m + n), exact), exact)
    p = up if side == ">" else down
    for i in range(50):
        assert p[i] == stats.shift_p(A[i], B[i], 0.0, side)
    return p


# ---- numbers by hand -----------------------------------------------------------------------------------------

def test_relative_effect_by_hand():
    """a = (1, 2, 6) over b = (0, 2, 5): wins 1 + (1 + ½) + 3 = 5.5 of 9 pairs. At t = 1, (0, 1, 5) over
    (0, 2, 5): ½ + 1 + 2½ = 4 of 9 (ties with the threshold count half). A failed agent (−inf) loses to every
    agent that ran and ties another failed one: (−inf, 3) over (−inf, 1, 5) is (½ + 0 + 0 + 1 + 1 + 0)/6."""
    assert stats.relative_effect([1, 2, 6], [0, 2, 5]) == pytest.approx(5.5 / 9, abs=1e-15)
    assert stats.relative_effect([1, 2, 6], [0, 2, 5], threshold=1.0) == pytest.approx(4 / 9, abs=1e-15)
    assert stats.relative_effect([-np.inf, 3, np.nan], [-np.inf, 1, 5]) == pytest.approx(2.5 / 6, abs=1e-15)
    assert np.isnan(stats.relative_effect([], [1.0]))
    with pytest.raises(ValueError):
        stats.relative_effect([1.0], [2.0], threshold=np.inf)


def test_complete_separation_at_5_v_5_is_one_of_252():
    """Every agent of a above every agent of b: W = +inf, reached by 1 relabelling of C(10, 5) = 252, so the
    exact p is 1/252 for ">" and 1 for "<" (and mirrored); the smallest p the test gives at 5 v 5."""
    a, b = [5.0, 6, 7, 8, 9], [0.0, 1, 2, 3, 4]
    assert stats.shift_p(a, b, 0.0, ">") == pytest.approx(1 / 252, abs=1e-15)
    assert stats.shift_p(a, b, 0.0, "<") == 1.0
    assert stats.shift_p(b, a, 0.0, "<") == pytest.approx(1 / 252, abs=1e-15)
    assert stats.smallest_shift_p(5, 5) == pytest.approx(1 / 252, abs=1e-15)
    assert stats.smallest_shift_p(8, 8) == pytest.approx(1 / 12870, abs=1e-15)
    assert stats.smallest_shift_p(9, 9) == pytest.approx(1 / 20001, abs=1e-15)     # C(18, 9) = 48620: Monte Carlo
    assert stats.smallest_shift_p(1, 9) == 1.0
    assert stats.shift_p([1.0], b) == 1.0                                          # fewer than 2 agents


@pytest.mark.parametrize("t", [0.0, 1.0, 2.5])
def test_shift_p_equals_a_brute_force_permutation_test_with_ties_and_a_failed_agent(t):
    """A small sample with ties inside each group, a failed agent (−inf) in each, and (t = 1) ties of a − t
    with b: shift_p and relative_effect equal the itertools enumeration of the rank-written statistic."""
    a, b = [3.0, 1.0, -np.inf, 2.0, 2.0], [2.0, 0.0, -np.inf, 4.0, 1.0, 5.0]
    assert stats.relative_effect(a, b, t) == pytest.approx(_brute_effect(a, b, t), abs=1e-15)
    for side in (">", "<"):
        assert stats.shift_p(a, b, t, side) == pytest.approx(_brute_p(a, b, t, side), abs=1e-12), side
    assert stats.shifts._shift_statistic(a, b, t) == pytest.approx(_brute_w(np.array(a) - t, np.array(b)), rel=1e-12)


def test_the_statistic_is_scipys_brunner_munzel():
    """Without a degenerate variance (and with ties) W is scipy.stats.brunnermunzel's statistic of
    (b, a − t): positive when a − t tends to exceed b."""
    rng = np.random.default_rng(3)
    for m, n in ((5, 5), (6, 9), (16, 11)):
        a, b = np.round(rng.normal(1.0, 1.0, m), 1), np.round(rng.normal(0.0, 2.0, n), 1)
        for t in (0.0, 0.4, 1.0):
            ours = stats.shifts._shift_statistic(a, b, t)
            assert ours == pytest.approx(sps.brunnermunzel(b, a - t).statistic, rel=1e-10), (m, n, t)


def test_the_monte_carlo_null_is_fixed_and_near_the_exact_one(monkeypatch):
    """At 9 v 9 (C(18, 9) = 48,620 > 20,000) the p is a Monte Carlo over 20,000 relabellings from a fixed seed:
    the same data give the same p (also after the caches are cleared), within 4.5 binomial SDs of the exact p
    (enumerating all 48,620, forced here); the fixed seed makes this deterministic."""
    rng = np.random.default_rng(9)
    a, b = rng.normal(0.9, 1.0, 9), rng.normal(0.0, 1.0, 9)
    p = stats.shift_p(a, b)
    stats.shifts._null_w.cache_clear()
    stats.shifts._relabellings.cache_clear()
    assert stats.shift_p(a, b) == p
    assert p >= 1 / 20001
    monkeypatch.setattr(stats.shifts, "_SHIFT_EXACT_MAX", 10 ** 5)
    exact = stats.shift_p(a, b)
    assert 0.005 < exact < 0.5 and exact * 48620 == pytest.approx(round(exact * 48620))
    assert abs(p - exact) <= 4.5 * math.sqrt(exact * (1 - exact) / 20000) + 1 / 20001


def test_shift_interval_by_hand_and_its_edges():
    """The Hodges–Lehmann estimate is the median of the pairwise differences (inf − inf dropped); an interval's
    ends are pairwise differences or ±inf; fewer than 2 agents: the estimate alone; a group that all failed:
    [−inf, −inf] once the test can see it (5 v 5), and the whole line where it cannot reach α/2 (3 v 3)."""
    iv = stats.shift_interval([1.0, 3.0], [0.0, 1.0])
    assert iv.estimate == 1.5 and (iv.low, iv.high) == (-np.inf, np.inf)      # 2 v 2: smallest p 1/6
    iv = stats.shift_interval([-np.inf, 2.0], [-np.inf, 1.0])                 # differences −inf, 1, +inf
    assert iv.estimate == 1.0
    one = stats.shift_interval([1.0], [0.0, 2.0, 3.0])
    assert one.estimate == -1.0 and np.isnan(one.low) and np.isnan(one.high) and one.n == 1
    failed = stats.shift_interval([-np.inf] * 5, [0.0, 1.0, 2.0, 3.0, 4.0])
    assert failed.estimate == -np.inf and (failed.low, failed.high) == (-np.inf, -np.inf)
    assert stats.shift_interval([-np.inf] * 3, [0.0, 1.0, 2.0])[1:3] == (-np.inf, np.inf)
    rng = np.random.default_rng(4)
    a, b = rng.normal(1.0, 1.0, 7), rng.normal(0.0, 1.0, 8)
    iv = stats.shift_interval(a, b, 0.90)
    d = np.unique(a[:, None] - b[None, :])
    assert iv.low in d and iv.high in d and iv.n == 7 and iv.coverage == 0.90
    assert iv.estimate == pytest.approx(np.median(a[:, None] - b[None, :]))


def test_shift_interval_inverts_shift_p():
    """Just inside each end (the gap above the low end, below the high end) both one-sided p's exceed α/2;
    just outside, the side that end guards is at most α/2."""
    rng = np.random.default_rng(5)
    for m, n in ((5, 6), (8, 8), (12, 16)):
        a, b = rng.lognormal(0.0, 1.0, m) + 0.5, rng.lognormal(0.0, 1.0, n)
        iv = stats.shift_interval(a, b)
        d = np.unique(a[:, None] - b[None, :])
        i, j = np.searchsorted(d, iv.low), np.searchsorted(d, iv.high)
        inside_low, inside_high = (d[i] + d[i + 1]) / 2, (d[j - 1] + d[j]) / 2
        outside_low, outside_high = (d[i - 1] + d[i]) / 2, (d[j] + d[j + 1]) / 2
        for t in (inside_low, inside_high):
            assert min(stats.shift_p(a, b, t, ">"), stats.shift_p(a, b, t, "<")) > 0.025, (m, n)
        assert stats.shift_p(a, b, outside_low, ">") <= 0.025
        assert stats.shift_p(a, b, outside_high, "<") <= 0.025


def test_power_statements_edges():
    """Where the test cannot reach α (3 v 3 at 0.025: smallest p 1/20) no effect is detectable: 1 and inf."""
    assert stats.shift_power_effect(3, 3, 0.025) == 1.0 and stats.shift_power_sd(3, 3, 0.025) == math.inf
    assert stats.shift_power_effect(7, 7, 0.05) == pytest.approx(0.851, abs=1e-3)
    assert stats.shift_power_sd(7, 7, 0.05) == pytest.approx(
        math.sqrt(2) * sps.norm.ppf(stats.shift_power_effect(7, 7, 0.05)), rel=1e-12)
    assert stats.shift_power_effect(16, 16, 0.05) < stats.shift_power_effect(8, 8, 0.05)


# ---- validity, coverage, power (simulated) --------------------------------------------------------------------

@pytest.mark.parametrize("n", [7, 8])
def test_the_one_sided_size_at_the_boundary_null(n):
    """p(0) = ½ with identical normal populations (the permutation test is exact: size ≤ α) and in the
    Behrens–Fisher case (equal medians, SDs 1 v 3 and 3 v 1: the studentization keeps it near α, slightly
    liberal: here 0.049 identical, 0.056 / 0.055 Behrens–Fisher at 7 v 7; 0.050, 0.052 / 0.054 at 8 v 8; one-sided
    0.05). 20,000 seeded draws each: identical ≤ 0.056 (a true 0.05 exceeds it by 3.9 binomial SDs of 0.0015:
    P < 1e-4); Behrens–Fisher ≤ 0.063 (a true 0.056 exceeds it by 4.3 SDs of 0.0016: P < 1e-4). Not "≤ α + a
    binomial margin" there: at 7 v 7 its size is ≈ 0.055 (0.052–0.059 over four runs of 10,000)."""
    rng = np.random.default_rng(100 + n)
    R = 20_000
    for sa, sb, bound in ((1.0, 1.0, 0.056), (1.0, 3.0, 0.063), (3.0, 1.0, 0.063)):
        p = _batch_p(rng.normal(0.0, sa, (R, n)), rng.normal(0.0, sb, (R, n)))
        assert np.mean(p <= 0.05) <= bound, (sa, sb)


def _unequal_lognormal_theta() -> float:
    """θ = median of LN(0, 1) − LN(0, 0.5): the t with P(LN(0, 1) − t > B) = ½, by quadrature over B."""
    def above(t):
        def f(z):
            y = math.exp(0.5 * z) + t
            return (1.0 if y <= 0 else float(sps.norm.sf(math.log(y)))) * float(sps.norm.pdf(z))
        return integrate.quad(f, -12.0, 12.0, limit=200, points=[0.0])[0]
    return optimize.brentq(lambda t: above(t) - 0.5, -5.0, 5.0, xtol=1e-12)


def _populations():
    """name → (draw A, draw B, θ): A shifted by 1.5 from the population of B (θ = 1.5) except the unequal-σ
    lognormal pair, whose θ is the quadrature's; failed seeds: 20% of each group at −inf (θ is still 1.5:
    P(A − 1.5 > B) = 0.2·0.8 + ½·0.04 + 0.64·½ = ½)."""
    def failed(shift):
        def draw(rng, shape):
            x = rng.normal(shift, 1.0, shape)
            x[rng.random(shape) < 0.2] = -np.inf
            return x
        return draw
    return {
        "normal": (lambda r, s: r.normal(1.5, 1.0, s), lambda r, s: r.normal(0.0, 1.0, s), 1.5),
        "lognormal": (lambda r, s: 1.5 + r.lognormal(0.0, 1.0, s), lambda r, s: r.lognormal(0.0, 1.0, s), 1.5),
        "lognormal σ 1 v 0.5": (lambda r, s: r.lognormal(0.0, 1.0, s), lambda r, s: r.lognormal(0.0, 0.5, s),
                                _unequal_lognormal_theta()),
        "failed seeds": (failed(1.5), failed(0.0), 1.5),
    }


def test_the_unequal_lognormal_theta_is_the_median_of_differences():
    """The quadrature's θ against 2,000,000 seeded differences (the sample median's SD here is ~0.001)."""
    rng = np.random.default_rng(6)
    sample = rng.lognormal(0.0, 1.0, 2_000_000) - rng.lognormal(0.0, 0.5, 2_000_000)
    assert _unequal_lognormal_theta() == pytest.approx(float(np.median(sample)), abs=0.005)


@pytest.mark.parametrize("n", [5, 7, 8, 16])
def test_shift_interval_covers_theta(n):
    """400 seeded draws per population; simulated over 1,000 (benchmarks/groups_power.py) the coverage is
    0.942–0.963 at 5–16 agents per group. Asserted ≥ 0.90: a true 0.942 falls there with P < 1e-3 (3.6 binomial
    SDs of 0.0117 at 400 draws; over the 16 cases P < 0.01)."""
    R = 400
    for k, (name, (draw_a, draw_b, theta)) in enumerate(_populations().items()):
        rng = np.random.default_rng(10 * n + k)
        A, B = draw_a(rng, (R, n)), draw_b(rng, (R, n))
        hits = 0
        for a, b in zip(A, B):
            iv = stats.shift_interval(a, b)
            hits += iv.low <= theta <= iv.high
        assert hits / R >= 0.90, name


@pytest.mark.parametrize("n, bound", [(5, 0.80), (7, 0.91), (8, 0.95)])
def test_power_at_a_two_sd_shift_beats_the_median_difference(n, bound):
    """Normal agents 2 SD apart, one-sided α = 0.05, 2,000 seeded draws: shift_p rejects in 0.86 / 0.94 / 0.98 at
    5 v 5 / 7 v 7 / 8 v 8 (0.860 / 0.950 / 0.978 over 4,000; the exact Wilcoxon–Mann–Whitney test's 0.860 /
    0.951 / 0.972), median_difference_p in 0.00 / 0.21 / 0.37 (it cannot reach 0.05 at 5 v 5: its smallest
    guaranteed error is 1/16). Asserted: shift_p ≥ 0.80 / 0.91 / 0.95 (3.8 / 4.6 / 3.8 binomial SDs below the
    0.860 / 0.950 / 0.978 simulated: P < 1e-4 each) and above median_difference_p by ≥ 0.4."""
    rng = np.random.default_rng(200 + n)
    A, B = rng.normal(2.0, 1.0, (2000, n)), rng.normal(0.0, 1.0, (2000, n))
    power = np.mean(_batch_p(A, B) <= 0.05)
    power_median = np.mean([stats.median_difference_p(a, b, 0.0, ">") <= 0.05 for a, b in zip(A, B)])
    assert power >= bound and power >= power_median + 0.4, (power, power_median)


@pytest.mark.parametrize("n", [7, 16])
def test_shift_power_sd_is_detected_with_probability_near_its_power(n):
    """At the shift shift_power_sd names (one-sided 0.05, power 0.8; 1.47 SD at 7 v 7, 0.93 at 16 v 16) normal
    agents are detected in 0.800 / 0.795 of 4,000 seeded draws. Asserted within 0.8 ± 0.05:
    7 binomial SDs (0.0063): never by chance. (Noether's null-variance formula named 1.79 / 0.99 SD, detected
    in 0.92 / 0.84.)"""
    delta = stats.shift_power_sd(n, n, 0.05)
    rng = np.random.default_rng(300 + n)
    power = np.mean(_batch_p(rng.normal(delta, 1.0, (4000, n)), rng.normal(0.0, 1.0, (4000, n))) <= 0.05)
    assert abs(power - 0.8) <= 0.05, power
