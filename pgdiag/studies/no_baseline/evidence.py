"""Evidence from PPO trained without a baseline (CL §5.2)."""

from __future__ import annotations

import numpy as np


def no_baseline_evidence(scores) -> list:
    """From per-agent final scores (task, algorithm, agent, score): each agent's score over the absolute median
    score of its task's PPO agents (``nobaseline_score_relative``), so that "an order of magnitude worse" is read on
    one scale across tasks. A diverged agent (no finite score) keeps the lowest rank (−inf); a mean leaves it out
    and says so."""
    rows = []
    scores = scores.assign(score=scores.score.astype(float).fillna(-np.inf))
    for task, part in scores.groupby("task"):
        ppo = part[part.algorithm == "ppo"].score
        ppo = float(np.median(ppo)) if len(ppo) else np.nan
        if np.isfinite(ppo) and ppo != 0:
            rows += [{"evidence": "nobaseline_score_relative", "task": task, "label": r.algorithm,
                      "agent": str(r.agent), "value": float(r.score / abs(ppo))} for r in part.itertuples(index=False)]
    return rows
