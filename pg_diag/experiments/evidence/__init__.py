"""The claims' evidence: one row per measurement — evidence, task, label, agent, value, and where it was made
(iteration, progress, lr_share, pairs) — from saved study tables.

Each function here is a pure function of the tables a study saves (tested on constructed tables with answers
worked out by hand, tests/test_evidence.py). ``agent`` names the independent unit: the trained agent
([`claims`][pg_diag.experiments.claims] makes one value of an agent's rows), or for the ablation the seed. Every checkpoint is kept,
the initial policy's too: which ones a claim reads is its scope ([`paper_claims.Scope`][pg_diag.experiments.paper_claims.Scope]), decided in
[`claims`][pg_diag.experiments.claims] from ``iteration``, ``progress`` (iteration over the run's iterations) and ``lr_share`` (the
annealed learning rate's share of its start there; 1 without annealing); ``pairs`` is the sample size a
row rests on where a claim's scope names one.
"""

from __future__ import annotations

from pg_diag.experiments.evidence.common import crossing_ratio, training_point, with_point
from pg_diag.experiments.evidence.gradients import (TRUE_LEVEL, gradient_evidence, gradient_pairwise_evidence,
                                                     gradient_true_evidence, step_evidence)
from pg_diag.experiments.evidence.landscape import concentration_evidence, landscape_evidence, surrogate_evidence
from pg_diag.experiments.evidence.training import (ablation_evidence, score_evidence, theorem_evidence,
                                                    trust_region_evidence)
from pg_diag.experiments.evidence.value import baseline_evidence, baseline_ratio_evidence, value_evidence

COLUMNS = ["evidence", "task", "label", "agent", "value", "iteration", "progress", "lr_share", "pairs"]

__all__ = ["COLUMNS", "TRUE_LEVEL", "ablation_evidence", "baseline_evidence", "baseline_ratio_evidence",
           "concentration_evidence", "crossing_ratio", "gradient_evidence", "gradient_pairwise_evidence",
           "gradient_true_evidence", "landscape_evidence", "score_evidence", "step_evidence", "surrogate_evidence",
           "theorem_evidence", "training_point", "trust_region_evidence", "value_evidence", "with_point"]
