"""`pgdiag aggregate RUN…`: the final scores of saved runs as runs × tasks matrices per algorithm, normalized
and aggregated over tasks × seeds ([`pgdiag.aggregates`][pgdiag.aggregates]).

An agent's score is the last value of `metric` it recorded (an iteration where an episode ended); its task is its
configuration's, its algorithm the sweep's label (else its configuration's algorithm). Each algorithm needs the same
number of agents on every task (the bootstrap resamples each task's runs from its own). Scores are normalized per
task by the reference range given (`TASK=LOW,HIGH`: the papers' or your own), else by the lowest and highest final
score any algorithm reached on the task, which the table says.
"""

from __future__ import annotations

import itertools
import os

import numpy as np

from pgdiag.aggregates import REPS
from pgdiag.config import ConfigError, Setting
from pgdiag.experiments.aggregate_tables import summarize, write_aggregates
from pgdiag.experiments.aggregate_tables import normalized as matrices
from pgdiag.run import load_run

#: the recorded metric an agent is scored by (``pgdiag aggregate --metric``)
METRIC = Setting("mean_return", "The recorded metric scored: each agent's last value of it.")


def final_scores(paths, metric: str = METRIC.default):
    """A DataFrame (label, task, run, agent, iteration, score) of every agent's last recorded `metric`."""
    import pandas as pd

    rows = []
    for path in paths:
        try:
            run = load_run(path)
        except Exception as err:   # not a run directory, or unreadable: named with the path
            raise ConfigError(f"aggregate: {path!r} is not a readable run directory ({err})") from None
        if metric not in run.metrics:
            raise ConfigError(f"aggregate: {path!r} records no metric {metric!r}")
        recorded = run.metrics[np.isfinite(run.metrics[metric].to_numpy(np.float64))]
        last = recorded.sort_values("iteration").groupby("agent").tail(1)   # each agent's last recorded value
        missing = sorted(set(range(run.num_agents)) - set(last.agent.astype(int)))
        if missing:
            raise ConfigError(f"aggregate: {path!r}: agents {missing} never recorded {metric!r} (no episode ended?)")
        for r in last.itertuples():
            static = run.config(int(r.agent)).static
            label = getattr(r, "label", None) or static.algorithm   # a sweep's labels, else the algorithm
            rows.append({"label": label, "task": static.task, "run": path, "agent": int(r.agent),
                         "iteration": int(r.iteration), "score": float(getattr(r, metric))})
    return pd.DataFrame(rows)


def aggregate_runs(paths, metric: str = METRIC.default, ranges: dict | None = None, reps: int = REPS.default,
                   seed: int = 0, out: str | None = None) -> dict:
    """The aggregate table of the runs in `paths`, and where `out` is given its Markdown and CSV there, with the
    performance profiles' figure."""
    scores = final_scores(paths, metric)
    labels = sorted(set(scores.label))
    summary = summarize(scores, f"each agent's last recorded {metric}", pairs=list(itertools.combinations(labels, 2)),
                        ranges=ranges, reps=reps, seed=seed)
    if not out:
        return summary
    return write_aggregates(summary, os.path.join(out, "aggregates"), "Aggregates over tasks × seeds")


__all__ = ["METRIC", "aggregate_runs", "final_scores", "matrices"]
