"""IM's Tables 2 and 3 from a study's runs: one score per agent, the mean over agents with its interval, and the table
beside the published values (AAI and ACLI with their intervals where the agents' scores are given)."""

from __future__ import annotations

import numpy as np

from pgdiag.config import Choices, ConfigError, Setting
from pgdiag.experiments.figures import LABELS
from pgdiag.stats import PUBLISHED, aai, acli, index_interval, t_interval

#: the tables' reporting rule -> the per-iteration metric it reads
REPORTING = {"pgdiag": "mean_return", "original": "mean_return_reference"}
REPORTING_NOTES = {
    "pgdiag": "pgdiag's rule: the mean raw return of every episode that ended in an iteration (`mean_return`)",
    "original": "the original code's rule, as published: an episode ending on the batch's last step is left out "
                "unless no other episode ended in the batch (`mean_return_reference`)"}


#: the tables' two rules, declared once: the defaults and choices of the functions here, the targets' and the
#: command line's ``--statistic`` and ``--reporting``
STATISTIC = Setting("final", "Per-agent score: mean of the last 5 iterations (final) or max over training (max).",
                    Choices(("final", "max"), noun="statistic", intro="choose"))
REPORTING_RULE = Setting("pgdiag", "Which episodes an iteration's mean return counts: every one that ended (pgdiag) "
                                   "or the original code's rule, as published (original: mean_return_reference).",
                         Choices(tuple(REPORTING), noun="reporting rule"))


def check_rules(statistic: str, reporting: str) -> None:
    """One line naming a statistic or reporting rule the tables do not know, and the ones they do."""
    if statistic not in STATISTIC.allowed.all():
        raise ConfigError(f"unknown statistic {statistic!r}; choose {' or '.join(map(repr, STATISTIC.allowed.all()))}")
    REPORTING_RULE.normalize("reporting", reporting)   # "unknown reporting rule 'x'; choose one of: pgdiag, original"


def agent_scores(metrics, statistic: str = STATISTIC.default, reporting: str = REPORTING_RULE.default):
    """One score per (task, algorithm, agent): the mean of the last five iterations'
    mean reward (``final``) or the max over training (``max``), the mean reward under
    ``reporting``'s rule (see [`REPORTING`][pgdiag.studies.presets.tables.REPORTING])."""
    check_rules(statistic, reporting)
    column, keys = REPORTING[reporting], ["task", "algorithm", "agent"]
    if column not in metrics:
        raise ConfigError(f"reporting={reporting!r} needs the metric {column!r}, which these runs did not "
                          f"record (they predate it); retrain them or use reporting='pgdiag'")
    if statistic == "max":
        return metrics.groupby(keys)[column].max().rename("score").reset_index()
    last = metrics.iteration.max()
    tail = metrics[metrics.iteration > last - 5]
    return tail.groupby(keys)[column].mean().rename("score").reset_index()


def summarize(scores):
    """Mean score and its 95% Student-t interval over agents per (task, algorithm) (the agent the unit; the
    paper's percentile bootstrap covered 0.87 at 8 agents, [`pgdiag.stats`][pgdiag.stats])."""
    import pandas as pd

    rows = []
    for (task, algo), group in scores.groupby(["task", "algorithm"]):
        iv = t_interval(group.score.to_numpy())
        rows.append({"task": task, "algorithm": algo, "agents": iv.n, "mean": iv.estimate, "ci_low": iv.low,
                     "ci_high": iv.high, "left_out": int((~np.isfinite(group.score.to_numpy())).sum())})
    return pd.DataFrame(rows)


def _fmt(mean, low, high):
    if not np.isfinite(mean):
        return "—"
    return f"{mean:.0f} [{low:.0f}, {high:.0f}]" if np.isfinite(low) else f"{mean:.0f}"


def table(summary, algorithms, with_aai: bool, scores=None):
    """The table as a DataFrame (one row per algorithm, one column per task) with the published values in parallel
    columns; with the agents' ``scores`` ([`agent_scores`][pgdiag.studies.presets.agent_scores]), AAI
    and ACLI carry their intervals ([`pgdiag.stats.index_interval`][pgdiag.stats.index_interval])."""
    import pandas as pd

    tasks = list(dict.fromkeys(summary.task))
    by = {(r.task, r.algorithm): r for r in summary.itertuples()}
    rows = []
    for algo in algorithms:
        row = {"algorithm": LABELS[algo]}
        for task in tasks:
            r = by.get((task, algo))
            row[task] = _fmt(r.mean, r.ci_low, r.ci_high) if r is not None else "—"
            pub = PUBLISHED.get(task, {}).get(algo)
            row[f"{task} (published)"] = _fmt(*pub) if pub else "—"
        rows.append(row)
    if with_aai:
        for name, fn in (("AAI", aai), ("ACLI", acli)):
            row = {"algorithm": name}
            for task in tasks:
                four = [a for a in ("ppo", "ppo-m", "trpo", "trpo+") if (task, a) in by]
                if len(four) < 4:
                    row[task] = "—"
                elif scores is None:
                    row[task] = f"{fn({a: by[(task, a)].mean for a in four}):.0f}"
                else:
                    mine = scores[scores.task == task]
                    iv = index_interval({a: mine[mine.algorithm == a].score.to_numpy() for a in four}, name.lower())
                    row[task] = _fmt(iv.estimate, iv.low, iv.high)
                pub = PUBLISHED.get(task, {}).get(name.lower())
                row[f"{task} (published)"] = f"{pub}" if pub is not None else "—"
            rows.append(row)
    return pd.DataFrame(rows)


__all__ = ["REPORTING", "REPORTING_NOTES", "agent_scores", "check_rules", "summarize", "table"]
