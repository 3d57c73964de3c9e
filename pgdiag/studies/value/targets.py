"""fig-value — CL §5.2, Figs 4/14/15: does the value network predict the value?

Every training iteration records the mean relative error of the *updated*
value network (``pgdiag.metrics.METRICS``, [`pgdiag.stages.value_errors`][pgdiag.stages.value_errors]):

* against its own training target V_old + Â (GAE MRE) — what it is fit to; and
  the original code's "GAE MRE" (``value_mre_gae_original``), the value loss
  per state over |V_old + Â| (ref §4.1 item 3): a squared error over a value,
  not a relative error, which is what CL's "small" GAE MRE measured;
* against the discounted returns of the rewards it is trained on (returns
  MRE) where they are complete: on the training batch, the states whose
  episode ends inside the batch; on the held-out batch every state, its
  environments run on past the batch end to each episode's end (keeping only
  episodes that end inside a batch selects on the outcome: short episodes);
* against the same returns over every state, each cut at the batch end
  without bootstrapping (truncated returns MRE): the original code's target,
  whose error is partly the target's own wherever an episode outlives the
  batch;
* on the linear-quadratic task, against the exact V^π of the pre-update
  policy in the same reward units — the true value, not a sample of it;

on the training batch every iteration, and on a held-out batch from the pre-update policy every ``heldout_every``
iterations. On the held-out batch also the squared error against the complete returns and its explained variance:
whether a network predicts E[R | s] is a squared-error question, E[(V − R)²] = E[(V − V^π)²] + E[(R − V^π)²], and
the last term — the returns' own noise — is a floor no network goes below; on the linear-quadratic task it is
measured (V^π's own MSE against the returns) and drawn beside the network's, and so are V^π's own MREs against the
complete and the truncated returns on the same states (``heldout_value_mre_floor``,
``heldout_value_mre_floor_truncated``): what a perfect value function reads there, so an MRE "off by 50%" can be
told from the returns' own scatter. A relative error has no such floor to read against, and returns near 0 inflate
it without bound. This target trains PPO and TRPO with the held-out batch on and draws the errors per iteration (log
scale, mean over agents with a 95% Student-t band); [`draw`][pgdiag.studies.value.draw] redraws from
the run directories alone.
"""

from __future__ import annotations

import os

import numpy as np

from pgdiag.config import CPU_SCALE
from pgdiag.experiments import diagnostic_targets, dry_run, figures, study_dir
from pgdiag.studies.value import evidence as ev
from pgdiag.experiments.figures import COLORS, LABELS
from pgdiag.experiments.scales import MID_TRAINING, Scale, replication_training, tasks_training
from pgdiag.experiments.target_types import Target
from pgdiag.stats import t_interval

STUDY = "value"
ALGORITHMS = ("ppo", "trpo")
#: (metric suffix, panel title); each panel draws the training and the held-out batch
ERRORS = (("gae", "against its target V_old + Â (GAE MRE)"),
          ("gae_original", "the original's GAE \"MRE\": value loss / |V_old + Â|"),
          ("returns", "against the complete returns (returns MRE)"),
          ("returns_truncated", "against returns cut at the batch end (the original's)"),
          ("exact", "against the exact V^π (LQR)"))
#: held-out squared-error metrics (pgdiag.metrics.METRICS): (column, error name in the curves)
HELDOUT_MSE = (("heldout_value_mse_returns", "returns_mse"), ("heldout_value_ev_returns", "returns_ev"),
               ("heldout_value_mse_exact", "exact_mse"), ("heldout_value_mse_floor", "floor_mse"))
#: the noise floor's MREs on the held-out batch (LQR: the exact V^π against the same returns on the same states),
#: drawn as a third "batch" in the panel of the error they are the floor of: (column, error)
FLOOR_MRE = (("heldout_value_mre_floor", "returns"), ("heldout_value_mre_floor_truncated", "returns_truncated"))
FLOOR = "noise floor (V^π)"

