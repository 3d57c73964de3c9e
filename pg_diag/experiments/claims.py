"""The verdicts on the claims of both papers: each claim (:mod:`.paper_claims`) a rule on measured evidence,
tested with an interval whose coverage is stated.

A claim quotes the paper's sentence (section and figure), names one *evidence* series — one value per
independent unit, extracted from saved studies by :mod:`pg_diag.experiments.evidence` — and states its rule,
threshold and why that threshold. The unit is the **agent** (an independently trained run): an agent measured
at several checkpoints or planes gives one value, the mean of its measurements, never several units. Tests:

* ``agents`` — the median agent, with the distribution-free order-statistic interval
  (:func:`pg_diag.stats.median_interval`; 95%, or [min, max] with its exact coverage 1 − 2/32 = 0.9375 at 5
  agents): *holds* when the whole interval lies on the paper's side of the threshold (or inside its band),
  *does not hold* when it lies wholly on the other side (or outside the band), *inconclusive* otherwise;
* ``groups`` — two groups of agents (two algorithms, or the hardest and easiest measured task) compared by the
  difference of their means with Welch's interval (:func:`pg_diag.stats.welch_interval`);
* ``min-difference`` — the smallest of several differences of algorithms' means, simultaneous Welch intervals
  (:func:`pg_diag.stats.min_difference_interval`);
* ``exact`` — a deterministic check of a theorem on one batch: every unit (optimizer) on the paper's side.

Below :data:`MIN_AGENTS` agents (per group) a claim gives no verdict: it says *k of n agents agree*. Everything
here is a pure function of evidence tables, tested on constructed tables where each claim must hold and where
it must fail (tests/test_claims.py).
"""

from __future__ import annotations

import numpy as np

from pg_diag import stats
from pg_diag.experiments.paper_claims import CLAIMS, KINDS, Claim, by_key

VERDICTS = ("holds", "does not hold", "inconclusive", "too few agents", "no claim")
MIN_AGENTS = 5
#: tasks in the order of their complexity (CL §5.1: "gradient variance is slightly lower" on Walker2d and
#: Hopper than on Humanoid); the task claim compares the hardest and the easiest of these that were measured
COMPLEXITY = ("hopper", "walker2d", "humanoid")


def _side(interval_low: float, interval_high: float, claim: Claim) -> str:
    if np.isnan(interval_low) or np.isnan(interval_high):
        return "inconclusive"
    if claim.test == "within":
        lo, hi = claim.threshold
        if lo < interval_low and interval_high < hi:
            return "holds"
        return "does not hold" if interval_high < lo or interval_low > hi else "inconclusive"
    t = claim.threshold
    if claim.test == "<":
        return "holds" if interval_high < t else "does not hold" if interval_low > t else "inconclusive"
    return "holds" if interval_low > t else "does not hold" if interval_high < t else "inconclusive"


def agrees(values, claim: Claim) -> np.ndarray:
    """Which units lie on the paper's side (or inside its band)."""
    v = np.asarray(values, np.float64)
    if claim.test == "within":
        return (v > claim.threshold[0]) & (v < claim.threshold[1])
    return v < claim.threshold if claim.test == "<" else v > claim.threshold


def per_agent(group) -> "np.ndarray":
    """One value per agent: the mean of its measurements, or their median where one is infinite (a censored
    value — "more than the grid holds" — has a rank but no size: one censored checkpoint of three must not
    make the agent's value infinite; it is so only when half or more of its checkpoints are)."""
    def one(values):
        v = values.to_numpy(np.float64)
        return float(np.median(v)) if np.isinf(v).any() else float(np.mean(v))
    with np.errstate(invalid="ignore"):
        return group.groupby("agent", sort=True)["value"].agg(one).to_numpy(np.float64)


def _row(claim: Claim, task: str, label: str, iv, agree: str, verdict: str, estimate_kind: str) -> dict:
    return {"paper": claim.paper, "claim": claim.key, "where": claim.where, "task": task, "label": label,
            "estimate": estimate_kind, "value": float(iv.estimate), "low": float(iv.low), "high": float(iv.high),
            "coverage": float(iv.coverage), "agents": int(iv.n), "agree": agree, "test": claim.rule(),
            "verdict": verdict}


