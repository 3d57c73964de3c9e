"""Evidence from fig-theorem's batch (CL Theorem 5.1): checks, not findings."""

from __future__ import annotations


def theorem_evidence(record: dict, trace) -> list:
    """From fig-theorem's study record and traces: the first step's relative difference from the unclipped
    step, and per optimizer its final max ratio minus 1 + ε."""
    task = record["tasks"][0]
    rows = [{"evidence": "theorem_first_step", "task": task, "label": "ppo", "agent": "batch",
             "value": float(record["first_step_relative_difference"])}]
    final = trace[trace.step == trace.step.max()]
    for r in final.to_dict("records"):
        rows.append({"evidence": "theorem_max_ratio_excess", "task": task, "label": "ppo", "agent": str(r["optimizer"]),
                     "value": float(r["max_ratio"] - (1.0 + record["clip_eps"]))})
    return rows
