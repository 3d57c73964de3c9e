"""fig-no-baseline — CL §5.2: "agents trained without a baseline function attain almost an order of magnitude worse
final reward".

PPO with its value network left out of the policy's advantages (the ``ppo-nobaseline`` preset: the ``value_baseline``
knob off, the advantages the discounted returns — the gradient studies' zero baseline) beside PPO on the baseline
figure's tasks, drawn as mean reward over training. PPO trains in the sweep the scale shares with the other targets
(at mid, the closer look's shared runs), the variant in a sweep of its own beside it, so no shared run is retrained.
The evidence is each agent's final score (the mean of its last five iterations' mean reward) over PPO's median.
"""

from __future__ import annotations

import os

from pgdiag.config import CPU_SCALE
from pgdiag.experiments import diagnostic_targets, dry_run, figures, study_dir
from pgdiag.experiments.scales import MID_TRAINING, Scale, pick, replication_training
from pgdiag.studies.no_baseline import evidence as ev
from pgdiag.studies.presets.targets import agent_scores, plot_rewards, summarize
from pgdiag.experiments.target_types import Target

STUDY = "no-baseline"
ALGORITHMS = ("ppo", "ppo-nobaseline")
VARIANT = ("ppo-nobaseline",)

SCALES = {
    "paper": Scale(tasks=("walker2d",), seeds=8,
                   description="Walker2d (CL Figs 5, 16: the task of the baseline study §5.2's sentence closes), PPO "
                               "and PPO without a baseline, 8 agents each, the papers' presets (488 iterations of "
                               "2,048 steps)."),
    "smoke": Scale(tasks=("hopper",), seeds=4, overrides={**CPU_SCALE, "num_iterations": 30},
                   description="Hopper (native MuJoCo on a CPU) at CPU scale: 30 iterations of 4 × 256 steps, 4 "
                               "agents each."),
    "mid": Scale(**MID_TRAINING,
                 description="Hopper at the papers' shape, 100 iterations: PPO of the mid scale's shared runs (7 "
                             "agents), PPO without a baseline, 7 agents, in a sweep of its own beside them."),
    "replication": Scale(**replication_training(("walker2d", "hopper"), presets=("ppo", "ppo-m", "trpo")),
                         description="CL §5.2 as the paper ran it: Gym's Walker2d (and Hopper, whose row is "
                                     "exploratory: the sentence closes Figs 5, 16's Walker2d study), 488 "
                                     "iterations, 8 agents each; PPO of the runs fig-value reads there, PPO without "
                                     "a baseline beside them."),
}


def _groups(sc) -> tuple:
    """The presets trained as their sweeps: the scale's shared ones (PPO among them), then the variant alone."""
    return (tuple(sc.presets) or ("ppo",)), VARIANT


def run(target, scale="smoke", out=None, tasks=None, seeds=None, progress=None, **overrides) -> dict:
    sc = pick(target.scales, scale)
    tasks = tuple(tasks or sc.tasks_of())
    out = out or f"results/{STUDY}-{scale}"
    entries = [diagnostic_targets.train_runs(out, sc, tasks, group, seeds or sc.seeds, progress, overrides)
               for group in _groups(sc)]
    study_dir.write(out, STUDY, scale, tasks, algorithms=list(ALGORITHMS),
                    runs={t: [d for e in entries for d in e["runs"][t]] for t in tasks},
                    run_seeds={d: s for e in entries for d, s in e["run_seeds"].items()})
    return target.redraw(out)


def plan(target, scale: str = "smoke", tasks=None, seeds=None, memory: int | None = 1 << 62, **overrides) -> list:
    sc = pick(target.scales, scale)
    return [p for t in tuple(tasks or sc.tasks_of()) for group in _groups(sc)
            for p in dry_run.preset_training(t, group, seeds or sc.seeds, sc.training(t, overrides), memory)]


def draw(target, from_dir: str, out: str | None = None, tasks=None) -> dict:
    """The reward curves and a table of final scores from the study saved in ``from_dir``."""
    record, metrics = study_dir.load_runs(from_dir, STUDY, target.name, tasks)
    out = out or from_dir
    path = plot_rewards(metrics, os.path.join(out, f"{target.name}.png"), algorithms=ALGORITHMS,
                        title=f"PPO with and without a baseline ({record['scale']} scale)")
    table = summarize(agent_scores(metrics))
    md, csv = figures.write_table(table.round(1), os.path.join(out, f"{target.name}-scores"),
                                  "Final scores with and without a baseline",
                                  "Mean over agents of each agent's mean reward over its last five iterations, with a "
                                  "95% Student-t interval.")
    return {"figure": path, "markdown": md, "csv": csv, "summary": table, "metrics": metrics}


def evidence(target, from_dir: str, notes: list) -> list:
    return ev.no_baseline_evidence(agent_scores(study_dir.load_runs(from_dir, STUDY, target.name)[1]))


TARGETS = (
    Target("fig-no-baseline", STUDY, "training", "CL §5.2",
           "CL §5.2: PPO trained without a baseline against PPO (final reward)", scales=SCALES, run=run, draw=draw,
           plan=plan, evidence=evidence, papers=("cl",), provides=("nobaseline_",), presets=ALGORITHMS,
           notebook="closer-look"),
)

__all__ = ["ALGORITHMS", "SCALES", "STUDY", "TARGETS", "draw"]
