"""IM's estimand, the difference of MEAN agents (IM Tables 2/3, §5): stats.mean_difference_p (Welch's t with its
permutation distribution, Janssen 1997) and stats.mean_difference_interval, which inverts it; the claims of kind
"means" and "min-mean-difference" that read them. Numbers worked out independently: Welch's t against scipy's,
the exact permutation p by brute force over itertools' relabellings, the populations' means in closed form.
Coverage is simulated beside welch_interval on the same draws; ``python tests/test_im_means.py [reps [check]]``
prints the full table (2,000 draws a cell: the docstring's; ``check`` draws a cell also bisected)."""

import itertools
import math
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from pgdiag import stats
from pgdiag.experiments import claims, findings, paper_claims

SIZES = (5, 7, 8, 16)
LEVEL = 0.95


# --- the statistic and the p-value, worked out independently ------------------------------------------------

@pytest.mark.parametrize("m, n, t", [(5, 5, 0.0), (3, 4, 0.3), (7, 12, -1.0), (16, 9, 2.5)])
def test_the_statistic_is_scipys_welch_t(m, n, t):
    rng = np.random.default_rng(m * n)
    a, b = rng.lognormal(1.0, 1.0, m) * 1000.0, rng.normal(2000.0, 300.0, n)
    expected = sps.ttest_ind(a - t, b, equal_var=False).statistic
    assert stats.means._welch_t(a, b, t) == pytest.approx(expected, rel=1e-10)
    assert stats.means._welch_t(rng.permutation(a), rng.permutation(b), t) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("m, n, t", [(3, 4, 0.0), (3, 4, 1.2), (4, 4, -0.5), (2, 5, 0.4)])
def test_the_exact_p_is_the_share_of_relabellings_by_brute_force(m, n, t):
    """All C(m + n, m) relabellings of the pooled (a − t, b) enumerated with itertools, each one's Welch t by
    scipy: p(">") = the share with t* ≥ t_obs, p("<") the share with t* ≤ t_obs."""
    rng = np.random.default_rng(7 + m + n)
    a, b = rng.normal(1.0, 1.0, m), rng.normal(0.0, 2.0, n)
    pooled = np.concatenate([a - t, b])
    observed = sps.ttest_ind(a - t, b, equal_var=False).statistic
    null = []
    for chosen in itertools.combinations(range(m + n), m):
        mask = np.zeros(m + n, bool)
        mask[list(chosen)] = True
        null.append(sps.ttest_ind(pooled[mask], pooled[~mask], equal_var=False).statistic)
    null = np.array(null)
    eps = 1e-9 * max(1.0, abs(observed))
    assert stats.mean_difference_p(a, b, t, ">") == pytest.approx(np.mean(null >= observed - eps), abs=1e-15)
    assert stats.mean_difference_p(a, b, t, "<") == pytest.approx(np.mean(null <= observed + eps), abs=1e-15)


def test_complete_separation_gives_the_smallest_p_and_the_monte_carlo_is_fixed(monkeypatch):
    """Separated 5 v 5: 1/252 (only the observed labelling is as extreme). At 9 v 9 (48,620 > 20,000) the p is a
    Monte Carlo over 20,000 relabellings from a fixed seed: the same data, in any order, give the same p (after
    the caches are cleared too), within 4.5 binomial SDs of the exact p (all 48,620, forced): never by chance,
    the seed is fixed."""
    a, b = np.arange(5) + 10.0, np.arange(5) * 1.1
    assert stats.mean_difference_p(a, b) == pytest.approx(1 / 252) == stats.smallest_shift_p(5, 5)
    rng = np.random.default_rng(9)
    a, b = rng.normal(0.8, 1.0, 9), rng.normal(0.0, 1.5, 9)
    p = stats.mean_difference_p(a, b)
    stats.means._label_matrix.cache_clear()
    stats.shifts._relabellings.cache_clear()
    assert stats.mean_difference_p(a[::-1], rng.permutation(b)) == p and p >= 1 / 20001
    monkeypatch.setattr(stats.shifts, "_SHIFT_EXACT_MAX", 10 ** 5)
    exact = stats.mean_difference_p(a, b)
    assert 0.005 < exact < 0.5 and exact * 48620 == pytest.approx(round(exact * 48620))
    assert abs(p - exact) <= 4.5 * math.sqrt(exact * (1 - exact) / 20000) + 1 / 20001


