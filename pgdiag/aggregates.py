"""Aggregates over tasks × seeds with stratified bootstrap intervals (Agarwal et al. 2021, "Deep Reinforcement
Learning at the Edge of the Statistical Precipice"; the estimators of its `rliable` package, computed here).

Scores are normalized per task (0: the task's reference low, 1: its reference high; [`normalize`][
pgdiag.aggregates.normalize]) and arranged per algorithm as a matrix of runs (seeds) × tasks. The point
estimates are rliable's, definition for definition:

* median: the median over tasks of each task's mean over runs;
* IQM: the 25%-trimmed mean of every run × task score (scipy's `trim_mean`, ⌊n/4⌋ cut at each end);
* mean; optimality gap: γ less the mean of the scores clipped at γ (γ = 1);
* probability of improvement P(X > Y): per task the Mann–Whitney statistic over all run pairs (a tie counts
  one half), averaged over tasks.

Intervals are percentile intervals of the *stratified* bootstrap: each replicate resamples, with replacement,
each task's runs from that task's own (so every task keeps its weight); for a probability of improvement the
two algorithms' runs are resampled independently. Tested against rliable's own numbers on fixed score tables
(`tests/data/rliable_fixtures.json`, made where rliable 1.2.0 runs) and against closed forms.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from pgdiag.config import Range, Setting

#: the point estimates `aggregate` reports, in its order
ESTIMATORS = ("median", "iqm", "mean", "optimality_gap")
#: bootstrap replicates of every interval here (``pgdiag aggregate --reps``, which refuses fewer than the range's
#: low end; the functions take any count)
REPS = Setting(2000, "Bootstrap replicates.", Range(100), why="for 95% percentile intervals")


def normalize(scores, low: float, high: float) -> np.ndarray:
    """Scores on a task as a fraction of the way from its reference ``low`` to ``high``."""
    if not high > low:
        raise ValueError(f"normalize: the reference high must exceed the low, got low={low!r}, high={high!r}")
    return (np.asarray(scores, np.float64) - low) / (high - low)


def _matrix(scores, name: str = "scores") -> np.ndarray:
    x = np.asarray(scores, np.float64)
    if x.ndim != 2 or min(x.shape) < 1 or not np.isfinite(x).all():
        raise ValueError(f"{name} must be a finite runs × tasks matrix, got shape {x.shape}")
    return x


# Each estimator takes a runs × tasks matrix, or a stack of them [..., runs, tasks] (the bootstrap's replicates).
def median(scores):
    """The median over tasks of each task's mean over runs."""
    return _scalar(np.median(np.mean(scores, axis=-2), axis=-1))


def iqm(scores):
    """The interquartile mean: the mean of every run × task score after ⌊n/4⌋ are cut at each end."""
    x = np.asarray(scores, np.float64)
    flat = np.sort(x.reshape(x.shape[:-2] + (-1,)), axis=-1)
    cut = int(0.25 * flat.shape[-1])
    return _scalar(np.mean(flat[..., cut:flat.shape[-1] - cut], axis=-1))


def mean(scores):
    """The mean of every run × task score."""
    return _scalar(np.mean(scores, axis=(-2, -1)))


def optimality_gap(scores, gamma: float = 1.0):
    """γ less the mean of the scores clipped at γ: how far from γ the algorithm falls, on average."""
    return _scalar(gamma - np.mean(np.minimum(scores, gamma), axis=(-2, -1)))


def _scalar(x):
    """A float for one matrix; the array for a stack."""
    return float(x) if np.ndim(x) == 0 else x


def probability_of_improvement(x, y) -> float:
    """P(X > Y): per task the fraction of run pairs (x_i, y_j) with x_i > y_j, a tie counting one half
    (the Mann–Whitney U over m·n), averaged over tasks."""
    x, y = _matrix(x, "x"), _matrix(y, "y")
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"probability_of_improvement: x has {x.shape[1]} tasks, y {y.shape[1]}")
    greater = (x[:, None, :] > y[None, :, :]).mean(axis=(0, 1))
    ties = (x[:, None, :] == y[None, :, :]).mean(axis=(0, 1))
    return float(np.mean(greater + 0.5 * ties))


