"""Evidence from the step studies (CL §5.1, Fig 13)."""

from __future__ import annotations

from pgdiag.experiments.evidence_rows import rows_of, with_point, with_unit


def step_evidence(studies: dict) -> list:
    """From step studies: per agent and checkpoint, the mean pairwise cosine of the M steps."""
    rows = []
    for task, st in studies.items():
        per = st.pairs.groupby(["label", "run", "agent", "iteration"])["cosine"].mean().reset_index()
        rows += rows_of("step_pairwise", task, with_point(with_unit(per)), "cosine", "unit")
    return rows


__all__ = ["step_evidence"]