@pytest.mark.parametrize("n, scale", [(5, 1.0), (8, 1.0), (16, 1.0), (7, 3000.0)])
def test_the_interval_inverts_the_test(n, scale):
    """The low end is rejected by ">" at α/2 and a threshold 2 tolerances inside it is not (likewise the high end
    by "<"); the estimate is the difference of means; raw rewards (~3,000) change nothing but the scale."""
    rng = np.random.default_rng(40 + n)
    a, b = scale * rng.lognormal(0.0, 1.0, n) + scale, scale * rng.normal(1.0, 0.5, n)
    iv = stats.mean_difference_interval(a, b)
    se = math.sqrt(a.var(ddof=1) / n + b.var(ddof=1) / n)
    inside = 2 * stats.means._MEAN_TOL * se
    assert iv.estimate == pytest.approx(a.mean() - b.mean()) and iv.coverage == LEVEL and iv.n == n
    assert stats.mean_difference_p(a, b, iv.low, ">") <= 0.025 < stats.mean_difference_p(a, b, iv.low + inside, ">")
    assert stats.mean_difference_p(a, b, iv.high, "<") <= 0.025 < stats.mean_difference_p(a, b, iv.high - inside,
                                                                                             "<")
    assert iv.low < iv.estimate < iv.high


def test_failed_seeds_are_left_out_of_the_means_and_small_groups_have_no_interval():
    """The rule: a non-finite agent (a diverged agent's −inf) has no place in a mean, so it is left out of the
    estimate, the test and the interval (n counts the finite agents); NaN is no agent. Fewer than 2 finite
    agents: no ends (p 1.0); 3 v 3 cannot reach 0.025 (1/20): the whole line."""
    a, b = np.array([10.0, 11.0, 12.0, 13.0]), np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    failed = np.append(a, [-np.inf, np.nan])
    assert stats.mean_difference_interval(failed, b) == stats.mean_difference_interval(a, b)
    assert stats.mean_difference_interval(failed, b).n == 4
    assert stats.mean_difference_interval(failed, b).estimate == pytest.approx(11.5 - 3.0)
    assert stats.mean_difference_p(failed, b, 5.0) == stats.mean_difference_p(a, b, 5.0)
    one = stats.mean_difference_interval([1.0, -np.inf], b)
    assert one.estimate == pytest.approx(1.0 - 3.0) and np.isnan(one.low) and np.isnan(one.high)
    assert stats.mean_difference_p([1.0, -np.inf], b) == 1.0
    whole = stats.mean_difference_interval([1.0, 2.0, 3.0], [0.0, 0.5, 0.7])
    assert (whole.low, whole.high) == (-np.inf, np.inf)
    flat = stats.mean_difference_interval([2.0] * 5, [1.0] * 5)        # no spread: the one accepted threshold
    assert flat.low == pytest.approx(1.0, abs=1e-5) and flat.high == pytest.approx(1.0, abs=1e-5)


# --- coverage, simulated beside Welch's interval --------------------------------------------------------------

def _mixture(mu):
    """A failed-seed population: 0.8·N(μ, 1) + 0.2·N(μ − 6, 0.5), finite but collapsed agents (mean μ − 1.2)."""
    def draw(rng, shape):
        low = rng.random(shape) < 0.2
        return np.where(low, rng.normal(mu - 6.0, 0.5, shape), rng.normal(mu, 1.0, shape))
    return draw


