"""fig-ablation — CL Fig. 1 / IM Fig. 1: the 2^4 ablation of PPO's optimizations.

Value clipping × reward scaling × orthogonal init × Adam LR annealing, crossed with a learning-rate grid and seeds,
trained per task as ONE compiled sweep. Analysis as in the original notebook (ref §3 "The 2^4 ablation grid"): an
agent's score is the max over iterations of its mean episodic return; per toggle combination the learning rate with
the best seed-average is chosen; the agents at those learning rates (seeds × 2^4) are split by each toggle on/off
and their scores drawn as histograms. The claims read each toggle's effect from each seed's agents at the learning
rate the other seeds chose
([`agents_at_held_out_best_lr`][pgdiag.studies.ablation.agents_at_held_out_best_lr]), free of the
in-sample selection.

Base configuration: the review-period code's PPO defaults that the grid was
run with ([C] ``MuJoCo.json``, ref §3): ε = 0.2 (also the value-clipping ε,
as [C] reused it), value LR 1e-4, reward clip ±10 (active only with reward
scaling), observation normalization with clip ±10, tanh, 10 × 32 minibatches.
"""

from __future__ import annotations

import os

import numpy as np

from pgdiag.config import CPU_SCALE, Config, ConfigError
from pgdiag.experiments import dry_run, figures, study_dir
from pgdiag.studies.ablation import evidence as ev
from pgdiag.studies.ablation.scores import (TOGGLES, agents_at_best_lr, agents_at_held_out_best_lr, best_learning_rates,
                                            censored, saved_scores, toggle_effects)
from pgdiag.experiments.scales import MID_TRAINING, Scale, pick
from pgdiag.experiments.target_types import Target
from pgdiag.experiments.training import train_once


#: IM §3's learning-rate grid: every toggle combination is trained at each, and its best one compared
LEARNING_RATES = (1e-5, 8e-5, 1.5e-4, 2.2e-4)
_PAPER_BASE = dict(algorithm="ppo", num_envs=1, steps_per_env=2048, num_iterations=488, ppo_epochs=10,
                   value_epochs=10, num_minibatches=32, reset_every_iteration=True)
#: The mid scale's learning rates: IM's grid less 1.5e-4, the interior point nearest its neighbours (1.47x below
#: 2.2e-4), so that the grid keeps its span 1e-5 - 2.2e-4, over which the combinations' best learning rates spread
#: in a run of a fifth of the papers' length: 100 iterations of all four LRs x 6 seeds on Hopper (the 2-core CPU of
#: docs/plans.md) chose 1e-5 for 6 of the 16 combinations, 8e-5 for 4, 2.2e-4 for 5 and 1.5e-4 for 1. Without 1e-5
#: the claims read LR annealing's effect inconclusive (2 of 6 seeds > 0) where the whole grid reads it negative in
#: all 6; these three read every toggle's effect with the whole grid's signs. Three, not four: the fourth would take
#: the IM report at mid past 45 minutes; at least 2, for the claims read each seed's agents at the learning rate the
#: other seeds chose
#: ([`agents_at_held_out_best_lr`][pgdiag.studies.ablation.agents_at_held_out_best_lr]). Its seeds: 6,
#: the fewest whose sign test can pass Holm's first step in IM §3's family of three findings (the three toggles'
#: necessity, one unit per seed: 2^-6 <= 0.05/3; pgdiag.experiments.findings.agents_for); 5 cannot (1/32 > 0.05/3).
#: 16 combinations x 3 LRs x 6 seeds = 288 agents, 2,048 steps x 100 iterations each: 13.3 s an iteration on the
#: 2-core CPU of docs/plans.md alone (22 minutes), 30 minutes with other work beside it, the whole IM report at mid
#: 35 minutes (< 45; IM's fourth LR would plan it at 47: tests/test_dry_run.py).
MID_LEARNING_RATES = (1e-5, 8e-5, 2.2e-4)

