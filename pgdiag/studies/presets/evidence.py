"""Evidence from the algorithms' final scores (IM §5, Tables 2/3)."""

from __future__ import annotations

import numpy as np


def score_evidence(scores) -> list:
    """From IM Table 2/3's per-agent scores (task, algorithm, agent, score): the scores, and each over the
    absolute median score of its task's PPO agents (for "matches PPO"). An agent without a finite score
    (diverged) is a failed seed: it keeps the lowest rank (−inf), as the median comparisons read it."""
    scores = scores.assign(score=scores.score.astype(float).fillna(-np.inf))
    rows = [{"evidence": "im_score", "task": r.task, "label": r.algorithm, "agent": str(r.agent),
             "value": float(r.score)} for r in scores.itertuples(index=False)]
    for task, part in scores.groupby("task"):
        ppo = part[part.algorithm == "ppo"].score
        ppo = float(np.median(ppo)) if len(ppo) else np.nan
        if np.isfinite(ppo) and ppo != 0:
            rows += [{"evidence": "im_score_relative", "task": task, "label": r.algorithm, "agent": str(r.agent),
                      "value": float(r.score / abs(ppo))} for r in part.itertuples(index=False)]
    return rows
