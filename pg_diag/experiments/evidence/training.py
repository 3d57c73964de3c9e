"""Evidence from trainings: trust regions (CL §5.4, IM §4), Theorem 5.1's batch, the ablation and the tables (IM §3, §5)."""

from __future__ import annotations

import numpy as np

from pg_diag.experiments.evidence.common import training_point


def _trpo_bounds(metrics) -> dict:
    """Per task, the mean-KL bound δ TRPO enforces there: its agents' own, else its preset's (NaN: none)."""
    from pg_diag.config import study_preset

    out = {}
    for task, m in metrics.groupby("task", sort=False):
        own = m[(m.algorithm == "trpo") & (m.constraint == "kl")].constraint_value
        try:
            out[task] = float(own.iloc[0]) if len(own) else float(study_preset("trpo", task).get("kl_bound"))
        except Exception:   # a task without a TRPO preset: no bound to read a mean KL against
            out[task] = np.nan
    return out


def trust_region_evidence(metrics) -> list:
    """From fig-trust-region's metrics (with study_dir.with_configs' columns): per agent and iteration, whether
    its max ratio left 1 + ε (PPO's ε; a TRPO agent read against PPO's 0.2), log10(max KL / δ) (TRPO), the mean
    KL over TRPO's δ on the task, log10(mean KL), and where a held-out batch was measured whether TRPO's
    held-out mean KL stayed within δ."""
    import pandas as pd

    bounds = _trpo_bounds(metrics)
    m = metrics.assign(unit=metrics.agent.astype(str), label=metrics.algorithm)
    progress, share = training_point(m.iteration.to_numpy(), m.num_iterations.to_numpy(), m.lr_annealing.to_numpy())
    m = m.assign(progress=progress, lr_share=share, delta=m.task.map(bounds).astype(float))
    eps = np.where(m.constraint == "ratio", m.constraint_value, 0.2)
    series = {"tr_log_mean_kl": np.log10(m.mean_kl), "tr_mean_kl_over_bound": m.mean_kl / m.delta,
              "tr_ratio_outside": np.where(eps < 1e6, (m.max_ratio > 1.0 + eps).astype(float), np.nan)}
    kl = (m.constraint == "kl").to_numpy()
    series["tr_max_kl_orders"] = np.where(kl, np.log10(m.max_kl / m.constraint_value), np.nan)
    if "heldout_mean_kl" in m:
        held = m.heldout_mean_kl.to_numpy(np.float64)
        series["tr_heldout_within_bound"] = np.where(kl & np.isfinite(held),
                                                     (held <= m.constraint_value).astype(float), np.nan)
    frames = [m[["task", "label", "unit", "iteration", "progress", "lr_share"]].assign(evidence=name, value=v)
              for name, v in series.items()]
    out = pd.concat(frames, ignore_index=True).rename(columns={"unit": "agent"})
    out = out[np.isfinite(out.value.to_numpy(np.float64))]
    return out[["evidence", "task", "label", "agent", "value", "iteration", "progress", "lr_share"]].to_dict("records")


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
    combination, at the LR the other seeds chose: [`studies.ablation.agents_at_held_out_best_lr`][pg_diag.experiments.studies.ablation.agents_at_held_out_best_lr]): per
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


__all__ = ["trust_region_evidence", "theorem_evidence", "ablation_evidence", "score_evidence"]
