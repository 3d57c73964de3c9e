"""Evidence from fig-trust-region's training metrics (CL §5.4, IM §4)."""

from __future__ import annotations

import numpy as np

from pgdiag.experiments.evidence_rows import training_point
from pgdiag.config import study_preset


def _trpo_bounds(metrics) -> dict:
    """Per task, the mean-KL bound δ TRPO enforces there: its agents' own, else its preset's (NaN: none)."""

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
    out = pd.concat(frames + [kl_shape(m)], ignore_index=True).rename(columns={"unit": "agent"})
    out = out[np.isfinite(out.value.to_numpy(np.float64))]
    return out[["evidence", "task", "label", "agent", "value", "iteration", "progress", "lr_share"]].to_dict("records")


def kl_shape(m):
    """Per agent, the shape of its mean-KL curve over the iterations after the first (IM §4: "PPO-M KL trends up as
    the number of iterations increases, PPO KL peaks halfway through training before trending down again"):
    ``tr_kl_trend`` — the least-squares slope of log10(mean KL) against progress through the run (per whole run:
    +1 is a tenfold rise from start to end); ``tr_kl_peak`` — the progress at which a running mean over five
    logged iterations of log10(mean KL) is largest; ``tr_kl_fall`` — how far that running mean falls from its peak to
    its last value (log10: 0.3 is a halving). One row per agent, at its last iteration."""
    import pandas as pd

    rows = []
    for (task, label, unit), g in m[m.iteration > 0].groupby(["task", "label", "unit"], sort=True):
        g = g.sort_values("iteration")
        x, y = g.progress.to_numpy(np.float64), np.log10(g.mean_kl.to_numpy(np.float64))
        ok = np.isfinite(x) & np.isfinite(y)
        if ok.sum() < 5:
            continue
        x, y = x[ok], y[ok]
        smooth = np.convolve(y, np.ones(5) / 5, mode="valid")           # centred: index i is x[i + 2]
        last = g.iloc[-1]
        shape = (("tr_kl_trend", np.polyfit(x, y, 1)[0]), ("tr_kl_peak", x[2 + int(np.argmax(smooth))]),
                 ("tr_kl_fall", float(smooth.max() - smooth[-1])))
        for name, value in shape:
            rows.append({"task": task, "label": label, "unit": unit, "iteration": last.iteration,
                         "progress": last.progress, "lr_share": last.lr_share, "evidence": name, "value": value})
    return pd.DataFrame(rows, columns=["task", "label", "unit", "iteration", "progress", "lr_share", "evidence",
                                       "value"])