def _agents_rows(claim: Claim, part) -> list:
    rows = []
    for (task, label), group in part.groupby(["task", "label"], sort=True):
        values = per_agent(group)
        values = values[~np.isnan(values)]
        if values.size == 0:
            continue
        on = int(agrees(values, claim).sum())
        iv = stats.median_interval(values)
        verdict = "too few agents" if values.size < MIN_AGENTS else _side(iv.low, iv.high, claim)
        rows.append(_row(claim, task, label, iv, f"{on} of {values.size}", verdict, "median agent"))
    return rows


def _groups_rows(claim: Claim, part) -> list:
    rows = []
    if claim.versus == "tasks":
        ranked = [t for t in COMPLEXITY if t in set(part.task)]
        if len(ranked) < 2:
            return rows
        hard, easy = ranked[-1], ranked[0]
        for label, group in part.groupby("label", sort=True):
            a, b = (per_agent(group[group.task == t]) for t in (hard, easy))
            rows.append(_compare(claim, f"{hard} − {easy}", label, a, b))
        return rows
    for task, group in part.groupby("task", sort=True):
        a = per_agent(group[group.label.isin(claim.labels)])
        b = per_agent(group[group.label == claim.versus])
        if a.size and b.size:
            rows.append(_compare(claim, task, f"{'/'.join(claim.labels)} − {claim.versus}", a, b))
    return rows


def _compare(claim: Claim, task: str, label: str, a, b) -> dict:
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]   # the agents Welch's interval reads, and counts
    iv = stats.welch_interval(a, b)
    few = min(a.size, b.size) < MIN_AGENTS
    verdict = "too few agents" if few else _side(iv.low, iv.high, claim)
    return _row(claim, task, label, iv, f"{a.size} vs {b.size} agents", verdict, "difference of means")


def _min_difference_rows(claim: Claim, part) -> list:
    rows = []
    needed = {x for pair in claim.differences for x in pair}
    for task, group in part.groupby("task", sort=True):
        scores = {lab: per_agent(group[group.label == lab]) for lab in needed}
        if any(v.size == 0 for v in scores.values()):
            continue
        iv = stats.min_difference_interval(scores, claim.differences)
        few = min(v.size for v in scores.values()) < MIN_AGENTS
        sizes = ", ".join(f"{lab} {scores[lab].size}" for lab in sorted(needed))
        rows.append(_row(claim, task, " / ".join(f"{a} − {b}" for a, b in claim.differences), iv, sizes,
                         "too few agents" if few else _side(iv.low, iv.high, claim), "smallest difference"))
    return rows


def _exact_rows(claim: Claim, part) -> list:
    rows = []
    for (task, label), group in part.groupby(["task", "label"], sort=True):
        values = group["value"].to_numpy(np.float64)
        on = agrees(values, claim)
        iv = stats.Interval(float(np.max(values) if claim.test == "<" else np.min(values)), float(np.min(values)),
                            float(np.max(values)), int(values.size), 1.0)
        # a value not measured (NaN) is neither side of a deterministic check
        verdict = "inconclusive" if np.isnan(values).any() else "holds" if on.all() else "does not hold"
        rows.append(_row(claim, task, label, iv, f"{int(on.sum())} of {values.size}", verdict,
                         "worst unit (deterministic)"))
    return rows


_EVALUATE = {"agents": _agents_rows, "groups": _groups_rows, "min-difference": _min_difference_rows,
             "exact": _exact_rows}
COLUMNS = ["paper", "claim", "where", "task", "label", "estimate", "value", "low", "high", "coverage", "agents",
           "agree", "test", "verdict"]


def evaluate(evidence, claims=CLAIMS, paper: str | None = None):
    """Every claim (of ``paper``, default both) whose evidence was measured: per task and algorithm (or per
    compared pair) the estimate, its interval and coverage, the agents, how many agree, and the verdict.
    ``evidence``: a DataFrame with columns evidence, task, label, agent, value (one row per measurement)."""
    import pandas as pd

    rows = []
    for claim in claims:
        if paper is not None and paper not in claim.paper.split():
            continue
        part = evidence[evidence.evidence == claim.evidence]
        if claim.labels and claim.kind == "agents":
            part = part[part.label.isin(claim.labels)]
        if claim.tasks:
            part = part[part.task.isin(claim.tasks)]
        if len(part):
            rows += _EVALUATE[claim.kind](claim, part)
    return pd.DataFrame(rows, columns=COLUMNS)


__all__ = ["CLAIMS", "COMPLEXITY", "KINDS", "Claim", "MIN_AGENTS", "VERDICTS", "agrees", "by_key", "evaluate",
           "per_agent"]
