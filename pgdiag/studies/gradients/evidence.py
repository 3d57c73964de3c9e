"""Evidence from the gradient studies (CL §5.1)."""

from __future__ import annotations

import numpy as np

from pgdiag.experiments import levels
from pgdiag.experiments.evidence_rows import crossing_ratio, rows_of, with_point, with_unit
from pgdiag.diagnostics.sizes import TRUE_RATIO


#: the level of the cosine to the gradient (the truth's over its ceiling) whose crossing N measures
#: "several-fold more samples" (CL §5.1): the noise's energy equal to the signal's, 1/√2
TRUE_LEVEL = levels.to_gradient_level(levels.NOISE_EQUALS_SIGNAL)


def gradient_pairwise_evidence(studies: dict) -> list:
    """From gradient studies ({task: GradientStudy}): per agent and checkpoint, the mean pairwise cosine at the
    batch size; per agent, its last checkpoint's minus the initial policy's (its first)."""
    rows = []
    for task, st in studies.items():
        b = st.batch_size
        pairs = st.pairs.groupby(["label", "run", "agent", "iteration", "n"])["cosine"].mean().reset_index()
        at_b = with_point(with_unit(pairs[pairs.n == b]))
        rows += rows_of("grad_pairwise_at_batch", task, at_b, "cosine", "unit", pairs=b)
        rows += _change("grad_pairwise_change", task, at_b, "cosine")
    return rows


def _change(name: str, task: str, at_b, column: str) -> list:
    """Per agent, ``column`` at its last checkpoint minus at the initial policy's (its first): none with one."""
    first, last = at_b.iteration.min(), at_b.iteration.max()
    if at_b.empty or first == last:
        return []
    wide = at_b.pivot_table(index=["label", "unit"], columns="iteration", values=column).reset_index()
    return rows_of(name, task, wide.assign(value=wide[last] - wide[first]), "value", "unit")


def _ceilings(st):
    """Per subject (run, agent, iteration) the true gradient's own cosine to the gradient it estimates."""
    subjects = getattr(st, "subjects", None)
    if subjects is None or "truth_ceiling" not in subjects:
        return None
    return subjects[["run", "agent", "iteration", "truth_ceiling"]]


def gradient_true_evidence(studies: dict, notes: list | None = None) -> list:
    """From gradient studies: per agent and checkpoint, the mean cosine to the true gradient over the truth's own
    ceiling (≈ the cosine to the gradient itself, [`levels`][pgdiag.experiments.levels]) at the batch size (and
    per agent its last checkpoint's minus the initial policy's) and at the largest N, and the N where it reaches
    [`TRUE_LEVEL`][pgdiag.studies.gradients.evidence.TRUE_LEVEL] over the batch size. A truth from
    fewer than TRUE_RATIO × the largest N pairs, or without a ceiling (no split-half), gives no evidence (said in
    ``notes``)."""

    rows, notes = [], notes if notes is not None else []
    for task, st in studies.items():
        b = st.batch_size
        true = st.estimates.groupby(["label", "run", "agent", "iteration", "n"])["to_true"].mean().reset_index()
        true = true[np.isfinite(true.to_true)]
        ratio = float(st.subjects.true_ratio.min()) if "true_ratio" in getattr(st, "subjects", ()) else np.nan
        ceilings = _ceilings(st)
        if true.empty:
            continue
        if not ratio >= TRUE_RATIO or ceilings is None:
            notes.append(f"{task}: the true gradient is {ratio:.3g}× the largest N (fewer than {TRUE_RATIO}×), or "
                         f"has no split-half ceiling: the claims against it are not tested; measure with "
                         f"true_pairs ≥ {TRUE_RATIO} × the largest N and at least two truth streams")
            continue
        true = with_point(with_unit(true.merge(ceilings, on=["run", "agent", "iteration"])))
        true = true.assign(to_gradient=true.to_true / true.truth_ceiling)
        true = true[np.isfinite(true.to_gradient)]
        at_b = true[true.n == b]
        rows += rows_of("grad_true_at_batch", task, at_b, "to_gradient", "unit", pairs=b)
        rows += _change("grad_true_change", task, at_b, "to_gradient")
        rows += rows_of("grad_true_at_largest", task, true[true.n == true.n.max()], "to_gradient", "unit",
                      pairs=float(true.n.max()))
        for (label, unit, it), d in true.groupby(["label", "unit", "iteration"], sort=True):
            rows.append({"evidence": "grad_true_samples_ratio", "task": task, "label": label, "agent": unit,
                         "value": crossing_ratio(d.n, d.to_gradient, TRUE_LEVEL, b), "iteration": float(it),
                         "progress": float(d.progress.iloc[0]), "lr_share": float(d.lr_share.iloc[0])})
    return rows


def gradient_evidence(studies: dict, notes: list | None = None) -> list:
    """Both of the gradient study's evidence:
    [`gradient_pairwise_evidence`][pgdiag.studies.gradients.evidence.gradient_pairwise_evidence] and
    [`gradient_true_evidence`][pgdiag.studies.gradients.evidence.gradient_true_evidence]."""
    return gradient_pairwise_evidence(studies) + gradient_true_evidence(studies, notes)


__all__ = ["TRUE_LEVEL", "gradient_pairwise_evidence", "gradient_true_evidence", "gradient_evidence"]
