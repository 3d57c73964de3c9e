"""Evidence from the baseline study (CL §5.2, Fig 5)."""

from __future__ import annotations

import numpy as np

from pgdiag.experiments import levels
from pgdiag.experiments.evidence_rows import rows_of, with_point, with_unit
from pgdiag.studies.value.evidence import FLOOR_EXCESS


def baseline_evidence(studies: dict, notes: list | None = None) -> list:
    """From baseline studies' V* fits, per agent and checkpoint — read on the floor's held-out batches, which
    the rule that stopped V*'s fit never looked at —: the agent's excess MSE over V*'s (``value_excess_error``),
    V*'s MRE against the complete returns (``value_floor_mre``: the floor, what a value function at E[R | s]
    reads from the returns' noise), the agent's on the same states (``value_floor_agent_mre``), and both
    against the returns cut at the batch end (``value_floor_truncated_mre``, ``value_floor_agent_truncated_mre``), and
    the network's minus V*'s on those states (``value_floor_excess_mre``, ``value_floor_excess_truncated_mre``).
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
            for floor, agent in (("value_floor_mre", "value_floor_agent_mre"),
                                 ("value_floor_truncated_mre", "value_floor_agent_truncated_mre")):
                if floor in values and agent in values:      # the same held-out states: a paired difference
                    values[FLOOR_EXCESS[floor]] = values[agent] - values[floor]
        placed = with_point(fits)     # each checkpoint's iteration, progress and lr_share go along
        for name, v in values.items():
            ok = np.isfinite(v)
            rows += rows_of(name, task, placed.assign(value=v)[ok], "value", "unit")
    return rows


#: a variance ratio is read only where both baselines' pairwise cosines are at least this (ρ ≤ 4): near c = 0,
#: ρ = 1/c − 1 runs to infinity on the cosines' own sampling noise, and so does any ratio of two of them
RATIO_MIN_COSINE = levels.pairwise_level(levels.NOISE_FOUR_TIMES)


def _ratio(per, rho, better: str, worse: str):
    """``per`` with the variance ratio of ``worse`` over ``better`` where both cosines are at least
    [`RATIO_MIN_COSINE`][pgdiag.studies.baselines.evidence.RATIO_MIN_COSINE]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = rho[worse] / rho[better]
    both = (per[better] >= RATIO_MIN_COSINE) & (per[worse] >= RATIO_MIN_COSINE)
    return per.assign(ratio=np.where(both, ratio, np.nan))


def baseline_ratio_evidence(studies: dict) -> list:
    """From baseline studies, per agent, checkpoint and N (``pairs``): the variance ratio of two baselines — the
    noise-to-signal energy ρ = 1/c − 1 of one over the other's (every baseline estimates the same gradient, so this
    is their noise energies' ratio, [`levels`][pgdiag.experiments.levels]) — with returns over with the agent's
    network (``baseline_variance_ratio_value``), and with the agent's network over with V* where V* was shown the
    better value function (``baseline_variance_ratio_fitted``), each where both cosines are well above 0 (NaN
    elsewhere: measured, not resolved); and the
    gap in mean pairwise cosine of the agent's network over returns (``baseline_cosine_gap_value``: what the
    figure shows at one N, defined at any noise level)."""
    rows = []
    for task, st in studies.items():
        per = st.pairs.groupby(["label", "run", "agent", "iteration", "n", "baseline"])["cosine"].mean()
        per = with_point(with_unit(per.unstack("baseline").reset_index())).rename(columns={"n": "pairs"})
        rho = {b: levels.noise_ratio(per[b]) for b in ("zero", "value", "fitted") if b in per}
        if {"zero", "value"} <= set(rho):
            rows += rows_of("baseline_variance_ratio_value", task, _ratio(per, rho, "value", "zero"), "ratio", "unit")
            rows += rows_of("baseline_cosine_gap_value", task, per.assign(gap=per["value"] - per["zero"]), "gap",
                            "unit")
        fits = st.fits
        if "fitted" in rho and "fitted_better" in fits:
            better = fits[fits.fitted_better.astype(bool)][["run", "agent", "iteration"]]
            ok = _ratio(per, rho, "fitted", "value").merge(better, on=["run", "agent", "iteration"])
            rows += rows_of("baseline_variance_ratio_fitted", task, ok, "ratio", "unit")
    return rows       # a ratio not read (NaN) stays: a test whose agents have none says so