#: estimator name -> its function
FUNCTIONS: Mapping[str, Callable] = {"median": median, "iqm": iqm, "mean": mean, "optimality_gap": optimality_gap}


def stratified_resample(scores: np.ndarray, reps: int, rng: np.random.Generator) -> np.ndarray:
    """``reps`` bootstrap replicates [reps, runs, tasks]: each task's runs drawn with replacement from its own."""
    runs, tasks = scores.shape
    idx = rng.integers(0, runs, size=(reps, runs, tasks))
    return np.take_along_axis(np.broadcast_to(scores, (reps, runs, tasks)), idx, axis=1)


def _percentile(values: np.ndarray, level: float) -> tuple[float, float]:
    low, high = np.percentile(values, [50 * (1 - level), 50 * (1 + level)])
    return float(low), float(high)


def interval(scores, estimator: str, reps: int = REPS.default, level: float = 0.95, seed: int = 0) -> tuple:
    """(estimate, low, high) of ``estimator`` (one of `ESTIMATORS`) on a runs × tasks matrix, its interval the
    stratified bootstrap's percentile interval."""
    if estimator not in FUNCTIONS:
        raise ValueError(f"unknown estimator {estimator!r}; estimators: {', '.join(ESTIMATORS)}")
    x = _matrix(scores)
    fn = FUNCTIONS[estimator]
    boot = stratified_resample(x, reps, np.random.default_rng(seed))
    return (fn(x),) + _percentile(fn(boot), level)


def improvement_interval(x, y, reps: int = REPS.default, level: float = 0.95, seed: int = 0) -> tuple:
    """(P(X > Y), low, high): the two algorithms' runs resampled independently, each task from its own."""
    x, y = _matrix(x, "x"), _matrix(y, "y")
    rng = np.random.default_rng(seed)
    bx, by = stratified_resample(x, reps, rng), stratified_resample(y, reps, rng)
    values = np.array([probability_of_improvement(a, b) for a, b in zip(bx, by)])
    return (probability_of_improvement(x, y),) + _percentile(values, level)


def performance_profile(scores, taus, reps: int = REPS.default, level: float = 0.95, seed: int = 0) -> np.ndarray:
    """The fraction of runs × tasks scoring above each τ, with its stratified bootstrap interval: [len(taus), 3]
    (value, low, high)."""
    x = _matrix(scores)
    taus = np.asarray(taus, np.float64)
    boot = stratified_resample(x, reps, np.random.default_rng(seed))
    values = (boot[..., None] > taus).mean(axis=(1, 2))            # [reps, taus]
    low, high = np.percentile(values, [50 * (1 - level), 50 * (1 + level)], axis=0)
    return np.stack([(x[..., None] > taus).mean(axis=(0, 1)), low, high], axis=1)


def aggregate(score_dict: Mapping[str, np.ndarray], reps: int = REPS.default, level: float = 0.95, seed: int = 0):
    """Per algorithm and estimator: the estimate and its interval, as a DataFrame (algorithm, estimator,
    value, low, high, runs, tasks)."""
    import pandas as pd

    import zlib

    rows = []
    for name, scores in score_dict.items():
        x = _matrix(scores, name)
        stream = seed + 1000 * (zlib.crc32(str(name).encode()) % 1_000_000)   # by name: any order, same numbers
        for j, est in enumerate(ESTIMATORS):
            value, low, high = interval(x, est, reps, level, stream + j)
            rows.append({"algorithm": name, "estimator": est, "value": value, "low": low, "high": high,
                         "runs": x.shape[0], "tasks": x.shape[1]})
    return pd.DataFrame(rows)


__all__ = ["ESTIMATORS", "REPS", "aggregate", "improvement_interval", "interval", "iqm", "mean", "median", "normalize",
           "optimality_gap", "performance_profile", "probability_of_improvement", "stratified_resample"]
