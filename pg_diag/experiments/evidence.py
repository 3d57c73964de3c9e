"""The claims' evidence: one row per measurement — evidence, task, label, agent, value — from saved study tables.

Each function here is a pure function of the tables a study saves (tested on constructed tables with answers
worked out by hand, tests/test_evidence.py). ``agent`` names the independent unit: the trained agent
(:mod:`.claims` averages an agent's checkpoints into one value), or for the ablation the matched pair of agents
that differ in one toggle alone. Checkpoint 0 is the initial policy; claims about training read the later ones.
"""

from __future__ import annotations

import numpy as np

from pg_diag.diagnostics import tables as diag_tables

COLUMNS = ["evidence", "task", "label", "agent", "value"]
#: the level whose crossing N measures "several-fold more samples" (CL §5.1): more signal than noise
TRUE_LEVEL = 0.5


def _rows(evidence: str, task: str, frame, value: str, agent: str = "agent") -> list:
    return [{"evidence": evidence, "task": task, "label": r["label"], "agent": str(r[agent]),
             "value": float(r[value])} for r in frame.to_dict("records")]


def _agent(frame):
    """A unit id unique across run directories: ``run:agent``."""
    return frame.assign(unit=frame["run"].astype(str) + ":" + frame["agent"].astype(str))


def crossing_ratio(n, cosine, level: float, batch: int) -> float:
    """The N at which the cosine reaches ``level`` — log-linearly interpolated between the grid points around
    the crossing, as the studies' summaries (:func:`pg_diag.diagnostics.tables.crossing`) — over the batch
    size; +inf when none does (the unit keeps its rank in the median: it needed more than the grid holds).
    The grid point at or above the crossing instead would move a "> 3×" rule to wherever the grid has its
    next point (with the paper's sizes, any crossing above 2.27× the batch read as 4.9×)."""
    n, c = np.asarray(n, np.float64), np.asarray(cosine, np.float64)
    order = np.argsort(n)
    at = diag_tables.crossing(n[order], c[order], level)
    return float(at / batch) if np.isfinite(at) else float("inf")


def gradient_pairwise_evidence(studies: dict) -> list:
    """From gradient studies ({task: GradientStudy}): per agent and checkpoint after the first, the mean pairwise
    cosine at the batch size; per agent, its last-minus-first change."""
    rows = []
    for task, st in studies.items():
        b = st.batch_size
        pairs = _agent(st.pairs.groupby(["label", "run", "agent", "iteration", "n"])["cosine"].mean().reset_index())
        first, last = pairs.iteration.min(), pairs.iteration.max()
        at_b = pairs[pairs.n == b]
        rows += _rows("grad_pairwise_at_batch", task, at_b[at_b.iteration > first], "cosine", "unit")
        if first != last:
            wide = at_b.pivot_table(index=["label", "unit"], columns="iteration", values="cosine").reset_index()
            rows += _rows("grad_pairwise_change", task, wide.assign(value=wide[last] - wide[first]), "value", "unit")
    return rows


def gradient_true_evidence(studies: dict, notes: list | None = None) -> list:
    """From gradient studies: per agent and checkpoint after the first, the mean cosine to the true gradient at
    the batch size and at the largest N, and the N reaching :data:`TRUE_LEVEL` over the batch size. A true
    gradient from fewer than TRUE_RATIO × the largest N pairs gives no evidence against it (said in
    ``notes``): its own noise would be read as the estimates'."""
    from pg_diag.diagnostics.sizes import TRUE_RATIO

    rows = []
    for task, st in studies.items():
        b = st.batch_size
        true = st.estimates.groupby(["label", "run", "agent", "iteration", "n"])["to_true"].mean().reset_index()
        first = st.pairs.iteration.min()
        true = _agent(true[(true.iteration > first) & np.isfinite(true.to_true)])
        ratio = float(st.subjects.true_ratio.min()) if "true_ratio" in getattr(st, "subjects", ()) else np.nan
        if not true.empty and not ratio >= TRUE_RATIO:
            if notes is not None:
                notes.append(f"{task}: the true gradient is {ratio:.3g}× the largest N (fewer than {TRUE_RATIO}×, or "
                             f"not recorded): the claims against it are not tested; measure with true_pairs ≥ "
                             f"{TRUE_RATIO} × the largest N")
            continue
        if true.empty:
            continue
        rows += _rows("grad_true_at_batch", task, true[true.n == b], "to_true", "unit")
        rows += _rows("grad_true_at_largest", task, true[true.n == true.n.max()], "to_true", "unit")
        for (label, unit, _), d in true.groupby(["label", "unit", "iteration"], sort=True):
            rows.append({"evidence": "grad_true_samples_ratio", "task": task, "label": label, "agent": unit,
                         "value": crossing_ratio(d.n, d.to_true, TRUE_LEVEL, b)})
    return rows


