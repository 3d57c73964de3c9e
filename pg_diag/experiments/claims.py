"""The qualitative claims of CL §5, each as a test on measured evidence with a confidence interval.

A claim names one *evidence* series (a statistic per measured unit — an agent at a checkpoint, an agent
across checkpoints, a landscape plane — extracted from saved studies by :mod:`pg_diag.experiments.report`),
the side of a threshold the paper says it lies on, and where the paper says so. :func:`evaluate` takes the
mean over units with a 95% percentile-bootstrap CI per task and algorithm, and gives a verdict:

* ``holds`` — the whole CI lies on the paper's side of the threshold;
* ``does not hold`` — the whole CI lies on the other side;
* ``inconclusive`` — the CI straddles it (more agents, checkpoints or pairs would decide), or fewer than
  two units were measured (no interval).

Thresholds are the papers' own words made numeric, stated beside each claim: "poorly correlated" is a mean
cosine below 0.5; differences ("worse over training", "helps", "aligned early, not late") are against 0.
Everything here is a pure function of tables, so it is tested on constructed evidence whose answer is known.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from pg_diag.stats import bootstrap_mean_ci

VERDICTS = ("holds", "does not hold", "inconclusive")


@dataclasses.dataclass(frozen=True)
class Claim:
    key: str
    where: str          # the paper's section and figure
    paper: str          # what the paper says, briefly, in quotation where a phrase is the paper's
    evidence: str       # the evidence series tested
    statistic: str      # what one unit's value is
    side: str           # "<" or ">": the paper's side of the threshold
    threshold: float


CLAIMS = (
    Claim("gradients-poorly-concentrated", "CL §5.1, Fig 2/11",
          "at the sample sizes used in practice, gradient estimates are poorly concentrated",
          "grad_pairwise_at_batch", "mean pairwise cosine of K estimates at the algorithm's batch size, per agent "
          "and checkpoint after the first", "<", 0.5),
    Claim("gradients-worsen-over-training", "CL §5.1, Fig 2",
          "concentration gets worse \"after the first few timesteps\"", "grad_pairwise_change",
          "mean pairwise cosine at the batch size, last checkpoint minus first, per agent", "<", 0.0),
    Claim("gradients-far-from-true", "CL §5.1, Fig 3/12",
          "estimates at the batch size are poorly correlated with the true gradient", "grad_true_at_batch",
          "mean cosine of the K estimates to the large-sample gradient at the batch size, per agent and checkpoint "
          "after the first", "<", 0.5),
    Claim("gradients-converge-with-samples", "CL §5.1, Fig 3",
          "with many more samples the estimates approach the true gradient", "grad_true_gain",
          "cosine to the true gradient at the largest N minus at the batch size, per agent and checkpoint", ">", 0.0),
    Claim("steps-vary", "CL §5.1 (footnote 1; App. A.4)",
          "the algorithms' actual steps from independent batches vary as the gradients do", "step_pairwise",
          "mean pairwise cosine of M steps from independent batches, per agent and checkpoint after the first",
          "<", 0.5),
    Claim("value-fits-its-target-not-the-returns", "CL §5.2, Fig 4/14/15",
          "the value network fits its GAE target but \"not the true value function\"", "value_gap",
          "held-out returns MRE (complete returns) minus held-out GAE MRE, per agent, second half of training",
          ">", 0.0),
    Claim("value-off-by-truncated-returns", "CL §5.2, Fig 4b",
          "against the returns \"off by about 50%\" (read with the original's truncated returns)",
          "value_gap_truncated", "held-out MRE against returns cut at the batch end minus held-out GAE MRE, per "
          "agent, second half of training", ">", 0.0),
    Claim("value-baseline-helps", "CL §5.2, Fig 5/16",
          "the value network as baseline reduces variance compared with the zero baseline", "baseline_value_vs_zero",
          "mean pairwise cosine at the batch size with the agent's value network minus with returns (zero), per "
          "agent and checkpoint", ">", 0.0),
    Claim("true-value-baseline-helps-more", "CL §5.2, Fig 5/16",
          "a \"true\" value function gives much lower variance than the agent's value network",
          "baseline_fitted_vs_value", "mean pairwise cosine at the batch size with the fitted V* minus with the "
          "agent's network, per agent and checkpoint (meaningful only where V* is shown closer to the returns)",
          ">", 0.0),
    Claim("landscape-noisy-at-small-n", "CL §5.3, Fig 6/26/27",
          "with few samples the true reward landscape looks jagged: good and bad points cannot be told apart",
          "landscape_noise_ratio", "median standard error of a point at the smallest N over the spread (SD) of the "
          "point means at the largest N, per plane", ">", 0.5),
    Claim("surrogate-misleads-later", "CL §5.3, Fig 7/8/17-25",
          "early in training the surrogate and true landscapes align; later they do not",
          "surrogate_agreement_drop", "sign agreement of surrogate and true return along the step (own batch), "
          "first checkpoint minus last, per agent", ">", 0.0),
)


def verdict(low: float, high: float, side: str, threshold: float, units: int) -> str:
    if units < 2 or not (np.isfinite(low) and np.isfinite(high)):
        return "inconclusive"
    on_side = high < threshold if side == "<" else low > threshold
    against = low > threshold if side == "<" else high < threshold
    return "holds" if on_side else "does not hold" if against else "inconclusive"


def evaluate(evidence, claims=CLAIMS, resamples: int = 1000, seed: int = 0):
    """Every claim whose evidence was measured, per task and label: mean over units, 95% bootstrap CI,
    unit count and verdict. ``evidence``: a DataFrame with columns evidence, task, label, value (one row per
    unit)."""
    import pandas as pd

    rows = []
    for claim in claims:
        part = evidence[evidence.evidence == claim.evidence]
        for (task, label), group in part.groupby(["task", "label"], sort=True):
            values = group["value"].to_numpy(np.float64)
            values = values[np.isfinite(values)]
            if values.size == 0:
                continue
            mean, low, high = bootstrap_mean_ci(values, resamples=resamples, seed=seed)
            if values.size < 2:
                low = high = float("nan")
            rows.append({"claim": claim.key, "where": claim.where, "task": task, "label": label,
                         "mean": float(mean), "low": float(low), "high": float(high), "units": int(values.size),
                         "test": f"{claim.side} {claim.threshold:g}",
                         "verdict": verdict(low, high, claim.side, claim.threshold, values.size)})
    columns = ["claim", "where", "task", "label", "mean", "low", "high", "units", "test", "verdict"]
    return pd.DataFrame(rows, columns=columns)


def by_key(key: str) -> Claim:
    for claim in CLAIMS:
        if claim.key == key:
            return claim
    raise KeyError(f"unknown claim {key!r}; claims: {', '.join(c.key for c in CLAIMS)}")


__all__ = ["CLAIMS", "Claim", "VERDICTS", "by_key", "evaluate", "verdict"]