SCALES = {
    "paper": Scale(
        tasks=("humanoid", "walker2d"), seeds=5, overrides=_PAPER_BASE,
        settings={"grid": {"lr_policy": LEARNING_RATES}},
        description="Humanoid and Walker2d, LR {1e-5, 8e-5, 1.5e-4, 2.2e-4}, 5 seeds, T=2048 × 488 "
                    "iterations (≈1M steps per agent): 320 agents per task as one compiled sweep."),
    # IM Fig 1 as the paper ran it, on Gym's models, its grid extended above its top (2.2e-4, below the 3e-4 PPO
    # is tuned to: a combination that peaks there is censored), 6 seeds (the fewest whose sign test can pass
    # Holm's first step over §3's three findings, 2^-6 <= 0.05/3)
    "replication": Scale(
        tasks=("walker2d", "humanoid"), seeds=6, overrides=_PAPER_BASE,
        task_overrides={"walker2d": {"model": "gym"}, "humanoid": {"model": "gym"}},
        settings={"grid": {"lr_policy": LEARNING_RATES + (3.2e-4,)}},
        description="IM Fig 1 (and CL Fig 1's Humanoid) as the papers ran them: Gym's Walker2d and Humanoid, "
                    "LR {1e-5, 8e-5, 1.5e-4, 2.2e-4} and 3.2e-4 above the paper's top, 6 seeds, T=2048 × 488 "
                    "iterations: 480 agents per task as one compiled sweep."),
    # the replication's Walker2d alone, what a 2-core CPU trains over several sessions (about 17 h)
    "replication-walker2d": Scale(
        tasks=("walker2d",), seeds=6, overrides=_PAPER_BASE, task_overrides={"walker2d": {"model": "gym"}},
        settings={"grid": {"lr_policy": LEARNING_RATES + (3.2e-4,)}},
        description="IM Fig 1 on Gym's Walker2d alone, as the replication scale runs it: LR {1e-5, 8e-5, "
                    "1.5e-4, 2.2e-4} and 3.2e-4 above the paper's top, 6 seeds, T=2048 × 488 iterations: 480 "
                    "agents as one compiled sweep (its Humanoid is the GPU part's)."),
    "smoke": Scale(
        tasks=("hopper",), seeds=2, settings={"grid": {"lr_policy": LEARNING_RATES}},
        overrides=dict(algorithm="ppo", ppo_epochs=10, value_epochs=10, num_iterations=20, **CPU_SCALE),
        description="Hopper (native MuJoCo on a CPU), the paper's LR grid, 2 seeds, 20 iterations of 4 × 256 "
                    "steps: 128 agents as one compiled sweep, a few minutes on a 2-core CPU."),
    # the papers' shape on Hopper for the mid scale's 100 iterations (MID_TRAINING's); 6 seeds, IM's LR grid less
    # 1.5e-4 (why: MID_LEARNING_RATES)
    "mid": Scale(
        tasks=("hopper",), seeds=6, settings={"grid": {"lr_policy": MID_LEARNING_RATES}},
        overrides={**_PAPER_BASE, "num_iterations": MID_TRAINING["overrides"]["num_iterations"]},
        description="Hopper at the papers' shape (1 × 2,048 steps, reset every iteration), 100 iterations, LR "
                    "{1e-5, 8e-5, 2.2e-4} (IM's grid less 1.5e-4), 6 seeds (what the claims need to pass Holm "
                    "over IM §3's three findings): 288 agents as one compiled sweep, 22–30 minutes on a 2-core "
                    "CPU."),
}


def base_config(task: str, scale: Scale) -> Config:
    """The fixed part of the ablation (everything but the four toggles and the LR)."""
    return Config(name=f"ablation/{task}").replace(
        task=task, **scale.training(task),
        clip_eps=0.2, value_clip_eps=0.2, lr_value=1e-4, gamma=0.99, gae_lambda=0.95, entropy_coef=0.0,
        reward_clipping=True, reward_clip=10.0, obs_normalization=True, obs_clipping=True, obs_clip=10.0,
        tanh_activations=True, grad_clipping=False)


def grid(scale: Scale) -> dict:
    return {**{t: [False, True] for t in TOGGLES}, "lr_policy": list(scale.settings["grid"]["lr_policy"])}


