"""fig-grad-variance, fig-grad-true, fig-step-variance — CL §5.1, Figs 2/3/11/12/13 (ref §4.2 items 1–3).

The three targets share one study: PPO and TRPO trained with checkpoints
(``OUT/runs/<task>-<ppo|trpo>/``), then measured at those checkpoints by
[`pgdiag.diagnostics.gradient_study`][pgdiag.studies.gradients.diagnostic.gradient_study] (fig-grad-variance and
fig-grad-true: one measurement) or [`pgdiag.diagnostics.step_study`][pgdiag.studies.steps.diagnostic.step_study].
Training and measurements already on disk with the same settings are reused,
so running the three targets in turn trains once. ``runs=[DIR, …]`` measures
existing run directories instead of training. Figures and summary tables are
drawn from the saved diagnostics alone (``--from``).

On the linear-quadratic task (``lqr``) fig-grad-true also draws each
estimate's cosine to the exact ∇J beside its cosine to the large-sample
gradient, and the summary reports the large-sample gradient's own cosine to
∇J: how far the practical estimator's limit is from the true gradient.

On every task fig-grad-true draws the truth's own ceiling: the cosine of the large-sample gradient itself to the
gradient it estimates, from the split-half cosine of its streams
([`pgdiag.studies.gradients.measure.truth_ceiling`][pgdiag.studies.gradients.measure.truth_ceiling]) — an
estimate equal to that gradient would reach only this line. The summary reports it (``truth_ceiling``) with the
split-half cosine (``truth_split_half``) and how many times the largest N the truth holds (``true_ratio``; CL Fig 3:
10).
"""

from __future__ import annotations

import os

import numpy as np

import functools

from pgdiag.config import CPU_SCALE
from pgdiag.studies.gradients.diagnostic import GRADIENTS
from pgdiag.diagnostics.sizes import PAPER_SIZES, log_sizes
from pgdiag.experiments import diagnostic_targets, dry_run, figures
from pgdiag.studies.gradients import evidence as ev
from pgdiag.experiments.figures import COLORS
from pgdiag.experiments.scales import MID_CHECKPOINTS, MID_TRAINING, Scale, replication_training
from pgdiag.experiments.target_types import Measurement, Target

ALGORITHMS = ("ppo", "trpo")
STUDY = "gradients"


# Every scale's true gradient holds at least TRUE_RATIO (10) × its largest N, as CL Fig 3's ten million pairs
# against estimates up to 1e6 (CL §5.1); the study records the ratio reached (subjects' true_ratio).
#: the papers' sample sizes (CL Figs 2, 3, 13): K = 10 estimates at N = 1e2 … 1e6, a truth from 1e7, M = 100 steps
_PAPER_MEASURES = {"gradients": dict(sizes=PAPER_SIZES["gradients"], estimates=10, true_pairs=10_000_000),
                   "steps": dict(batches=100)}

# N up to 4 batches: enough to tell "several-fold" (> 3×) from not; the claim on the largest N reads the papers'
# ~1e6 and is not made at these sizes
_MID_MEASURES = {"gradients": dict(sizes=log_sizes(1e2, 8_192), estimates=10, true_pairs=81_920),
                 "steps": dict(batches=16)}