#: name → (draw A, draw B, μ_A − μ_B in closed form)
POPULATIONS = {
    "normal": (lambda r, s: r.normal(1.5, 1.0, s), lambda r, s: r.normal(0.0, 1.0, s), 1.5),
    "normal SD 1 v 3": (lambda r, s: r.normal(1.5, 1.0, s), lambda r, s: r.normal(0.0, 3.0, s), 1.5),
    "lognormal σ 1, shift": (lambda r, s: 1.5 + r.lognormal(0.0, 1.0, s), lambda r, s: r.lognormal(0.0, 1.0, s),
                             1.5),
    "lognormal σ 1 v 0.5": (lambda r, s: r.lognormal(0.0, 1.0, s), lambda r, s: r.lognormal(0.0, 0.5, s),
                            math.exp(0.5) - math.exp(0.125)),
    "failed seeds, shift": (_mixture(1.5), _mixture(0.0), 1.5),
    "failed seeds v normal": (_mixture(1.5), lambda r, s: r.normal(0.0, 1.0, s), 1.5 - 0.2 * 6.0),
}


def _accepted(A, B, delta, level=LEVEL, chunk=50):
    """Per draw (rows), whether Δ lies in mean_difference_interval's accepted set: neither one-sided test
    rejects it at (1 − level)/2 (the interval's definition; one pass over the relabellings per draw)."""
    half, out = (1 - level) / 2, []
    for i in range(0, len(A), chunk):
        a, b = np.sort(A[i:i + chunk], axis=1), np.sort(B[i:i + chunk], axis=1)
        up, down = stats.means._mean_ps(stats.means._mean_parts(a, b), delta - (a.mean(axis=1) - b.mean(axis=1)))
        out.append((up > half) & (down > half))
    return np.concatenate(out)


def _intervals(A, B, level=LEVEL, chunk=50):
    """mean_difference_interval's (low, high) for each draw, bisected all at once (its own code path)."""
    lows, highs = [], []
    for i in range(0, len(A), chunk):
        _, low, high = stats.means._mean_intervals(np.sort(A[i:i + chunk], axis=1), np.sort(B[i:i + chunk], axis=1),
                                             level)
        lows.append(low)
        highs.append(high)
    return np.concatenate(lows), np.concatenate(highs)


def _draw(name, n, reps, seed):
    draw_a, draw_b, delta = POPULATIONS[name]
    rng = np.random.default_rng(seed)
    return draw_a(rng, (reps, n)), draw_b(rng, (reps, n)), delta


def _welch_covers(A, B, delta):
    ivs = [stats.welch_interval(a, b, LEVEL) for a, b in zip(A, B)]
    return np.array([iv.low <= delta <= iv.high for iv in ivs])


#: (population, n) → (coverage of mean_difference_interval, of welch_interval) over 2,000 draws
#: (``python tests/test_im_means.py``; other seeds than the tests'); ours on the shift populations is exact by
#: permutation, ≥ 0.95 whatever their shape (at 16 a group up to the Monte Carlo's error), so 0.95 is its figure
TABLE = {
    ("normal", 5): (0.953, 0.960), ("normal", 7): (0.956, 0.957), ("normal", 8): (0.952, 0.952),
    ("normal", 16): (0.955, 0.955),
    ("normal SD 1 v 3", 5): (0.933, 0.945), ("normal SD 1 v 3", 7): (0.928, 0.948),
    ("normal SD 1 v 3", 8): (0.937, 0.950), ("normal SD 1 v 3", 16): (0.945, 0.953),
    ("lognormal σ 1, shift", 5): (0.955, 0.980), ("lognormal σ 1, shift", 7): (0.954, 0.981),
    ("lognormal σ 1, shift", 8): (0.957, 0.982), ("lognormal σ 1, shift", 16): (0.951, 0.968),
    ("lognormal σ 1 v 0.5", 5): (0.852, 0.860), ("lognormal σ 1 v 0.5", 7): (0.854, 0.865),
    ("lognormal σ 1 v 0.5", 8): (0.850, 0.855), ("lognormal σ 1 v 0.5", 16): (0.870, 0.873),
    ("failed seeds, shift", 5): (0.949, 0.979), ("failed seeds, shift", 7): (0.950, 0.972),
    ("failed seeds, shift", 8): (0.949, 0.965), ("failed seeds, shift", 16): (0.947, 0.950),
    ("failed seeds v normal", 5): (0.878, 0.886), ("failed seeds v normal", 7): (0.883, 0.885),
    ("failed seeds v normal", 8): (0.892, 0.897), ("failed seeds v normal", 16): (0.931, 0.936),
}
EXACT = ("normal", "lognormal σ 1, shift", "failed seeds, shift")
DRAWS = 400


