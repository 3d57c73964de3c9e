"""Two groups of independent agents: the coverage and power of the studentized permutation Brunner–Munzel test
and its interval (pgdiag.stats.shift_p / shift_interval) beside the order-statistic median difference it
replaces for group comparisons (median_difference_p / median_difference_interval). Prints a Markdown table.

Per cell (agents per group × population), seeded, ``--reps`` replicates each:

* coverage of the 95% intervals, each of its own estimand: shift_interval of θ = median(A − B),
  median_difference_interval of median(A) − median(B) (the same θ except for the unequal-σ population);
* power at a 2-SD shift (θ = 2 SD, one-sided α = 0.05) of shift_p and of median_difference_p (threshold 0);
* shift_power_effect / shift_power_sd at one-sided 0.05 and power 0.8, and the simulated power of shift_p where
  the population's relative effect P(A > B) + ½·P(A = B) equals shift_power_effect (what the report's sentence
  "detects P(A > B) ≥ … with probability 0.8" promises; "—" where the population cannot reach it).

Populations (A is shifted by s; SD = the SD the 2-SD shift is counted in):

* normal: A = N(s, 1), B = N(0, 1); SD 1.
* lognormal: A = s + LN(0, 1), B = LN(0, 1); SD √((e − 1)e) = 2.16.
* lognormal-unequal-σ: A = s + LN(0, 1), B = LN(0, 0.5); θ = s − s₀ (s₀ solves P(LN(0, 1) + s₀ > LN(0, 0.5))
  = ½, by quadrature), median(A) − median(B) = s; SD = the root mean square of the two groups' SDs.
* failed-seed: 20% of each group at −inf (a failed seed), the rest N(s, 1) and N(0, 1); SD 1 (of the agents
  that ran).

    python benchmarks/groups_power.py [--reps 1000] [--sizes 5 7 8 16]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import integrate, optimize, stats as sps

from pgdiag import stats

POPULATIONS = ("normal", "lognormal", "lognormal-unequal-σ", "failed-seed")
ALPHA = 0.05
FAILED = 0.2


def _sigmas(population: str) -> tuple[float, float]:
    return (1.0, 0.5) if population == "lognormal-unequal-σ" else (1.0, 1.0)


def draw(rng, population: str, reps: int, n: int, s: float) -> tuple[np.ndarray, np.ndarray]:
    """(A, B): (reps, n) agents of each group, A shifted by s."""
    if population == "normal":
        return rng.normal(s, 1.0, (reps, n)), rng.normal(0.0, 1.0, (reps, n))
    if population == "failed-seed":
        a, b = rng.normal(s, 1.0, (reps, n)), rng.normal(0.0, 1.0, (reps, n))
        a[rng.random((reps, n)) < FAILED] = -np.inf
        b[rng.random((reps, n)) < FAILED] = -np.inf
        return a, b
    sa, sb = _sigmas(population)
    return s + rng.lognormal(0.0, sa, (reps, n)), rng.lognormal(0.0, sb, (reps, n))


def relative_effect(population: str, s: float) -> float:
    """P(A > B) + ½·P(A = B) of the population with A shifted by s (closed form or quadrature)."""
    if population == "normal":
        return float(sps.norm.cdf(s / math.sqrt(2.0)))
    if population == "failed-seed":                      # A failed & B ran: 0; A ran & B failed: 1; both: ½
        ran = (1.0 - FAILED) ** 2
        return FAILED * (1.0 - FAILED) + 0.5 * FAILED ** 2 + ran * float(sps.norm.cdf(s / math.sqrt(2.0)))
    sa, sb = _sigmas(population)

    def integrand(z):                                    # B = exp(sb·z): P(s + LN(0, sa) > B)
        y = math.exp(sb * z) - s
        return (1.0 if y <= 0 else float(sps.norm.sf(math.log(y) / sa))) * float(sps.norm.pdf(z))

    return float(integrate.quad(integrand, -12.0, 12.0, limit=200, points=[0.0])[0])


def solve_shift(population: str, effect: float) -> float:
    """The shift s at which the population's relative effect is ``effect`` (NaN where it cannot be reached)."""
    lo, hi = -50.0, 50.0
    if not relative_effect(population, lo) < effect < relative_effect(population, hi):
        return math.nan
    return float(optimize.brentq(lambda s: relative_effect(population, s) - effect, lo, hi, xtol=1e-10))


def sd(population: str) -> float:
    if population in ("normal", "failed-seed"):
        return 1.0
    var = [(math.e ** (s * s) - 1.0) * math.e ** (s * s) for s in _sigmas(population)]
    return math.sqrt(sum(var) / 2.0)


def cell(population: str, n: int, reps: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    s0 = solve_shift(population, 0.5)                    # θ = s − s0 (s0 = 0 for a shift family)
    A, B = draw(rng, population, reps, n, 0.0)
    theta, meddiff = -s0, 0.0
    cover_shift = cover_median = 0
    for a, b in zip(A, B):
        iv = stats.shift_interval(a, b)
        cover_shift += iv.low <= theta <= iv.high
        iv = stats.median_difference_interval(a, b)
        cover_median += iv.low <= meddiff <= iv.high
    A, B = draw(rng, population, reps, n, 2.0 * sd(population) + s0)      # θ = 2 SD
    power_shift = np.mean([stats.shift_p(a, b, 0.0, ">") <= ALPHA for a, b in zip(A, B)])
    power_median = np.mean([stats.median_difference_p(a, b, 0.0, ">") <= ALPHA for a, b in zip(A, B)])
    p80 = stats.shift_power_effect(n, n, ALPHA)
    s80 = solve_shift(population, p80) if p80 < 1.0 else math.nan
    if math.isnan(s80):
        power80 = math.nan
    else:
        A, B = draw(rng, population, reps, n, s80)
        power80 = float(np.mean([stats.shift_p(a, b, 0.0, ">") <= ALPHA for a, b in zip(A, B)]))
    return dict(cover_shift=cover_shift / reps, cover_median=cover_median / reps, power_shift=float(power_shift),
                power_median=float(power_median), p80=p80, delta80=stats.shift_power_sd(n, n, ALPHA),
                power80=power80)


def _f(x: float) -> str:
    return "—" if math.isnan(x) else f"{x:.3f}"


def main(argv=None) -> list:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=1000)
    p.add_argument("--sizes", type=int, nargs="+", default=[5, 7, 8, 16])
    args = p.parse_args(argv)
    start, rows = time.perf_counter(), []
    print(f"{args.reps} seeded replicates per cell; α = {ALPHA} one-sided for power; intervals at 0.95.\n")
    print("| agents per group | population | coverage shift_interval | coverage median_difference_interval "
          "| power shift_p (2 SD) | power median_difference_p (2 SD) | shift_power_effect | shift_power_sd "
          "| power shift_p at that effect |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        for k, population in enumerate(POPULATIONS):
            r = cell(population, n, args.reps, seed=1000 * n + k)
            rows.append((n, population, r))
            print(f"| {n} v {n} | {population} | {r['cover_shift']:.3f} | {r['cover_median']:.3f} "
                  f"| {r['power_shift']:.3f} | {r['power_median']:.3f} | {r['p80']:.3f} | {r['delta80']:.2f} "
                  f"| {_f(r['power80'])} |", flush=True)
    print(f"\n({time.perf_counter() - start:.0f} s)")
    return rows


if __name__ == "__main__":
    main()