SCALES = {
    "paper": Scale(
        tasks=("humanoid", "walker2d", "hopper", "lqr"), seeds=5, overrides={"checkpoint_at": (0, 150, 300, 450)},
        task_overrides={"lqr": {"checkpoint_at": (0, 20, 40)}}, settings=_PAPER_MEASURES,
        description="PPO and TRPO presets, 5 agents each (what a 24 GiB host holds at once; the report's §5.1 then "
                    "gives per-test verdicts, and --seeds 8 on a larger host lets its 7 findings pass Holm), "
                    "checkpoints after "
                    "iterations 0/150/300/450 (the LQR "
                    "task: 0/20/40 of 60); K = 10 estimates at N = 1e2 … 1e6, a true gradient from 1e7 pairs "
                    "(CL Fig 3); M = 100 steps per checkpoint."),
    "replication": Scale(
        **replication_training(("humanoid", "walker2d", "hopper")), settings=_PAPER_MEASURES,
        description="CL Figs 2, 3, 11–13 as the paper ran them: Gym's Humanoid, Walker2d and Hopper, PPO and "
                    "TRPO of the runs the trust-regions and value parts train (8 agents each: §5.1's 7 findings can "
                    "pass Holm), 488 iterations, checkpoints after 0/150/300/450; K = 10 estimates at N = 1e2 … "
                    "1e6, a true gradient from 1e7 pairs, M = 100 "
                    "steps per checkpoint (a 16-core GPU host)."),
    # the paper's runs at the sample sizes a CPU affords: every row is labelled "not at the paper's sample sizes"
    # until the replication scale's are measured (a GPU host)
    "replication-cpu": Scale(
        **replication_training(("humanoid", "walker2d", "hopper")),
        # subjects in turn: 64 Humanoid subjects' streams together need 15.6 GiB
        settings={**_MID_MEASURES, "gradients": {**_MID_MEASURES["gradients"], "batching": "map"}},
        description="CL Figs 2, 3, 11–13 on the paper's runs with the mid scale's sample sizes: Gym's Humanoid, "
                    "Walker2d and Hopper, PPO and TRPO of the runs the trust-regions and value parts train (8 "
                    "agents each), 488 iterations, checkpoints after 0/150/300/450; K = 10 estimates at N = 1e2 … "
                    "8,192 (4 batches), a true gradient from 10 × 8,192 pairs; M = 16 steps per checkpoint."),
    "smoke": Scale(
        tasks=("hopper", "lqr"), seeds=2, overrides={**CPU_SCALE, "num_iterations": 30, "checkpoint_at": (0, 15, 29)},
        settings={"gradients": dict(sizes=log_sizes(1e2, 1e4), estimates=10, true_pairs=102_400),
                  "steps": dict(batches=10)},
        description="Hopper (native MuJoCo on a CPU) and the LQR task at CPU scale: 30 iterations of 4 × 256 "
                    "steps, 2 agents per algorithm, checkpoints after iterations 0/15/29; K = 10 estimates at "
                    "N = 1e2 … 1e4 (the largest 10,240: 10 batches), a true gradient from 10 × 10,240 pairs; "
                    "M = 10 steps per checkpoint."),
    "mid": Scale(
        **MID_TRAINING, measured_at={"gradients": MID_CHECKPOINTS, "steps": MID_CHECKPOINTS},
        settings=_MID_MEASURES,
        description="Hopper at the papers' shape (1 environment × 2,048 steps per iteration, reset every "
                    "iteration), PPO and TRPO of the mid scale's shared runs (7 agents each), 100 iterations, "
                    "checkpoints after 0/31/61/92 (CL's 0/150/300/450 of 488 scaled to 100); K = 10 estimates at "
                    "N = 1e2 … 8,192 (4 batches), a true gradient from 10 × 8,192 pairs; M = 16 steps per "
                    "checkpoint: the papers' findings on a CPU."),
}


#: what each target's table notes (the figure's title is the target's own)
_NOTE = ("n_at_X: the N (state–action pairs) at which the mean over agents first reaches X, log-linearly "
         "interpolated (NaN: not within the grid); at_batch_size: at the algorithm's own batch size. objective: what "
         "each estimate differentiates (surrogate: CL eq. 15; own: the algorithm's own objective).")
_TRUTH_NOTE = (" true_ratio: the true gradient's pairs over the largest N (CL Fig 3: 10); truth_split_half: the "
               "cosine between two halves of the true gradient's streams; truth_ceiling: the true gradient's own "
               "cosine to the gradient it estimates, √(kρ/(1+(k−1)ρ)) from the split-half ρ (k = 2 for an even "
               "number of streams): the highest mean cosine to it an estimate can show.")


def _truth_columns(summary, studies):
    """fig-grad-true's summary with the truth's own convergence and (LQR) its cosine to the exact ∇J."""
    import pandas as pd

    subjects = pd.concat([s.subjects.assign(task=t) for t, s in studies.items()], ignore_index=True)
    keys = ["task", "label", "iteration"]
    limits = subjects[np.isfinite(subjects.true_to_exact)]
    if len(limits):
        lim = limits.groupby(keys)["true_to_exact"].mean().rename("true_gradient_cos_to_exact")
        summary = summary.merge(lim.reset_index(), how="left", on=keys)
    # the truth's own convergence (studies saved before it was measured lack the columns)
    own = [c for c in ("true_ratio", "truth_split_half", "truth_ceiling") if c in subjects]
    if own:
        summary = summary.merge(subjects.groupby(keys)[own].mean().reset_index(), how="left", on=keys)
    return summary


def draw_gradients(target, from_dir: str, out: str | None = None, *, measure: str, title: str) -> dict:
    """fig-grad-variance (``measure="pairwise"``) or fig-grad-true (``"true"``) from the gradient studies saved
    under ``from_dir``: the figure and summary table."""
    import pandas as pd

    record, studies = diagnostic_targets.load_measured(target, from_dir)
    out = out or from_dir
    summary = pd.concat([s.summary(measure).assign(task=t, objective=s.manifest["resolved"].get(
        "objective", "surrogate")) for t, s in studies.items()], ignore_index=True)
    if measure == "true":
        summary = _truth_columns(summary, studies)
    path = plot_gradients(studies, measure, os.path.join(out, f"{target.name}.png"),
                          f"{title} ({record['scale']} scale)")
    summary = rounded(summary[["task"] + [c for c in summary.columns if c != "task"]])
    md, csv = figures.write_table(summary, os.path.join(out, f"{target.name}-summary"), title,
                                  _NOTE + (_TRUTH_NOTE if measure == "true" else ""))
    return {"figure": path, "summary": summary, "markdown": md, "csv": csv, "studies": studies}


def pairwise_evidence(target, from_dir: str, notes: list) -> list:
    return ev.gradient_pairwise_evidence(diagnostic_targets.load_measured(target, from_dir)[1])