SCALES = {
    "paper": Scale(tasks=("humanoid", "walker2d", "hopper", "lqr"), seeds=8, overrides={"heldout_every": 10},
                   description="PPO and TRPO presets on Humanoid, Walker2d, Hopper (488 iterations) and the LQR "
                               "task; 8 agents each (the fewest whose sign tests can pass Holm over a section's 8 "
                               "findings); a held-out batch every 10 "
                               "iterations (the original's "
                               "log_every)."),
    "smoke": Scale(tasks=("hopper", "lqr"), seeds=2,
                   overrides={**CPU_SCALE, "num_iterations": 30, "heldout_every": 2},
                   description="Hopper (native MuJoCo on a CPU) and the LQR task at CPU scale: 30 iterations of "
                               "4 × 256 steps, 2 agents per algorithm, a held-out batch every 2 iterations."),
    "mid": Scale(**MID_TRAINING,
                 description="Hopper at the papers' shape (1 × 2,048 steps, reset every iteration), 100 "
                             "iterations, a held-out batch every 10 iterations; PPO and TRPO of the mid scale's "
                             "shared runs (7 agents each; PPO-M trains beside them for the other targets)."),
    "tasks": Scale(**{**tasks_training(("walker2d",)), "presets": ("ppo", "trpo")},
                   description="Walker2d (CL Fig 4: where the paper read its value network) at the mid scale's shape: "
                               "PPO and TRPO, 7 agents each, 100 iterations of 1 × 2,048 steps, a held-out batch every "
                               "10 iterations."),
    "replication": Scale(**{**replication_training(("walker2d", "hopper")), "presets": ("ppo", "ppo-m", "trpo")},
                         description="CL Figs 4, 14, 15 as the paper ran them: Gym's Walker2d and Hopper, 488 "
                                     "iterations of 1 × 2,048 steps, PPO and TRPO, 8 agents each (PPO-M trains "
                                     "beside PPO for the other targets), a held-out batch every 10 iterations, "
                                     "checkpoints after 0/150/300/450."),
    # CL Figs 14, 15's Humanoid: the trust-regions part's runs (the same training, a held-out batch every 10
    # iterations), read without training anything
    "replication-humanoid": Scale(**replication_training(("humanoid",)),
                                  description="CL Figs 14, 15 on Gym's Humanoid as the paper ran it: PPO and TRPO of "
                                              "the trust-regions part's runs (8 agents each), 488 iterations of "
                                              "1 × 2,048 steps, a held-out batch every 10 iterations."),
}


def curves(metrics):
    """Per task, algorithm, batch (train / held-out), error and iteration: the mean over agents and its 95%
    Student-t interval, the agents being the units (iterations where the error was not measured are left out)."""
    import pandas as pd

    rows = []
    series = [(f"{prefix}value_mre_{kind}", kind, batch) for kind, _ in ERRORS
              for batch, prefix in (("train", ""), ("held-out", "heldout_"))]
    series += [(col, kind, "held-out") for col, kind in HELDOUT_MSE]
    series += [(col, kind, FLOOR) for col, kind in FLOOR_MRE]
    for col, kind, batch in series:
        if col not in metrics:
            continue
        for (task, algo, it), part in metrics.groupby(["task", "algorithm", "iteration"], sort=True):
            values = part[col].to_numpy()
            if not np.isfinite(values).any():
                continue
            mean, low, high = t_interval(values)[:3]
            rows.append({"task": task, "algorithm": algo, "batch": batch, "error": kind, "iteration": it,
                         "mean": mean, "low": low, "high": high, "agents": int(np.isfinite(values).sum())})
    return pd.DataFrame(rows)


def summary(metrics):
    """Per task and algorithm: each error's mean over agents and over the second half of training
    (the errors drift with the policy; the first iterations are dominated by the initial network)."""
    import pandas as pd

    rows = []
    for (task, algo), m in metrics.groupby(["task", "algorithm"], sort=False):
        late = m[m.iteration >= m.iteration.max() / 2]
        row = {"task": task, "algorithm": LABELS.get(algo, algo), "agents": m.agent.nunique(),
               "iterations": f"{int(late.iteration.min())}–{int(late.iteration.max())}"}
        for kind, _ in ERRORS:
            for batch, prefix in (("train", ""), ("held-out", "heldout_")):
                if f"{prefix}value_mre_{kind}" not in late:   # runs recorded before the metric existed
                    continue
                values = late[f"{prefix}value_mre_{kind}"].to_numpy()
                row[f"{kind} MRE ({batch})"] = float(np.nanmean(values)) if np.isfinite(values).any() else np.nan
        for col, kind in FLOOR_MRE:
            if col in late:
                values = late[col].to_numpy()
                row[f"{kind} MRE (noise floor)"] = float(np.nanmean(values)) if np.isfinite(values).any() else np.nan
        for col, kind in HELDOUT_MSE:
            if col in late:
                values = late[col].to_numpy()
                name = {"returns_mse": "returns MSE", "returns_ev": "returns EV", "exact_mse": "exact MSE",
                        "floor_mse": "noise floor MSE"}[kind]
                row[f"{name} (held-out)"] = float(np.nanmean(values)) if np.isfinite(values).any() else np.nan
        rows.append(row)
    frame = pd.DataFrame(rows)
    return frame.dropna(axis=1, how="all")


