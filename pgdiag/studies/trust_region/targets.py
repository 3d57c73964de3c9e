"""fig-trust-region — CL Fig. 9/28/29, IM Fig. 2–4: do PPO, PPO-M and TRPO keep a trust region?

Per iteration and agent: mean reward, the max probability ratio (with the
1 + ε line PPO's clipping aims at), the mean KL between successive policies,
and max KL against mean KL — on the training batch every iteration, and on a
held-out batch from the pre-update policy every ``heldout_every`` iterations
(ref §4.1; the held-out batch here leaves the training run untouched).

The reference lines (1 + ε, TRPO's δ) are the values the runs were trained with, read from their manifests, so a run
with another ε shows its own line. Training writes its runs into ``runs/`` beside ``OUT``
([`pgdiag.experiments.diagnostic_targets.train_runs`][pgdiag.experiments.diagnostic_targets.train_runs]: named by
configuration, shared with the other targets written there) and ``OUT/study.json``;
[`draw`][pgdiag.studies.trust_region.draw] redraws the figure and summary from them alone.
"""

from __future__ import annotations

import os

import numpy as np

from pgdiag.config import CPU_SCALE
from pgdiag.experiments import diagnostic_targets, dry_run, figures, study_dir
from pgdiag.studies.trust_region import evidence as ev
from pgdiag.experiments.figures import COLORS, LABELS
from pgdiag.experiments.scales import MID_TRAINING, Scale, replication_training, tasks_training
from pgdiag.experiments.target_types import Target

ALGORITHMS = ("ppo", "ppo-m", "trpo")


SCALES = {
    "paper": Scale(tasks=("humanoid", "walker2d", "hopper"), seeds=8, overrides={"heldout_every": 10},
                   description="PPO, PPO-M, TRPO presets on Humanoid, Walker2d, Hopper; 8 agents each (the fewest "
                               "whose sign tests can pass Holm over a section's findings); held-out "
                               "batch every 10 iterations (the original's log_every)."),
    "smoke": Scale(tasks=("hopper",), seeds=4, overrides={**CPU_SCALE, "num_iterations": 30, "heldout_every": 3},
                   description="Hopper (native MuJoCo on a CPU) at CPU scale: 30 iterations of 4 × 256 steps, "
                               "4 agents per algorithm, held-out batch every 3 iterations."),
    "mid": Scale(**MID_TRAINING,
                 description="Hopper at the papers' shape (1 × 2,048 steps, reset every iteration), PPO, PPO-M and "
                             "TRPO, 7 agents each, 100 iterations, a held-out batch every 10 iterations: the mid "
                             "scale's shared runs (those of every closer-look target)."),
    "tasks": Scale(**tasks_training(("humanoid",)),
                   description="Humanoid (CL Figs 9, 29: where the paper read its trust regions) at the mid scale's "
                               "shape: PPO, PPO-M and TRPO, 7 agents each, 100 iterations of 1 × 2,048 steps, a "
                               "held-out batch every 10 iterations; the runs fig-landscape-concentration measures."),
    "replication": Scale(**replication_training(("humanoid",)),
                         description="CL Figs 9, 29 and IM Figs 2, 4 as the papers ran them: Gym's Humanoid, PPO, "
                                     "PPO-M and TRPO, 8 agents each, 488 iterations of 1 × 2,048 steps, a held-out "
                                     "batch every 10 iterations, checkpoints after 0/150/300/450 (the runs "
                                     "fig-landscape-concentration measures at 300)."),
    # IM Fig 3's other tasks: the value part's runs (the same trainings), read without training anything
    "replication-others": Scale(**replication_training(("walker2d", "hopper")),
                                description="IM Fig 3 as the paper ran it: Gym's Walker2d and Hopper, PPO, PPO-M and "
                                            "TRPO of the value part's runs (8 agents each), 488 iterations of "
                                            "1 × 2,048 steps, a held-out batch every 10 iterations."),
    # the replication's model pair: where a trust-region finding does not reproduce on Gym's Humanoid, the same
    # agents on Brax's model at one length say whether the model explains it (PPO-M and TRPO anneal nothing, so
    # Gym's first 100 of 488 iterations are a 100-iteration run of theirs)
    "brax-pair": Scale(tasks=("humanoid",), seeds=8, overrides={"num_iterations": 100, "heldout_every": 10},
                       description="The replication's model pair: Brax's Humanoid (276 observations, no contact "
                                   "forces), PPO, PPO-M and TRPO, 8 agents each, 100 iterations of 1 × 2,048 "
                                   "steps, a held-out batch every 10 iterations: read against the first 100 of "
                                   "the replication's 488 iterations on Gym's model."),
}


def reference_values(metrics) -> dict:
    """Per task, the reference lines as the runs were configured, from each algorithm's registered constraint:
    ``ratio`` = 1 + ε for every distinct ratio clip ε (PPO; no line for a disabled clip) and ``kl_bound`` = every
    distinct KL bound (TRPO's δ, NPG's δ, PPO-KL's d_targ). ``metrics`` needs the ``constraint`` and
    ``constraint_value`` columns of [`study_dir.with_configs`][pgdiag.experiments.study_dir.with_configs]."""
    out = {}
    for task, m in metrics.groupby("task", sort=False):
        ratio = m[(m.constraint == "ratio") & (m.constraint_value < study_dir.NO_CLIP)]
        out[task] = {"ratio": tuple(float(1 + e) for e in sorted(ratio.constraint_value.unique())),
                     "kl_bound": tuple(float(d) for d in sorted(m[m.constraint == "kl"].constraint_value.unique()))}
    return out