def gradient_evidence(studies: dict, notes: list | None = None) -> list:
    """Both of the gradient study's evidence: :func:`gradient_pairwise_evidence` and
    :func:`gradient_true_evidence`."""
    return gradient_pairwise_evidence(studies) + gradient_true_evidence(studies, notes)


def step_evidence(studies: dict) -> list:
    """From step studies: per agent and checkpoint after the first, the mean pairwise cosine of the M steps."""
    rows = []
    for task, st in studies.items():
        per = _agent(st.pairs.groupby(["label", "run", "agent", "iteration"])["cosine"].mean().reset_index())
        rows += _rows("step_pairwise", task, per[per.iteration > per.iteration.min()], "cosine", "unit")
    return rows


def value_evidence(metrics) -> list:
    """From fig-value's training metrics: per agent, the second half of training's held-out MRE against the GAE
    target, against the complete returns and against returns cut at the batch end (the original's), and
    held-out minus training-batch returns MRE."""
    rows = []
    for (task, label, agent), m in metrics.groupby(["task", "algorithm", "agent"], sort=True):
        late = m[m.iteration >= m.iteration.max() / 2]

        def mean(col):
            return float(np.nanmean(late[col])) if col in late and np.isfinite(late[col]).any() else float("nan")

        unit = {"task": task, "label": label, "agent": str(agent)}
        gae, held, train, cut = (mean(c) for c in ("heldout_value_mre_gae", "heldout_value_mre_returns",
                                                   "value_mre_returns", "heldout_value_mre_returns_truncated"))
        rows += [{"evidence": "value_heldout_gae_mre", **unit, "value": gae},
                 {"evidence": "value_heldout_returns_mre", **unit, "value": held},
                 {"evidence": "value_heldout_truncated_mre", **unit, "value": cut},
                 {"evidence": "value_returns_generalization", **unit, "value": held - train}]
    return [r for r in rows if np.isfinite(r["value"])]


def baseline_evidence(studies: dict) -> list:
    """From baseline studies: per agent and checkpoint, value − zero at the largest N, V* − value at the batch
    size where V* was shown better than the agent's network, and the agent's excess held-out MSE over V*'s."""
    rows = []
    for task, st in studies.items():
        per = st.pairs.groupby(["label", "run", "agent", "iteration", "n", "baseline"])["cosine"].mean()
        per = _agent(per.unstack("baseline").reset_index())
        if {"value", "zero"} <= set(per.columns):
            top = per[per.n == per.n.max()]
            rows += _rows("baseline_value_vs_zero", task, top.assign(value=top["value"] - top["zero"]), "value",
                          "unit")
        fits = _agent(st.fits)
        if "fitted" in per.columns and "fitted_better" in fits:
            better = fits[fits.fitted_better.astype(bool)][["run", "agent", "iteration"]]
            at_b = per[per.n == st.batch_size].merge(better, on=["run", "agent", "iteration"])
            rows += _rows("baseline_fitted_vs_value", task, at_b.assign(value=at_b["fitted"] - at_b["value"]),
                          "value", "unit")
        if {"agent_mse", "fitted_mse"} <= set(fits.columns):
            ok = fits[np.isfinite(fits.agent_mse) & np.isfinite(fits.fitted_mse) & (fits.fitted_mse > 0)]
            rows += _rows("value_excess_error", task, ok.assign(value=ok.agent_mse / ok.fitted_mse - 1.0), "value",
                          "unit")
    return rows


def landscape_evidence(concentration: dict, surrogate: dict) -> list:
    """Both landscape studies' evidence: :func:`concentration_evidence` and :func:`surrogate_evidence`."""
    return concentration_evidence(concentration) + surrogate_evidence(surrogate)


def concentration_evidence(concentration: dict) -> list:
    """From concentration landscape studies: per plane, the noise-to-spread ratios at the smallest and largest
    N."""
    rows = []
    for task, st in concentration.items():
        small, large = min(st.sizes), max(st.sizes)
        for (label, run, agent, _it, _p), r in st.returns.groupby(["label", "run", "agent", "iteration",
                                                                   "step_pairs"]):
            spread = np.nanstd(r[r.n == large]["mean"].to_numpy())
            unit = {"task": task, "label": label, "agent": f"{run}:{agent}"}
            for evidence, n in (("landscape_noise_ratio", small), ("landscape_noise_ratio_large", large)):
                noise = np.nanmedian(r[r.n == n]["se"].to_numpy())
                rows.append({"evidence": evidence, **unit, "value": noise / spread if spread > 0 else np.nan})
    return [r for r in rows if not np.isnan(r["value"])]