def _bound(c: float) -> float:
    """The binomial 1e-4 quantile of DRAWS draws at coverage c, as a share: a cell whose true coverage is c falls
    below it with P < 1e-4 (exactly, by the binomial); over the 48 asserts P < 0.005. (At c = 0.95: 0.905,
    4.1 SDs below; at 0.85: 0.78.)"""
    return float(sps.binom.ppf(1e-4, DRAWS, c)) / DRAWS


@pytest.mark.parametrize("name", list(POPULATIONS))
def test_coverage_of_the_mean_difference_beside_welch(name):
    """400 seeded draws a cell (5, 7, 8, 16 agents a group): the accepted set of mean_difference_interval covers
    μ_A − μ_B, and welch_interval on the same draws, each at least _bound(its 2,000-draw coverage in TABLE; 0.95
    for ours on the shift populations). Exact where A − Δ and B are exchangeable; on unequal shapes both run short
    (lognormal σ 1 v 0.5: 0.85–0.87; one group with 20% collapsed agents: 0.88–0.93)."""
    for n in SIZES:
        A, B, delta = _draw(name, n, DRAWS, 1000 * SIZES.index(n) + list(POPULATIONS).index(name))
        ours, welch = TABLE[(name, n)]
        covered, welch_covered = _accepted(A, B, delta).mean(), _welch_covers(A, B, delta).mean()
        assert covered >= _bound(0.95 if name in EXACT else ours), (name, n, covered)
        assert welch_covered >= _bound(welch), (name, n, welch_covered)


def test_the_bisected_interval_is_the_accepted_set():
    """On 100 skewed draws (lognormal σ 1 v 0.5, 7 and 8 a group) mean_difference_interval's bisected ends cover
    μ_A − μ_B exactly where the accepted set does (no draw where the p-value re-crosses α/2 inside)."""
    for n in (7, 8):
        A, B, delta = _draw("lognormal σ 1 v 0.5", n, 100, 77 + n)
        low, high = _intervals(A, B)
        assert np.array_equal((low <= delta) & (delta <= high), _accepted(A, B, delta))
        one = stats.mean_difference_interval(A[0], B[0])
        assert (one.low, one.high) == pytest.approx((low[0], high[0]))


# --- the claims: IM's tables read by the difference of mean agents ---------------------------------------------

def _ev(name, values, label, task="hopper", prefix=""):
    """IM score evidence where the paper made it (500 iterations on Gym's models, the whole of training)."""
    return pd.DataFrame({"evidence": name, "task": task, "label": label,
                         "agent": [f"{prefix or label}{i}" for i in range(len(values))], "value": values,
                         "iteration": 499, "progress": 1.0, "lr_share": 0.0, "pairs": np.nan,
                         "run_iterations": 500, "model": "gym"})