def plot(metrics, path: str, title: str = "") -> str:

    tasks = list(dict.fromkeys(metrics.task))
    fig, axes = figures.panels(2 * len(tasks), 4, 4.5, 3.6)
    for t, task in enumerate(tasks):
        m = metrics[metrics.task == task]
        refs = reference_values(m)[task]
        for row, (prefix, where) in enumerate((("", "training batch"), ("heldout_", "held-out batch"))):
            ax_r, ax_ratio, ax_kl, ax_mm = axes[2 * t + row]
            for algo in dict.fromkeys(m.algorithm):
                a = m[m.algorithm == algo]
                a = a if not prefix else a[np.isfinite(a["heldout_mean_kl"])]
                for i, (_, agent) in enumerate(a.groupby("agent")):
                    kw = dict(color=COLORS[algo], alpha=0.6, lw=1, label=LABELS[algo] if i == 0 else None)
                    ax_r.plot(agent.iteration, agent.mean_return, **kw)
                    ax_ratio.plot(agent.iteration, agent[prefix + "max_ratio"], **kw)
                    ax_kl.plot(agent.iteration, agent[prefix + "mean_kl"], **kw)
                    ax_mm.scatter(agent[prefix + "mean_kl"], agent[prefix + "max_kl"], s=8, color=COLORS[algo],
                                  alpha=0.6, label=LABELS[algo] if i == 0 else None)
            for ratio in refs["ratio"]:
                ax_ratio.axhline(ratio, color="k", ls=":", lw=1, label=f"1 + ε = {ratio:g}")
            for delta in refs["kl_bound"]:
                ax_kl.axhline(delta, color="tab:green", ls=":", lw=1, label=f"KL bound = {delta:g}")
            ax_r.set_title(f"{task}: mean reward" + (" (iterations with a held-out batch)" if prefix else ""))
            ax_ratio.set_title(f"max ratio, {where}")
            ax_kl.set_title(f"mean KL, {where}")
            ax_mm.set_title(f"max KL vs mean KL, {where}")
            ax_ratio.set_yscale("log")
            ax_kl.set_yscale("log")
            ax_mm.set_xscale("log")
            ax_mm.set_yscale("log")
            lim = [min(ax_mm.get_xlim()[0], ax_mm.get_ylim()[0]), max(ax_mm.get_xlim()[1], ax_mm.get_ylim()[1])]
            ax_mm.plot(lim, lim, color="grey", lw=0.8, ls="--", label="max = mean")
            for ax in (ax_r, ax_ratio, ax_kl):
                ax.set_xlabel("iteration")
            ax_mm.set_xlabel("mean KL")
            ax_mm.set_ylabel("max KL")
    return figures.save(fig, path, title, dpi=100, legend=True)


def summary(metrics):
    """Per task and algorithm: how often the max ratio leaves 1 + ε, and the KLs. A PPO
    agent is measured against its own ε; TRPO (which has none) against the task's PPO
    agents' ε, the smallest if they differ."""
    import pandas as pd

    refs = reference_values(metrics)
    rows = []
    for (task, algo), m in metrics.groupby(["task", "algorithm"]):
        if (m.constraint == "ratio").all():
            bound = 1 + m.constraint_value
        else:
            bound = min(refs[task]["ratio"], default=np.nan)
        held = m[np.isfinite(m.heldout_mean_kl)]
        rows.append({"task": task, "algorithm": LABELS[algo], "agents": m.agent.nunique(),
                     "1 + ε": ", ".join(f"{b:g}" for b in sorted(set(np.atleast_1d(bound)))),
                     "iterations with max ratio > 1+ε (train)": float(np.mean(m.max_ratio > bound)),
                     "median max ratio (train)": float(np.median(m.max_ratio)),
                     "median mean KL (train)": float(np.median(m.mean_kl)),
                     "median max KL / mean KL (train)": float(np.median(m.max_kl / m.mean_kl)),
                     "median max ratio (held-out)": float(np.median(held.heldout_max_ratio)) if len(held) else np.nan,
                     "median mean KL (held-out)": float(np.median(held.heldout_mean_kl)) if len(held) else np.nan})
    return pd.DataFrame(rows)


def draw(target, from_dir: str, out: str | None = None, tasks=None) -> dict:
    """The figure and ``summary.csv`` from the study saved in ``from_dir`` (written to
    ``out``, default ``from_dir``); reads the run directories only."""
    record, metrics = study_dir.load_runs(from_dir, target.study, target.name, tasks)
    out = out or from_dir
    table = summary(metrics)
    os.makedirs(out, exist_ok=True)
    figures.write_csv(table, os.path.join(out, "summary.csv"), index=False)
    path = plot(metrics, os.path.join(out, f"{target.name}.png"),
                title=f"Trust regions of {', '.join(LABELS[a] for a in dict.fromkeys(metrics.algorithm))} "
                      f"({record['scale']} scale): training batch (upper rows) "
                      f"and held-out batch (lower rows)")
    return {"figure": path, "summary": table, "metrics": metrics, "references": reference_values(metrics)}


def evidence(target, from_dir: str, notes: list) -> list:
    return ev.trust_region_evidence(study_dir.load_runs(from_dir, target.study, target.name)[1])


TARGETS = (
    Target("fig-trust-region", "trust-region", "training", "CL Fig 9 / IM Figs 2-4",
           "CL Fig 9 / IM Fig 2-4: ratios and KL of PPO, PPO-M, TRPO", scales=SCALES,
           run=diagnostic_targets.run_training,
           draw=draw, plan=dry_run.training_plan, evidence=evidence, papers=("cl", "im"), provides=("tr_",),
           presets=ALGORITHMS, options=("algorithm",)),
)

__all__ = ["ALGORITHMS", "SCALES", "TARGETS", "draw", "plot", "reference_values", "summary"]