def plot(selected_by_task: dict, path: str, title: str = "") -> str:
    """Histograms of best-LR agents' scores split by each toggle (one row per task)."""
    from matplotlib.ticker import MaxNLocator

    tasks = list(selected_by_task)
    fig, axes = figures.panels(len(tasks), len(TOGGLES), 4, 3.2)
    for row, task in enumerate(tasks):
        sel = selected_by_task[task]
        scores = sel["score"].to_numpy()
        finite = scores[np.isfinite(scores)]
        bins = np.linspace(finite.min(), finite.max(), 21) if finite.size and finite.min() < finite.max() else 20
        for col, toggle in enumerate(TOGGLES):
            ax = axes[row, col]
            for value, color in ((False, "tab:red"), (True, "tab:blue")):
                s = sel.loc[sel[toggle] == value, "score"].to_numpy()
                s = s[np.isfinite(s)]
                ax.hist(s, bins=bins, alpha=0.55, color=color,
                        label=f"{'on' if value else 'off'} (mean {s.mean():.1f}, n={s.size})" if s.size
                        else f"{'on' if value else 'off'} (n=0)")
            ax.set_title(f"{task}: {toggle.replace('_', ' ')}", fontsize=10)
            ax.set_xlabel("agent score (max mean return)")
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # agent counts
            if col == 0:
                ax.set_ylabel("agents")
    return figures.save(fig, path, title, dpi=110, legend=True)


STUDY = "ablation"


def _configured(task: str, sc: Scale, overrides: dict) -> Config:
    """The scale's base configuration on ``task`` with the user's ``overrides`` (``--set``), refusing those the
    study sets itself: its algorithm and task, and the axes of its grid (which would silently win)."""
    own = sorted(set(overrides) & ({"algorithm", "task", *TOGGLES} | set(grid(sc))))
    if own:
        raise ConfigError(f"fig-ablation sets {', '.join(own)} itself (PPO, its --task, its 2^4 toggles × "
                          f"learning-rate grid); --set {own[0]}=... cannot change it")
    return base_config(task, sc).replace(**overrides)


def run(target, scale: str = "smoke", out: str = "results/ablation", tasks: tuple | None = None,
        seeds: int | None = None, progress: bool | None = None, **static_overrides) -> dict:
    """Train the ablation (one compiled sweep per task), record the study and
    [`draw`][pgdiag.studies.ablation.draw] it.

    Writes ``<out>/<task>/`` run directories and ``<out>/study.json``, then
    ``<out>/best_lr_<task>.csv``, ``<out>/effects_<task>.csv`` and ``<out>/fig-ablation.png``.
    """
    sc = pick(target.scales, scale)
    tasks = tuple(tasks or sc.tasks_of())
    configs = {task: _configured(task, sc, static_overrides) for task in tasks}  # validate all first
    # a task's run already saved with this configuration is read back, an interrupted one resumed
    runs = {task: train_once(os.path.join(out, task), configs[task], grid(sc), seeds or sc.seeds, progress,
                             label=f"{target.name} {task}") for task in tasks}
    study_dir.write(out, target.study, scale, tasks, seeds=seeds or sc.seeds,
                    learning_rates=list(sc.settings["grid"]["lr_policy"]))
    return {**target.redraw(out), "runs": runs}


def _tables_text(tables: dict) -> str:
    """The best learning rate per toggle combination and the toggles' effects, per task, as text."""
    return "\n".join(f"== {task}: best learning rate per toggle combination\n{best.to_string(index=False)}\n"
                     f"{effects.to_string(index=False)}" for task, (best, effects) in tables.items())


