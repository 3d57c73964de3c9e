"""fig-step-variance — CL §5.1, Figs 13 (ref §4.2 item 3): M steps of the algorithm itself from independent
batches at one policy, their pairwise cosines and the KLs between the policies they lead to.

A target of the gradient study (``results/gradients-<scale>``: its training, scales and checkpoints are the gradient
targets', so running them in turn trains once), measured by
[`pgdiag.diagnostics.step_study`][pgdiag.studies.steps.diagnostic.step_study]. The figure and summary table are
drawn from the saved studies alone (``--from``).
"""

from __future__ import annotations

import functools
import os

from pgdiag.experiments import diagnostic_targets, figures
from pgdiag.experiments.figures import COLORS
from pgdiag.experiments.target_types import Measurement, Target
from pgdiag.studies.gradients.targets import COMMON, algorithm_of, rounded
from pgdiag.studies.steps import evidence as ev
from pgdiag.studies.steps.diagnostic import STEPS


def draw_steps(target, from_dir: str, out: str | None = None, *, title: str) -> dict:
    """fig-step-variance from the step studies saved under ``from_dir``: the figure and summary table."""
    import pandas as pd

    record, studies = diagnostic_targets.load_measured(target, from_dir)
    out = out or from_dir
    summary = pd.concat([s.summary().assign(task=t) for t, s in studies.items()], ignore_index=True)
    path = plot_steps(studies, os.path.join(out, f"{target.name}.png"), f"{title} ({record['scale']} scale)")
    summary = rounded(summary[["task"] + [c for c in summary.columns if c != "task"]])
    md, csv = figures.write_table(summary, os.path.join(out, f"{target.name}-summary"), title,
                                  "Means over agents of each agent's mean over pairs of the M steps.")
    return {"figure": path, "summary": summary, "markdown": md, "csv": csv, "studies": studies}


def measured_evidence(target, from_dir: str, notes: list) -> list:
    return ev.step_evidence(diagnostic_targets.load_measured(target, from_dir)[1])


def plot_steps(studies: dict, path: str, title: str) -> str:
    fig, axes = figures.panels(len(studies), 2, 5, 3.4)
    for r, (task, study) in enumerate(studies.items()):
        for c, measure in enumerate(("cosine", "kl")):
            ax = axes[r, c]
            curves, shown = study.curves(measure), set()
            for (label, run, agent), d in curves.groupby(["label", "run", "agent"]):
                first = label not in shown
                shown.add(label)
                ax.errorbar(d.iteration, d["mean"], yerr=[d["mean"] - d.low, d.high - d["mean"]], marker="o",
                            ms=3, lw=1, capsize=2, color=COLORS[algorithm_of(label)], label=label if first else None)
            ax.set_xlabel("iteration")
            ax.set_ylabel("mean pairwise step cosine" if measure == "cosine" else "mean pairwise KL")
            if measure == "kl":
                ax.set_yscale("log")
            ax.set_title(task, fontsize=9)
    return figures.save(fig, path, title, dpi=100, legend=True)


TARGETS = (
    Target("fig-step-variance", paper="CL Fig 13",
           help="CL Fig 13: pairwise cosine and KL of the algorithm's own steps",
           draw=functools.partial(draw_steps, title="Step variance: pairwise cosine of the algorithm's own steps "
                                                    "and KL between the resulting policies"),
           evidence=measured_evidence, provides=("step_",),
           measurement=Measurement("steps", STEPS, tiny=dict(batches=2)),
           **COMMON),
)

__all__ = ["TARGETS", "draw_steps", "plot_steps"]
