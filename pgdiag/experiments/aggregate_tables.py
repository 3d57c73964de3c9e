"""rliable's aggregates of a study's agent scores: one table per comparison and a figure of performance profiles,
written beside the study's own outputs ([`pgdiag.aggregates`][pgdiag.aggregates]).

``scores`` is a table with one row per agent: ``label`` (the algorithm, or a toggle on or off), ``task`` and
``score``. Scores are normalized per task (the ranges given, else the lowest and highest score any agent reached
on the task, said in the note), and each label needs the same number of finite scores on every task: the
stratified bootstrap resamples each task's agents from its own. An agent without a finite score (it diverged) is
left out and named.
"""

from __future__ import annotations

import os

import numpy as np

from pgdiag import aggregates
from pgdiag.config import ConfigError

#: the performance profiles' thresholds on the normalized score
TAUS = np.linspace(0.0, 1.0, 21)
COVERAGE = "coverage 0.82–0.93 at 5–10 seeds (benchmarks/aggregates_coverage.py)"


def normalized(scores, ranges: dict | None = None) -> tuple[dict, dict]:
    """{label: runs × tasks normalized scores} and {task: (low, high, source)}."""
    tasks = sorted(scores.task.unique())
    ranges = dict(ranges or {})
    unknown = sorted(set(ranges) - set(tasks))
    if unknown:
        raise ConfigError(f"aggregate: --range names {', '.join(unknown)}, not among the runs' tasks "
                          f"({', '.join(tasks)})")
    used = {}
    for task in tasks:
        got = scores[scores.task == task].score
        used[task] = (*ranges[task], "given") if task in ranges else (got.min(), got.max(), "the runs' own")
        if not used[task][1] > used[task][0]:
            raise ConfigError(f"aggregate: every score on {task} is {used[task][0]:g}; give its reference range")
    out = {}
    for label, part in scores.groupby("label", sort=False):
        counts = part.groupby("task").size().reindex(tasks, fill_value=0)
        if counts.nunique() != 1 or counts.iloc[0] == 0:
            raise ConfigError(f"aggregate: {label!r} has {dict(counts)} agents per task; every task needs the "
                              f"same number (the bootstrap resamples each task's runs from its own)")
        columns = [aggregates.normalize(part[part.task == t].score.to_numpy(), *used[t][:2]) for t in tasks]
        out[label] = np.stack(columns, axis=1)
    return out, used


def improvements(by_label: dict, pairs, reps: int, seed: int):
    """P(X > Y) with its interval for each (X, Y) in ``pairs``."""
    import pandas as pd

    rows = [dict(zip(("x", "y"), (x, y)), **dict(zip(("p_improvement", "low", "high"), aggregates.improvement_interval(
        by_label[x], by_label[y], reps=reps, seed=seed)))) for x, y in pairs]
    return pd.DataFrame(rows, columns=["x", "y", "p_improvement", "low", "high"])


def plot_profiles(by_label: dict, path: str, title: str, reps: int, seed: int) -> str:
    """Each label's performance profile (fraction of runs × tasks above τ) with its 95% band, one legend."""
    from pgdiag.experiments import figures

    plt = figures.pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for label, x in by_label.items():
        prof = aggregates.performance_profile(x, TAUS, reps=reps, seed=seed)
        (line,) = ax.plot(TAUS, prof[:, 0], label=str(label))
        ax.fill_between(TAUS, prof[:, 1], prof[:, 2], color=line.get_color(), alpha=0.2)
    ax.set_xlabel("normalized score τ")
    ax.set_ylabel("fraction of runs × tasks > τ")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=9)
    return figures.save(fig, path, title)


def summarize(scores, what: str, pairs=(), ranges: dict | None = None, reps: int = aggregates.REPS.default,
              seed: int = 0) -> dict:
    """The aggregates of ``scores`` (and P(X > Y) for ``pairs``): ``table``, ``improvements``, ``ranges``,
    ``note`` (``what`` says what a score is) and the normalized matrices ``by_label``."""
    finite = np.isfinite(scores.score.to_numpy(np.float64))
    by_label, used = normalized(scores[finite], ranges)
    note = (f"score: {what}, normalized per task by "
            + "; ".join(f"{t} [{lo:g}, {hi:g}] ({src})" for t, (lo, hi, src) in used.items())
            + f". 95% percentile intervals of the stratified bootstrap ({reps} replicates), {COVERAGE}.")
    if (~finite).any():
        note += " Left out, with no finite score: " + ", ".join(
            f"{r.label} on {r.task}" for r in scores[~finite].itertuples()) + "."
    return {"table": aggregates.aggregate(by_label, reps=reps, seed=seed), "ranges": used, "note": note,
            "improvements": improvements(by_label, pairs, reps, seed), "by_label": by_label, "reps": reps,
            "seed": seed}


def write_aggregates(summary: dict, path_stem: str, title: str) -> dict:
    """`summarize`'s table (its P(X > Y) rows after it) as Markdown and CSV at ``path_stem``, the performance
    profiles at ``path_stem``-profiles.png; returns ``summary`` with the paths."""
    from pgdiag.experiments import figures

    os.makedirs(os.path.dirname(path_stem) or ".", exist_ok=True)
    md, csv = figures.write_table(combined(summary["table"], summary["improvements"]), path_stem, title,
                                  summary["note"])
    figure = plot_profiles(summary["by_label"], f"{path_stem}-profiles.png", title, summary["reps"], summary["seed"])
    return {**summary, "markdown": md, "csv": csv, "figure": figure}


def combined(table, improvements):
    """The aggregate rows, then the P(X > Y) rows in the same columns (estimator "P(x > y)")."""
    import pandas as pd

    table = table.round(4)
    if improvements is None or not len(improvements):
        return table
    rows = pd.DataFrame({"algorithm": improvements.x + " vs " + improvements.y, "estimator": "P(x > y)",
                         "value": improvements.p_improvement, "low": improvements.low, "high": improvements.high})
    return pd.concat([table, rows.round(4)], ignore_index=True)


__all__ = ["COVERAGE", "TAUS", "combined", "improvements", "normalized", "plot_profiles", "summarize",
           "write_aggregates"]
