"""Evidence from fig-value's training metrics and the baseline study (CL §5.2)."""

from __future__ import annotations

import numpy as np

from pg_diag.experiments import levels
from pg_diag.experiments.evidence.common import rows_of, training_point, with_point, with_unit


#: fig-value's evidence: name -> the held-out metric it reads (trainer.METRICS)
VALUE_SERIES = {"value_heldout_gae_mre": "heldout_value_mre_gae_original",
                "value_heldout_gae_mre_true": "heldout_value_mre_gae",
                "value_heldout_truncated_mre": "heldout_value_mre_returns_truncated",
                "value_heldout_returns_mre": "heldout_value_mre_returns"}
#: the LQR task's noise floor (V^π's own MRE) and the network's on the same states: name -> (floor, network)
FLOOR_SERIES = {("value_floor_mre", "value_floor_agent_mre"): ("heldout_value_mre_floor",
                                                               "heldout_value_mre_returns"),
                ("value_floor_truncated_mre", "value_floor_agent_truncated_mre"):
                    ("heldout_value_mre_floor_truncated", "heldout_value_mre_returns_truncated")}


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
    * ``value_returns_generalization`` — held-out minus training-batch MRE against the truncated returns, both
      over every non-terminal state of the same iteration (the original's selection: neither side selected on
      how its episode ended);
    * on the linear-quadratic task the noise floor: ``value_floor_mre`` — the exact V^π's own MRE against the
      complete returns (``heldout_value_mre_floor``) — and ``value_floor_agent_mre`` — the network's on the
      same states; ``value_floor_truncated_mre`` / ``value_floor_agent_truncated_mre`` against the truncated
      returns, each where both are measured.

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
    for (floor_name, agent_name), (floor, network) in FLOOR_SERIES.items():
        both = np.isfinite(col(floor)) & np.isfinite(col(network))
        series[floor_name], series[agent_name] = (np.where(both, col(c), np.nan) for c in (floor, network))
    keep = [c for c in ("task", "label", "unit", "iteration", "progress", "lr_share") if c in m]
    frames = [m[keep].assign(evidence=name, value=v) for name, v in series.items()]
    out = pd.concat(frames, ignore_index=True).rename(columns={"unit": "agent"})
    return out[np.isfinite(out.value.to_numpy(np.float64))].to_dict("records")


def baseline_evidence(studies: dict, notes: list | None = None) -> list:
    """From baseline studies' V* fits, per agent and checkpoint — read on the floor's held-out batches, which
    the rule that stopped V*'s fit never looked at —: the agent's excess MSE over V*'s (``value_excess_error``),
    V*'s MRE against the complete returns (``value_floor_mre``: the floor, what a value function at E[R | s]
    reads from the returns' noise), the agent's on the same states (``value_floor_agent_mre``), and both
    against the returns cut at the batch end (``value_floor_truncated_mre``, ``value_floor_agent_truncated_mre``).
    The floor's rows carry their checkpoint (``iteration``). A study saved before the floor was read apart gives
    none of them (said in ``notes``): its errors were read on the batches that chose when the fit stopped."""
    # evidence name -> the fits' column (value_fit.FitReport's floor_* fields)
    floor_columns = {"value_floor_mre": "floor_fitted_mre", "value_floor_agent_mre": "floor_agent_mre",
                     "value_floor_truncated_mre": "floor_fitted_mre_truncated",
                     "value_floor_agent_truncated_mre": "floor_agent_mre_truncated"}
    rows = []
    for task, st in studies.items():
        fits = with_unit(st.fits)
        if "fitted" not in set(st.pairs.baseline):
            continue
        if not {"floor_agent_mse", "floor_fitted_mse"} <= set(fits.columns):
            if notes is not None:
                notes.append(f"{task}: the baseline study was saved before V*'s floor was read on held-out batches "
                             f"apart from those that stopped its fit: no value_excess_error or value_floor_* "
                             f"evidence; measure it again")
            continue
        agent_mse, fitted_mse = (fits[c].to_numpy(np.float64) for c in ("floor_agent_mse", "floor_fitted_mse"))
        with np.errstate(divide="ignore", invalid="ignore"):
            values = {"value_excess_error": np.where(fitted_mse > 0, agent_mse / fitted_mse - 1.0, np.nan),
                      **{name: fits[c].to_numpy(np.float64) for name, c in floor_columns.items() if c in fits}}
        placed = with_point(fits)     # each checkpoint's iteration, progress and lr_share go along
        for name, v in values.items():
            ok = np.isfinite(v)
            rows += rows_of(name, task, placed.assign(value=v)[ok], "value", "unit")
    return rows


def baseline_ratio_evidence(studies: dict) -> list:
    """From baseline studies, per agent, checkpoint and N (``pairs``): the variance ratio of two baselines — the
    noise-to-signal energy ρ = 1/c − 1 of one over the other's (every baseline estimates the same gradient, so
    this is their noise energies' ratio, [`levels`][pg_diag.experiments.levels]) — with returns over with the agent's network
    (``baseline_variance_ratio_value``), and with the agent's network over with V* where V* was shown the better
    value function (``baseline_variance_ratio_fitted``)."""
    rows = []
    for task, st in studies.items():
        per = st.pairs.groupby(["label", "run", "agent", "iteration", "n", "baseline"])["cosine"].mean()
        per = with_point(with_unit(per.unstack("baseline").reset_index())).rename(columns={"n": "pairs"})
        rho = {b: levels.noise_ratio(per[b]) for b in ("zero", "value", "fitted") if b in per}
        with np.errstate(divide="ignore", invalid="ignore"):
            if {"zero", "value"} <= set(rho):
                rows += rows_of("baseline_variance_ratio_value", task, per.assign(ratio=rho["zero"] / rho["value"]),
                              "ratio", "unit")
            fits = st.fits
            if "fitted" in rho and "fitted_better" in fits:
                better = fits[fits.fitted_better.astype(bool)][["run", "agent", "iteration"]]
                ok = per.assign(ratio=rho["value"] / rho["fitted"]).merge(better, on=["run", "agent", "iteration"])
                rows += rows_of("baseline_variance_ratio_fitted", task, ok, "ratio", "unit")
    return [r for r in rows if not np.isnan(r["value"])]


__all__ = ["value_evidence", "baseline_evidence", "baseline_ratio_evidence"]