def plot(curve, path: str, title: str) -> str:
    tasks = list(dict.fromkeys(curve.task))
    kinds = [k for k, _ in ERRORS if (curve.error == k).any()]
    mse = (curve.error == "returns_mse").any()
    cols = len(kinds) + int(mse)
    fig, axes = figures.panels(len(tasks), cols, 5, 3.4)
    for r, task in enumerate(tasks):
        for c, kind in enumerate(kinds):
            ax = axes[r, c]
            part = curve[(curve.task == task) & (curve.error == kind)]
            if part.empty:
                ax.axis("off")
                continue
            for (algo, batch), d in part.groupby(["algorithm", "batch"], sort=True):
                style = dict(color=COLORS.get(algo, "k"), ls={"train": "-", FLOOR: ":"}.get(batch, "--"),
                             marker="o" if batch == "held-out" else None, ms=3, lw=1.2)
                ax.plot(d.iteration, d["mean"], label=f"{LABELS.get(algo, algo)}, {batch}", **style)
                ax.fill_between(d.iteration, d.low, d.high, color=style["color"], alpha=0.12)
            ax.set_yscale("log", base=2)
            ax.set_xlabel("iteration")
            ax.set_ylabel("mean relative error")
            ax.set_title(f"{task}: {dict(ERRORS)[kind]}", fontsize=9)
        if mse:
            _plot_mse(axes[r, -1], curve[curve.task == task], task)
    return figures.save(fig, path, title, dpi=100, legend=True)


def _plot_mse(ax, part, task):
    """Held-out MSE against the complete returns per algorithm; on LQR the noise floor (V^π's own MSE against
    the same returns) dotted beside it: the network's excess over the floor is its MSE against V^π."""
    drawn = False
    for kind, ls, what in (("returns_mse", "--", "held-out MSE"), ("floor_mse", ":", "noise floor (V^π)")):
        for algo, d in part[part.error == kind].groupby("algorithm", sort=True):
            color = COLORS.get(algo, "k")
            ax.plot(d.iteration, d["mean"], color=color, ls=ls, marker="o" if kind == "returns_mse" else None, ms=3,
                    lw=1.2, label=f"{LABELS.get(algo, algo)}, {what}")
            ax.fill_between(d.iteration, d.low, d.high, color=color, alpha=0.12)
            drawn = True
    if not drawn:
        ax.axis("off")
        return
    ax.set_yscale("log", base=2)
    ax.set_xlabel("iteration")
    ax.set_ylabel("mean squared error")
    ax.set_title(f"{task}: against the complete returns (held-out MSE)", fontsize=9)


def draw(target, from_dir: str, out: str | None = None, tasks=None) -> dict:
    """The figure, ``fig-value-summary.{md,csv}`` and ``fig-value-curves.csv`` from the runs of the study
    saved in ``from_dir`` (written to ``out``, default ``from_dir``); nothing is recomputed."""
    record, metrics = study_dir.load_runs(from_dir, STUDY, target.name, tasks)
    out = out or from_dir
    curve = curves(metrics)
    os.makedirs(out, exist_ok=True)
    figures.write_csv(curve, os.path.join(out, f"{target.name}-curves.csv"), index=False)
    table = summary(metrics)
    md, csv = figures.write_table(
        table.round(4), os.path.join(out, f"{target.name}-summary"), "Value prediction: mean relative errors",
        "MRE = mean over non-terminal states of |V − target|/|target| with the updated value network; "
        "gae_original: the original code's GAE \"MRE\", the value loss per state as configured (squared error, or "
        "the max of the clipped and unclipped ones) over |V_old + Â| — not a relative error, it scales with the "
        "rewards — what CL's \"GAE MRE\" read; returns: "
        "complete discounted returns of the learner's rewards (train: only states whose episode ends inside the "
        "batch; held-out: every state, its environments run on to each episode's end); returns_truncated: the "
        "same returns on every state, cut at the batch end (the original's); exact: the closed-form V^π of the "
        "pre-update policy (LQR). returns MSE / EV (held-out): squared error against the complete returns and "
        "explained variance 1 − Var(R − V)/Var(R); noise floor MSE (LQR): V^π's own MSE against the same "
        "returns, below which no network goes (returns MSE − noise floor = MSE against V^π, exact MSE, up to "
        "sampling); MRE (noise floor) (LQR): V^π's own MRE against the same returns on the same held-out states, "
        "what a perfect value function reads there. Means over agents and the second half of training.")
    path = plot(curve, os.path.join(out, f"{target.name}.png"),
                f"Value prediction error of the updated value network ({record['scale']} scale): solid = training "
                f"batch, dashed = held-out batch, dotted = V^π's own (LQR: the noise floor)")
    return {"figure": path, "summary": table, "curves": curve, "metrics": metrics, "markdown": md, "csv": csv}


def evidence(target, from_dir: str, notes: list) -> list:
    return ev.value_evidence(study_dir.load_runs(from_dir, STUDY, target.name)[1])


TARGETS = (
    Target("fig-value", STUDY, "training", "CL Figs 4/14/15",
           "CL Fig 4/14/15: value-network MRE against its target, the returns and (LQR) the exact V^π",
           scales=SCALES, run=diagnostic_targets.run_training, draw=draw, plan=dry_run.training_plan, evidence=evidence,
           papers=("cl",), provides=("value_heldout", "value_returns", "value_train"), presets=ALGORITHMS,
           options=("algorithm",), notebook="closer-look"),
)

__all__ = ["ALGORITHMS", "SCALES", "STUDY", "TARGETS", "curves", "draw", "summary"]