def draw(target, from_dir: str, out: str | None = None, tasks=None) -> dict:
    """The analysis CSVs and the figure from the study saved in ``from_dir`` (written to
    ``out``, default ``from_dir``); reads the run directories only.

    Returns ``{"runs": {task: RunResult}, "tables": {task: (best, effects)}, "figure": path, "text": ...}``.
    """
    record = study_dir.read(from_dir, target.study, target.name)
    tasks = study_dir.select_tasks(record, tasks, from_dir, target.name)
    out = out or from_dir
    os.makedirs(out, exist_ok=True)
    selected, outputs = {}, {"runs": {}, "tables": {}}
    for task, (result, scores) in saved_scores(from_dir, target.name, tasks).items():
        best = best_learning_rates(scores)
        sel = agents_at_best_lr(scores)
        effects = toggle_effects(sel)
        figures.write_csv(best, os.path.join(out, f"best_lr_{task}.csv"), index=False)
        figures.write_csv(effects, os.path.join(out, f"effects_{task}.csv"), index=False)
        selected[task] = sel
        outputs["runs"][task] = result
        outputs["tables"][task] = (best, effects)
    n_agents = outputs["runs"][tasks[0]].num_agents
    outputs["figure"] = plot(selected, os.path.join(out, f"{target.name}.png"),
                             title=f"2^4 ablation ({record['scale']} scale): scores of best-LR agents, "
                                   f"{n_agents} agents per task trained as one compiled sweep")
    outputs["text"] = _tables_text(outputs["tables"])
    outputs["aggregates"] = toggle_aggregates(saved_scores(from_dir, target.name, tasks),
                                              os.path.join(out, f"{target.name}-aggregates"))
    return outputs


def toggle_aggregates(saved: dict, path_stem: str) -> dict:
    """rliable's aggregates over tasks × agents of each toggle on and off, and P(on > off), from the agents at
    the learning rate the other seeds chose
    ([`agents_at_held_out_best_lr`][pgdiag.studies.ablation.agents_at_held_out_best_lr])."""
    import pandas as pd

    from pgdiag.experiments.aggregate_tables import summarize, write_aggregates

    rows = []
    for task, (_, scores) in saved.items():
        held = agents_at_held_out_best_lr(scores)
        for t in TOGGLES:
            rows.append(pd.DataFrame({"task": task, "label": np.where(held[t], f"{t} on", f"{t} off"),
                                      "score": held.score.to_numpy()}))
    summary = summarize(pd.concat(rows, ignore_index=True), "an agent's max mean episodic return (IM §3)",
                        pairs=[(f"{t} on", f"{t} off") for t in TOGGLES])
    return write_aggregates(summary, path_stem, "2^4 ablation: each toggle on and off, aggregated over tasks × agents")


def plan(target, scale: str = "smoke", tasks=None, seeds=None, memory: int | None = 1 << 62, **overrides) -> list:
    """One compiled sweep per task: 2^4 toggle combinations × the learning rates × seeds agents."""
    sc = pick(target.scales, scale)
    n = seeds or sc.seeds
    agents = 2 ** len(TOGGLES) * len(sc.settings["grid"]["lr_policy"]) * n
    bases = {t: _configured(t, sc, overrides) for t in tuple(tasks or sc.tasks_of())}
    return [dry_run.training_program(t, "ppo (2^4 toggles × LR)", base.static, agents, memory,
                                     spec=(base, grid(sc), n)) for t, base in bases.items()]


def evidence(target, from_dir: str, notes: list) -> list:
    """Per task, each toggle's effect on matched pairs of agents at their combination's best LR chosen on the
    other seeds ([`agents_at_held_out_best_lr`][pgdiag.studies.ablation.agents_at_held_out_best_lr]),
    and the best configuration with it against the best without
    ([`best_evidence`][pgdiag.studies.ablation.evidence.best_evidence])."""
    record = study_dir.read(from_dir, target.study, target.name)
    saved = saved_scores(from_dir, target.name, record["tasks"])
    notes += [n for n in (censored(t, scores) for t, (_, scores) in saved.items()) if n]
    selected = {t: agents_at_held_out_best_lr(scores) for t, (_, scores) in saved.items()}
    return ev.ablation_evidence(selected, TOGGLES) + ev.best_evidence({t: s for t, (_, s) in saved.items()}, TOGGLES)


TARGET = Target("fig-ablation", STUDY, "training", "CL Fig 1 / IM Fig 1",
                "CL Fig 1 / IM Fig 1: the 2^4 toggle ablation × LR × seeds", scales=SCALES, run=run, draw=draw,
                plan=plan, evidence=evidence, papers=("cl", "im"), provides=("ablation_",), presets=("ppo",),
                notebook="implementation-matters")
TARGETS = (TARGET,)

__all__ = ["LEARNING_RATES", "MID_LEARNING_RATES", "SCALES", "STUDY", "TARGET", "TARGETS", "base_config", "draw",
           "grid", "plan", "plot", "run"]
