"""Statistics for the tables: bootstrap confidence intervals and AAI / ACLI.

IM Table 2 and 3 report, per algorithm and task, the mean agent reward with a
95% confidence interval from a 1000-sample bootstrap over agents (ref §4.2
item 10; a percentile bootstrap of the mean), and two summary metrics (IM §5):

* AAI (average algorithmic improvement) = max(|PPO − TRPO+|, |PPO-M − TRPO|),
  the largest effect of switching the step with the optimizations held fixed;
* ACLI (average code-level improvement) = max(|PPO − PPO-M|, |TRPO+ − TRPO|),
  the largest effect of adding the optimizations with the step held fixed.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np


def bootstrap_mean_ci(values, resamples: int = 1000, level: float = 0.95, seed: int = 0):
    """Mean of ``values`` and its percentile-bootstrap confidence interval.

    Returns ``(mean, low, high)``. NaNs are dropped first; with fewer than two
    finite values the interval is (nan, nan).
    """
    x = np.asarray(values, np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return float("nan"), float("nan"), float("nan")
    if x.size == 1:
        return float(x[0]), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return float(x.mean()), float(low), float(high)


def difference_ci(on, off, resamples: int = 1000, seed: int = 0):
    """mean(on) − mean(off) with a 95% percentile-bootstrap CI (each group resampled on its own)."""
    on, off = np.asarray(on, float), np.asarray(off, float)
    on, off = on[np.isfinite(on)], off[np.isfinite(off)]
    if len(on) == 0 or len(off) == 0:
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    boot = (rng.choice(on, (resamples, len(on))).mean(1) - rng.choice(off, (resamples, len(off))).mean(1))
    return float(on.mean() - off.mean()), float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))


def aai(means: Mapping[str, float]) -> float:
    """Average algorithmic improvement, IM §5: max(|PPO − TRPO+|, |PPO-M − TRPO|)."""
    return max(abs(means["ppo"] - means["trpo+"]), abs(means["ppo-m"] - means["trpo"]))


def acli(means: Mapping[str, float]) -> float:
    """Average code-level improvement, IM §5: max(|PPO − PPO-M|, |TRPO+ − TRPO|)."""
    return max(abs(means["ppo"] - means["ppo-m"]), abs(means["trpo+"] - means["trpo"]))


def index_ci(scores: Mapping[str, "np.ndarray"], index, resamples: int = 1000, level: float = 0.95, seed: int = 0):
    """An index of the algorithms' mean scores (:func:`aai`, :func:`acli`) with its percentile-bootstrap CI:
    each algorithm's agents resampled on their own, the index taken of every resample's means. Returns
    ``(value, low, high)``; (value, nan, nan) when an algorithm has fewer than two agents. (An index of
    absolute differences is biased upward when the differences are small beside their noise; the interval
    says how far.)"""
    clean = {k: np.asarray(v, np.float64)[np.isfinite(np.asarray(v, np.float64))] for k, v in scores.items()}
    value = float(index({k: v.mean() for k, v in clean.items()}))
    if any(v.size < 2 for v in clean.values()):
        return value, float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    boot = {k: v[rng.integers(0, v.size, size=(resamples, v.size))].mean(axis=1) for k, v in clean.items()}
    draws = np.array([index({k: b[i] for k, b in boot.items()}) for i in range(resamples)])
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(draws, [alpha, 1.0 - alpha])
    return value, float(low), float(high)


#: IM Table 2 and 3 as published (ref §5): mean [95% CI].
PUBLISHED = {
    "walker2d": {"ppo": (3292, 3157, 3426), "ppo-m": (2735, 2602, 2866), "trpo": (2791, 2709, 2873),
                 "trpo+": (3050, 2976, 3126), "ppo-noclip": (2867, 2701, 3024), "aai": 242, "acli": 557},
    "hopper": {"ppo": (2513, 2391, 2632), "ppo-m": (2142, 2008, 2279), "trpo": (2043, 1948, 2136),
               "trpo+": (2466, 2381, 2549), "ppo-noclip": (2371, 2316, 2424), "aai": 99, "acli": 421},
    "humanoid": {"ppo": (806, 785, 827), "ppo-m": (674, 656, 695), "trpo": (586, 576, 596),
                 "trpo+": (1030, 979, 1083), "ppo-noclip": (831, 798, 869), "aai": 224, "acli": 444},
}
