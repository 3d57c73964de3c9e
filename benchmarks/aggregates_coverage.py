"""How often the stratified bootstrap's 95% percentile intervals (pgdiag.aggregates) cover the true value, at the
seed and task counts the studies use, on normal and skewed (lognormal) scores. Prints a Markdown table.

Each task's scores are drawn from its own population (tasks differ in location); the true value of an estimator
is computed on a very large sample of the same populations (2,000 runs per task).

    python benchmarks/aggregates_coverage.py [--datasets 400] [--reps 1000]
"""

from __future__ import annotations

import argparse

import numpy as np

from pgdiag import aggregates as ag

SHAPES = ((5, 2), (5, 4), (10, 4), (8, 3))          # (runs, tasks): fig-ablation's 5 seeds × 2 tasks, …


def draw(rng, population: str, runs: int, tasks: int) -> np.ndarray:
    shift = np.linspace(0.2, 0.8, tasks)
    if population == "normal":
        return shift + 0.25 * rng.standard_normal((runs, tasks))
    return shift * rng.lognormal(-0.18, 0.6, size=(runs, tasks))    # mean ≈ shift, right-skewed


def coverage(estimator: str, population: str, runs: int, tasks: int, datasets: int, reps: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    truth = ag.FUNCTIONS[estimator](draw(np.random.default_rng(10_000 + seed), population, 2000, tasks))
    hits = 0
    for d in range(datasets):
        _, low, high = ag.interval(draw(rng, population, runs, tasks), estimator, reps=reps, seed=d)
        hits += low <= truth <= high
    return hits / datasets


def main(argv=None) -> list:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", type=int, default=400)
    p.add_argument("--reps", type=int, default=1000)
    args = p.parse_args(argv)
    rows = []
    print("| estimator | population | runs × tasks | coverage of the 95% interval |")
    print("|---|---|---|---|")
    for est in ("iqm", "median", "mean", "optimality_gap"):
        for population in ("normal", "lognormal"):
            for runs, tasks in SHAPES:
                c = coverage(est, population, runs, tasks, args.datasets, args.reps)
                rows.append((est, population, runs, tasks, c))
                print(f"| {est} | {population} | {runs} × {tasks} | {c:.3f} |", flush=True)
    return rows


if __name__ == "__main__":
    main()