def test_the_three_im_table_claims_read_means_and_the_kinds_are_known():
    kinds = {c.key: c.kind for c in claims.CLAIMS}
    assert kinds["noclip-beats-ppo-m"] == kinds["noclip-matches-ppo"] == "means"
    assert kinds["optimizations-matter-more-than-step"] == "min-mean-difference"
    assert {"means", "min-mean-difference"} <= set(paper_claims.KINDS) == set(claims.EVALUATE)
    # the permutation floor: 1/C(2n, n) for every kind over groups (1/3432 at 7 v 7)
    assert findings.smallest_p("means", 7) == findings.smallest_p("min-mean-difference", 7) == 1 / 3432
    assert findings.smallest_p("means", 7) == stats.smallest_shift_p(7, 7)


def test_a_means_row_is_the_difference_of_mean_agents_with_failed_seeds_left_out():
    """Six PPO-NoClip agents (one a failed seed, −inf) against five PPO-M agents: the row reads 5 vs 5 finite
    agents and names the failed seed; value = mean(10 … 14) − mean(1 … 5) = 9; interval and p are
    stats.mean_difference_*'s on the finite agents. With two failed seeds only 4 remain: too few agents."""
    claim = claims.by_key("noclip-beats-ppo-m")
    noclip, ppo_m = [10.0, 11.0, 12.0, 13.0, 14.0, -np.inf], [1.0, 2.0, 3.0, 4.0, 5.0]
    row = claims.evaluate(pd.concat([_ev(claim.evidence, noclip, "ppo-noclip"), _ev(claim.evidence, ppo_m, "ppo-m")]),
                          claims=[claim]).iloc[0]
    iv = stats.mean_difference_interval(noclip[:5], ppo_m)
    assert row.agree == "5 vs 5 agents (1 failed seed left out)" and row.estimate == claims.MEANS.name
    assert row.value == pytest.approx(9.0) and (row.low, row.high) == pytest.approx((iv.low, iv.high))
    assert row.agents == 5 and row.coverage == 0.95 and row.verdict == "holds"
    assert row.p_for == pytest.approx(1 / 252) and row.p_against == 1.0
    assert findings._sizes(pd.DataFrame([row])) == [(5, 5)]   # both groups' sizes, read past the note
    two = noclip[:4] + [-np.inf, -np.inf]
    row = claims.evaluate(pd.concat([_ev(claim.evidence, two, "ppo-noclip"), _ev(claim.evidence, ppo_m, "ppo-m")]),
                          claims=[claim]).iloc[0]
    assert row.verdict == "too few agents" and row.agree == "4 vs 5 agents (2 failed seeds left out)"
    assert np.isnan(row.p_for)


def test_a_means_row_reads_the_mean_where_theta_reads_the_median_of_differences():
    """A skewed group whose mean and θ fall on opposite sides of 0: NoClip's agents 0, 0, 0, 0, 0, 0, 30 (mean
    4.3) against PPO-M's 1 … 7 (mean 4): μ_A − μ_B = +0.29 while the Hodges–Lehmann θ is −3: the claim now
    reports the former (inconclusive either way at 7 agents)."""
    claim = claims.by_key("noclip-beats-ppo-m")
    a, b = [0.0] * 6 + [30.0], [float(i) for i in range(1, 8)]
    row = claims.evaluate(pd.concat([_ev(claim.evidence, a, "ppo-noclip"), _ev(claim.evidence, b, "ppo-m")]),
                          claims=[claim]).iloc[0]
    assert row.value == pytest.approx(30 / 7 - 4.0) and stats.shift_interval(a, b).estimate == pytest.approx(-3.0)
    assert row.verdict == "inconclusive"