def surrogate_evidence(surrogate: dict) -> list:
    """From surrogate landscape studies: the true return's change along the step in standard errors at the
    first and last checkpoint (own batch) and from the largest step sample after the first."""
    rows = []
    for task, st in surrogate.items():
        a = _agent(st.agreement())
        a = a.assign(z=a.true_step_change / a.true_step_change_se)
        own, large = a[a.step_pairs == a.step_pairs.min()], a[a.step_pairs == a.step_pairs.max()]
        first, last = a.iteration.min(), a.iteration.max()
        rows += _rows("landscape_true_step_first", task, own[own.iteration == first], "z", "unit")
        if last != first:
            rows += _rows("landscape_true_step_last", task, own[own.iteration == last], "z", "unit")
        if a.step_pairs.max() != a.step_pairs.min():
            rows += _rows("landscape_true_step_large", task, large[large.iteration > first], "z", "unit")
    return [r for r in rows if not np.isnan(r["value"])]


def trust_region_evidence(metrics) -> list:
    """From fig-trust-region's metrics (with the ``constraint`` columns of study_dir.with_configs): per agent,
    the fraction of iterations whose max ratio exceeds 1 + ε, the median log10(max KL / δ), the median
    log10(mean KL), and the median held-out mean KL over δ."""
    rows = []
    for (task, label, agent), m in metrics.groupby(["task", "algorithm", "agent"], sort=True):
        m = m[m.iteration > m.iteration.min()] if m.iteration.nunique() > 1 else m
        unit = {"task": task, "label": label, "agent": str(agent)}
        bound = float(m.constraint_value.iloc[0])
        kind = m.constraint.iloc[0]
        rows.append({"evidence": "tr_log_mean_kl", **unit, "value": float(np.median(np.log10(m.mean_kl)))})
        if kind == "ratio" and np.isfinite(bound):
            rows.append({"evidence": "tr_ratio_outside", **unit,
                         "value": float(np.mean(m.max_ratio > 1.0 + bound))})
        if kind == "kl" and bound > 0:
            rows.append({"evidence": "tr_max_kl_orders", **unit, "value": float(np.median(np.log10(m.max_kl / bound)))})
            held = m.heldout_mean_kl[np.isfinite(m.heldout_mean_kl)] if "heldout_mean_kl" in m else []
            if len(held):
                rows.append({"evidence": "tr_heldout_kl_over_bound", **unit, "value": float(np.median(held / bound))})
    return rows


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


def ablation_evidence(selected: dict, toggles) -> list:
    """From the ablation's selected agents ({task: frame of seed, toggles, score}; one per seed and toggle
    combination, at the LR the other seeds chose: :func:`.studies.ablation.agents_at_held_out_best_lr`): per
    toggle and seed, the score with it on minus off, averaged over the pairs matched by the other toggles.
    The seed is the unit:
    agents with one seed share their initial weights and environment noise across toggle combinations
    (common random numbers), so the 8 pairs of one seed are not independent of each other (taken as units,
    a median interval stated at 0.96 covered 0.85 at a within-seed correlation of 0.2)."""
    rows = []
    for task, sel in selected.items():
        for t in toggles:
            others = ["seed"] + [o for o in toggles if o != t]
            wide = sel.pivot_table(index=others, columns=t, values="score").dropna()
            if True not in wide.columns or False not in wide.columns:
                continue
            per_seed = (wide[True] - wide[False]).groupby(level="seed").mean()
            rows += [{"evidence": f"ablation_{t}", "task": task, "label": "ppo", "agent": str(seed),
                      "value": float(v)} for seed, v in per_seed.items()]
    return rows


def score_evidence(scores) -> list:
    """From IM Table 2/3's per-agent scores (task, algorithm, agent, score): the scores, and each over its task's
    PPO mean (for "matches PPO")."""
    rows = [{"evidence": "im_score", "task": r.task, "label": r.algorithm, "agent": str(r.agent),
             "value": float(r.score)} for r in scores.itertuples(index=False)]
    for task, part in scores.groupby("task"):
        ppo = part[part.algorithm == "ppo"].score.mean()
        if np.isfinite(ppo) and ppo != 0:
            rows += [{"evidence": "im_score_relative", "task": task, "label": r.algorithm, "agent": str(r.agent),
                      "value": float(r.score / abs(ppo))} for r in part.itertuples(index=False)]
    return rows


__all__ = ["COLUMNS", "TRUE_LEVEL", "ablation_evidence", "baseline_evidence", "concentration_evidence",
           "crossing_ratio", "gradient_evidence", "gradient_pairwise_evidence", "gradient_true_evidence",
           "landscape_evidence", "score_evidence", "step_evidence", "surrogate_evidence", "theorem_evidence",
           "trust_region_evidence", "value_evidence"]
