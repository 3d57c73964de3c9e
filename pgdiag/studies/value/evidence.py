"""Evidence from fig-value's training metrics (CL §5.2)."""

from __future__ import annotations

import numpy as np

from pgdiag.experiments.evidence_rows import training_point


#: fig-value's evidence: name -> the held-out metric it reads (pgdiag.metrics.METRICS)
VALUE_SERIES = {"value_heldout_gae_mre": "heldout_value_mre_gae_original",
                "value_heldout_gae_mre_true": "heldout_value_mre_gae",
                "value_heldout_truncated_mre": "heldout_value_mre_returns_truncated",
                "value_heldout_returns_mre": "heldout_value_mre_returns"}


#: the LQR task's noise floor (V^π's own MRE) and the network's on the same states: name -> (floor, network)
FLOOR_SERIES = {("value_floor_mre", "value_floor_agent_mre"): ("heldout_value_mre_floor",
                                                               "heldout_value_mre_returns"),
                ("value_floor_truncated_mre", "value_floor_agent_truncated_mre"):
                    ("heldout_value_mre_floor_truncated", "heldout_value_mre_returns_truncated")}


#: the floor's evidence -> the paired excess over it (the network's error minus the floor's, on the same states)
FLOOR_EXCESS = {"value_floor_mre": "value_floor_excess_mre",
                "value_floor_truncated_mre": "value_floor_excess_truncated_mre"}


def value_evidence(metrics) -> list:
    """From fig-value's training metrics: per agent and iteration where the held-out batch was measured, the
    errors of the updated value network (the claims' scope chooses the iterations; CL's figures are curves
    over the whole run):

    * ``value_heldout_gae_mre`` — the original's "GAE MRE" (``heldout_value_mre_gae_original``: the value loss
      per sample over |V_old + Â|, ref §4.1 item 3), the quantity CL's "small" reads;
    * ``value_heldout_gae_mre_true`` — the true relative error |V − (V_old + Â)|/|V_old + Â| (an extension);
    * ``value_heldout_truncated_mre`` — the MRE against returns cut at the batch end, every non-terminal state
      (the original's target: CL's "off by about 50%");
    * ``value_heldout_returns_mre`` — the MRE against complete returns (an extension);
    * ``value_train_truncated_mre`` — the training batch's MRE against the truncated returns (CL Fig 14's right
      column), every non-terminal state, at the same iterations;
    * ``value_returns_generalization`` — held-out minus training-batch MRE against the truncated returns, both
      over every non-terminal state of the same iteration (the original's selection: neither side selected on
      how its episode ended);
    * on the linear-quadratic task the noise floor: ``value_floor_mre`` — the exact V^π's own MRE against the
      complete returns (``heldout_value_mre_floor``) — and ``value_floor_agent_mre`` — the network's on the
      same states; ``value_floor_truncated_mre`` / ``value_floor_agent_truncated_mre`` against the truncated
      returns, each where both are measured; ``value_floor_excess_mre`` / ``value_floor_excess_truncated_mre``
      the network's minus the floor's on the same states (what a band above the floor is tested on).

    Runs recorded before a metric existed give no row for it."""
    import pandas as pd

    m = metrics.assign(unit=metrics.agent.astype(str), label=metrics.algorithm)
    if {"num_iterations", "lr_annealing"} <= set(m.columns):
        progress, share = training_point(m.iteration.to_numpy(), m.num_iterations.to_numpy(),
                                         m.lr_annealing.to_numpy())
        m = m.assign(progress=progress, lr_share=share)
    col = lambda c: m[c].to_numpy(np.float64) if c in m else np.full(len(m), np.nan)  # noqa: E731
    series = {name: col(c) for name, c in VALUE_SERIES.items()}
    series["value_returns_generalization"] = col("heldout_value_mre_returns_truncated") - \
        col("value_mre_returns_truncated")
    series["value_train_truncated_mre"] = np.where(np.isfinite(col("heldout_value_mre_returns_truncated")),
                                                   col("value_mre_returns_truncated"), np.nan)
    for (floor_name, agent_name), (floor, network) in FLOOR_SERIES.items():
        both = np.isfinite(col(floor)) & np.isfinite(col(network))
        series[floor_name], series[agent_name] = (np.where(both, col(c), np.nan) for c in (floor, network))
        series[FLOOR_EXCESS[floor_name]] = series[agent_name] - series[floor_name]
    keep = [c for c in ("task", "label", "unit", "iteration", "progress", "lr_share") if c in m]
    frames = [m[keep].assign(evidence=name, value=v) for name, v in series.items()]
    out = pd.concat(frames, ignore_index=True).rename(columns={"unit": "agent"})
    return out[np.isfinite(out.value.to_numpy(np.float64))].to_dict("records")