def test_matches_ppo_is_a_band_on_the_difference_of_mean_relative_scores():
    """Relative scores (over PPO's median score): NoClip's mean 0.02 above PPO's, spreads 0.01: inside ±0.15; its
    p is the TOST's, the larger of the two one-sided permutation p's."""
    claim = claims.by_key("noclip-matches-ppo")
    a, b = list(1.02 + np.linspace(-0.01, 0.01, 6)), list(1.0 + np.linspace(-0.01, 0.01, 6))
    row = claims.evaluate(pd.concat([_ev(claim.evidence, a, "ppo-noclip"), _ev(claim.evidence, b, "ppo")]),
                          claims=[claim]).iloc[0]
    assert row.verdict == "holds" and row.value == pytest.approx(0.02)
    assert row.p_for == max(stats.mean_difference_p(a, b, -0.15, ">"), stats.mean_difference_p(a, b, 0.15, "<"))


def test_min_mean_difference_is_bonferroni_over_the_two_differences():
    """TRPO+ − PPO-M and PPO − TRPO by mean agents, each at 1 − 0.05/2; the smallest estimate and ends; p for the
    side the larger of the two ">" p's. A failed PPO seed is left out and named."""
    claim = claims.by_key("optimizations-matter-more-than-step")
    rng = np.random.default_rng(5)
    scores = {"ppo": 3000 + 100 * rng.standard_normal(7), "trpo": 2700 + 100 * rng.standard_normal(7),
              "trpo+": 3050 + 100 * rng.standard_normal(7), "ppo-m": 2600 + 100 * rng.standard_normal(7)}
    ev = pd.concat([_ev(claim.evidence, list(v) + ([-np.inf] if lab == "ppo" else []), lab)
                    for lab, v in scores.items()])
    row = claims.evaluate(ev, claims=[claim]).iloc[0]
    ivs = [stats.mean_difference_interval(scores[a], scores[b], 0.975) for a, b in claim.differences]
    assert row.value == pytest.approx(min(i.estimate for i in ivs))
    assert (row.low, row.high) == pytest.approx((min(i.low for i in ivs), min(i.high for i in ivs)))
    assert row.coverage == pytest.approx(0.95) and row.estimate == "smallest " + claims.MEANS.name
    assert row.p_for == max(stats.mean_difference_p(scores[a], scores[b]) for a, b in claim.differences)
    assert row.agree == "ppo 7 (1 failed seed left out), ppo-m 7, trpo 7, trpo+ 7" and row.verdict == "holds"


def coverage_table(reps: int = 2000, check: int = 0) -> list:
    """Rows: population, n, the accepted set's coverage of μ_A − μ_B and its misses below and above (the
    interval's low end above Δ: a wrong "holds" for ">"), Welch's coverage on the same draws, and, for the first
    ``check`` draws, how many the bisected interval covers differently from the accepted set."""
    rows = []
    for name in POPULATIONS:
        for n in SIZES:
            A, B, delta = _draw(name, n, reps, 500_000 + 1000 * SIZES.index(n) + list(POPULATIONS).index(name))
            half = (1 - LEVEL) / 2
            below, above = [], []
            for i in range(0, reps, 50):
                a, b = np.sort(A[i:i + 50], axis=1), np.sort(B[i:i + 50], axis=1)
                up, down = stats.means._mean_ps(stats.means._mean_parts(a, b), delta - (a.mean(axis=1) - b.mean(axis=1)))
                below.append(up <= half)       # the low end lies above Δ
                above.append(down <= half)     # the high end lies below Δ
            below, above = np.concatenate(below), np.concatenate(above)
            row = {"population": name, "n": n, "coverage": 1 - (below | above).mean(), "low_above": below.mean(),
                   "high_below": above.mean(), "welch": _welch_covers(A, B, delta).mean()}
            if check:
                low, high = _intervals(A[:check], B[:check])
                row["differ"] = int(np.sum(((low <= delta) & (delta <= high)) != ~(below | above)[:check]))
            rows.append(row)
            print(" | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row.values()), flush=True)
    return rows


if __name__ == "__main__":
    coverage_table(int(sys.argv[1]) if len(sys.argv) > 1 else 2000, int(sys.argv[2]) if len(sys.argv) > 2 else 0)
