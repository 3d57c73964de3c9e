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

from pgdiag.stats import indices, means, medians, shift_power, shifts  # noqa: F401
from pgdiag.stats.medians import (Interval, median_coverage, median_interval, sign_test_p, band_p, sign_test_power,
                                  sign_test_detectable, mean_power_sd, median_difference_interval, median_difference_p)
from pgdiag.stats.shift_power import shift_power_effect, shift_power_sd
from pgdiag.stats.shifts import relative_effect, shift_p, shift_interval, smallest_shift_p
from pgdiag.stats.means import (mean_difference_p, mean_difference_interval)
from pgdiag.stats.indices import (holm, t_interval, t_coverage_on_skewed, welch_interval, pairwise_interval,
                                  INDEX_DIFFERENCES, aai, acli, index_interval, min_difference_interval,
                                  OPTIMIZATIONS_OVER_STEP, PUBLISHED)

__all__ = [
    "Interval", "median_coverage", "median_interval", "sign_test_p", "band_p", "sign_test_power",
    "sign_test_detectable", "mean_power_sd", "median_difference_interval", "median_difference_p", "relative_effect",
    "shift_p", "shift_interval", "smallest_shift_p", "shift_power_effect", "shift_power_sd", "mean_difference_p",
    "mean_difference_interval", "holm", "t_interval", "t_coverage_on_skewed", "welch_interval", "pairwise_interval",
    "INDEX_DIFFERENCES", "aai", "acli", "index_interval", "min_difference_interval", "OPTIMIZATIONS_OVER_STEP",
    "PUBLISHED",
]