def true_evidence(target, from_dir: str, notes: list) -> list:
    return ev.gradient_true_evidence(diagnostic_targets.load_measured(target, from_dir)[1], notes)


def rounded(frame):
    """N to whole pairs, cosines and KLs to 3 significant digits (the CSV keeps them as printed)."""
    out = frame.copy()
    for col in out.columns:
        if col.startswith("n_at_"):
            out[col] = out[col].round().astype("Int64")
        elif out[col].dtype.kind == "f":
            out[col] = out[col].map(lambda v: float(f"{v:.3g}") if np.isfinite(v) else v)
    return out


def algorithm_of(label: str) -> str:
    head = label.split("/")[0].lower()
    return head if head in COLORS else "ppo"


def plot_gradients(studies: dict, measure: str, path: str, title: str) -> str:
    tasks = list(studies)
    iters = {t: sorted(studies[t].pairs.iteration.unique()) for t in tasks}
    cols = max(len(v) for v in iters.values())
    fig, axes = figures.panels(len(tasks), cols, 4.2, 3.4)
    for r, task in enumerate(tasks):
        study = studies[task]
        curves = study.curves(measure)
        exact = study.curves("exact") if measure == "true" and study.manifest["resolved"]["exact"] else None
        subjects = study.subjects
        ceiling = measure == "true" and "truth_ceiling" in subjects
        for c, it in enumerate(iters[task]):
            ax = axes[r, c]
            if ceiling:  # the truth's own cosine to the gradient it estimates: the curves' ceiling
                here = subjects[subjects.iteration == it]
                for label, value in here.groupby("label")["truth_ceiling"].mean().items():
                    if np.isfinite(value):
                        ax.axhline(value, color=COLORS[algorithm_of(label)], ls="-.", lw=0.9,
                                   label=f"{label}: the true gradient's own cosine (the curves' ceiling)")
                        ax.annotate(f"{value:.3f}", (1.0, value), xycoords=("axes fraction", "data"),
                                    ha="right", va="bottom", fontsize=figures.LEGEND_SIZE - 1,
                                    color=COLORS[algorithm_of(label)])
            for i, ((label, run, agent), d) in enumerate(curves[curves.iteration == it].groupby(
                    ["label", "run", "agent"])):
                color = COLORS[algorithm_of(label)]
                first = not any(line.get_label() == label for line in ax.get_lines())
                ax.plot(d.n, d["mean"], color=color, lw=1.2, label=label if first else None)
                ax.fill_between(d.n, d.low, d.high, color=color, alpha=0.15)
                if exact is not None:
                    e = exact[(exact.iteration == it) & (exact.run == run) & (exact.agent == agent)]
                    ax.plot(e.n, e["mean"], color=color, lw=1.2, ls="--",
                            label=f"{label}: to exact ∇J" if first else None)
            ax.axvline(study.batch_size, color="grey", ls=":", lw=1, label="the algorithm's batch size")
            ax.set_xscale("log")
            ax.set_ylim(figures.band_floor(curves.low, -0.1 if measure == "pairwise" else -0.2), 1.02)
            ax.set_title(f"{task}, iteration {it}", fontsize=9)
            ax.set_xlabel("state–action pairs N")
            ax.set_ylabel("mean pairwise cosine" if measure == "pairwise" else "mean cosine to true gradient")
        for c in range(len(iters[task]), cols):
            axes[r, c].axis("off")
    return figures.save(fig, path, title, dpi=100, legend=True)


_GRADIENTS = dict(name="gradients", study=GRADIENTS,
                  tiny=dict(sizes=(100, 1000), estimates=3, true_pairs=10_240))   # the truth 10× the largest N
COMMON = dict(study=STUDY, kind="diagnostic", scales=SCALES, run=diagnostic_targets.run, plan=dry_run.measurement_plan,
               papers=("cl",), presets=ALGORITHMS, notebook="closer-look")

TARGETS = (
    Target("fig-grad-variance", paper="CL Figs 2/11", help="CL Fig 2/11: pairwise cosine of gradient estimates vs N",
           draw=functools.partial(draw_gradients, measure="pairwise",
                                  title="Gradient-estimate variance: mean pairwise cosine of K estimates vs N"),
           evidence=pairwise_evidence, provides=("grad_pairwise",),
           measurement=Measurement(**_GRADIENTS), **COMMON),
    Target("fig-grad-true", paper="CL Figs 3/12",
           help="CL Fig 3/12: cosine of gradient estimates to the true (and exact LQR) gradient vs N",
           draw=functools.partial(draw_gradients, measure="true",
                                  title="Gradient estimates vs the true gradient: mean cosine to a large-sample "
                                        "(and, on LQR, the exact) gradient"),
           evidence=true_evidence, provides=("grad_true",),
           measurement=Measurement(**_GRADIENTS), **COMMON),
)

__all__ = ["ALGORITHMS", "COMMON", "SCALES", "STUDY", "TARGETS", "algorithm_of", "draw_gradients", "plot_gradients",
           "rounded"]
