"""The five algorithms side by side: fig-rewards, table-2 and table-3.

* ``fig-rewards`` (CL Fig. 10): mean episodic reward over training for PPO,
  PPO-M, PPO-NoClip, TRPO and TRPO+ on each task.
* ``table-2`` (IM Table 2): PPO, PPO-M, TRPO, TRPO+ per task, mean agent
  reward with a 95% Student-t interval over agents, AAI and ACLI with theirs,
  next to the published values.
* ``table-3`` (IM Table 3): PPO vs PPO-NoClip, the same statistics.

All three read one training study: every algorithm preset on every task.
Presets that share their static settings (PPO, PPO-M and PPO-NoClip; TRPO and
TRPO+) train together as one compiled sweep whose grid points are the
presets. A study already on disk with the same configuration is reused, so
the three targets train once between them.

The per-agent score is the mean of the last five iterations' mean reward
(what the original stored as ``5_rewards`` at the end of each run); the tables
can use the max over training instead (``statistic="max"``, the original
notebooks' choice). Which one the published tables used is not recorded
(ref §4.2 item 10). The per-iteration mean reward follows this engine's rule
(every episode that ended) or the original code's (``reporting="original"``:
an episode ending on the batch's last step is left out unless it is the only
one), so the tables can be computed exactly as published.

Training writes ``OUT/runs/<task>-<ppo|trpo>-<key>/`` and ``OUT/study.json``; the drawing functions
([`draw_rewards`][pgdiag.studies.presets.draw_rewards],
[`draw_table`][pgdiag.studies.presets.draw_table]) only read them, and the training entry points end by
calling them. At the mid scale the runs go to ``runs/`` beside ``OUT`` instead, where fig-trust-region and the
closer-look targets keep theirs: its PPO, PPO-M and TRPO are the closer look's mid training
([`SHARED_PRESETS`][pgdiag.studies.presets.SHARED_PRESETS]), trained once for all of them.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from pgdiag.config import ALGORITHM_PRESETS, CPU_SCALE, ConfigError, study_preset
from pgdiag.experiments import diagnostic_targets, dry_run, figures, study_dir
from pgdiag.studies.presets import evidence as ev
from pgdiag.experiments.figures import COLORS, LABELS
from pgdiag.experiments.scales import MID_TRAINING, Scale, pick
from pgdiag.experiments.target_types import Target
from pgdiag.studies.presets.tables import (REPORTING, REPORTING_NOTES, REPORTING_RULE, STATISTIC, agent_scores,
                                           check_rules, summarize, table)
from pgdiag.experiments.training import train_study
from pgdiag.stats import t_coverage_on_skewed, t_interval


SCALES = {
    # Gym-v2's MuJoCo models, as the papers trained on: with 16 agents per algorithm on Hopper, Gym's model put
    # every algorithm's interval over its published one and ACLI above AAI as IM reports; Brax's put TRPO+
    # below its published interval and AAI above ACLI (docs/benchmarks.md, "Table 2 under both MuJoCo models")
    "paper": Scale(tasks=("hopper", "walker2d", "humanoid"), seeds=80, overrides={"model": "gym"},
                   description="Hopper, Walker2d, Humanoid on Gym-v2's MuJoCo models with the papers' presets (2048 × "
                               "488 steps per agent); 80 agents per algorithm and task (IM Tables 2–3: at least 80)."),
    "replication": Scale(tasks=("hopper", "walker2d", "humanoid"), seeds=80, overrides={"model": "gym"},
                         description="IM Tables 2, 3 and CL Fig 10 as the papers ran them: Gym's Hopper, Walker2d "
                                     "and Humanoid, the papers' presets (488 iterations of 2,048 steps), 80 agents "
                                     "per algorithm and task (a 16-core GPU host)."),
    "smoke": Scale(tasks=("hopper",), seeds=8, overrides={**CPU_SCALE, "num_iterations": 30},
                   description="Hopper (native MuJoCo on a CPU), the papers' presets at CPU scale: 30 iterations of "
                               "4 × 256 steps, 8 agents per algorithm."),
    # the closer look's mid training (MID_TRAINING: its tasks, seeds and settings) for all five presets, so that
    # PPO, PPO-M and TRPO are the very runs fig-trust-region, fig-value and the diagnostics train (SHARED_PRESETS)
    # and every IM claim on the tables gets the mid scale's agents per algorithm
    "mid": Scale(tasks=MID_TRAINING["tasks"], seeds=MID_TRAINING["seeds"], overrides=MID_TRAINING["overrides"],
                 description=f"Hopper at the papers' shape (1 × 2,048 steps, reset every iteration), the papers' "
                             f"presets, {MID_TRAINING['seeds']} agents each, 100 iterations: PPO, PPO-M and TRPO are "
                             f"the mid scale's shared runs (those of fig-trust-region and the closer-look targets), "
                             f"TRPO+ and PPO-NoClip train beside them."),
}

#: scale -> the presets it trains as the runs other targets train too: in the sweeps those targets train them (PPO
#: with PPO-M, TRPO alone), not with the study's other presets (PPO-NoClip would join PPO's sweep as a third grid
#: point, another configuration), into ``runs/`` beside the study's directory where the others keep theirs
#: ([`pgdiag.experiments.diagnostic_targets.train_runs`][pgdiag.experiments.diagnostic_targets.train_runs]):
#: trained once between them. The study's other presets train in sweeps of their own beside them.
SHARED_PRESETS = {"mid": tuple(MID_TRAINING["presets"])}


def training_groups(scale: str, presets) -> tuple:
    """The presets a study trains at ``scale``, grouped as they train: one
    [`train_study`][pgdiag.experiments.training.train_study] (its sweeps grouped by static configuration) per group
    — the shared presets ([`SHARED_PRESETS`][pgdiag.studies.presets.SHARED_PRESETS]), then the rest —
    or every preset in one group where the scale shares none."""
    shared = SHARED_PRESETS.get(scale, ())
    if not shared or not set(shared) <= set(presets):
        return (tuple(presets),)
    return tuple(g for g in (shared, tuple(a for a in presets if a not in shared)) if g)


# --- the figure -----------------------------------------------------------------------

def plot_rewards(metrics, path: str, title: str = "", algorithms=ALGORITHM_PRESETS) -> str:
    """Mean episodic reward over training per algorithm (of ``algorithms``), with a 95% Student-t band over
    agents."""

    tasks = list(dict.fromkeys(metrics.task))
    fig, axes = figures.panels(1, len(tasks), 5.5, 4)
    for ax, task in zip(axes[0], tasks):
        m = metrics[metrics.task == task]
        for algo in algorithms:
            a = m[m.algorithm == algo]
            if a.empty:
                continue
            curves = a.pivot(index="agent", columns="iteration", values="mean_return")
            steps = a.groupby("iteration").env_steps.first().reindex(curves.columns).to_numpy()
            # the band: Student-t over agents (the units), not a bootstrap of a handful of them
            stats = np.array([t_interval(curves[c].to_numpy())[:3] for c in curves.columns])
            ax.plot(steps, stats[:, 0], color=COLORS[algo], label=f"{LABELS[algo]} (n={len(curves)})")
            ax.fill_between(steps, stats[:, 1], stats[:, 2], color=COLORS[algo], alpha=0.2, linewidth=0)
        ax.set_title(task)
        ax.set_xlabel("environment steps per agent")
        ax.set_ylabel("mean episodic reward")
    return figures.save(fig, path, title, dpi=110, legend=True)


# --- entry points: train and save, then draw from disk -----------------------------------

STUDY = "algorithms"
#: the presets each table compares
TABLE_2_PRESETS = ("ppo", "ppo-m", "trpo", "trpo+")
TABLE_3_PRESETS = ("ppo", "ppo-noclip")


def _study(target, scale: str, out: str, tasks, seeds, progress, overrides) -> None:
    """Train every preset on every task (reusing matching runs on disk) and record the study: into ``OUT/runs/``, or
    at a scale whose runs other targets share
    ([`SHARED_PRESETS`][pgdiag.studies.presets.SHARED_PRESETS]) into ``runs/`` beside ``OUT``, group by
    group ([`training_groups`][pgdiag.studies.presets.training_groups])."""
    sc = pick(target.scales, scale)
    tasks = tuple(tasks or sc.tasks_of())
    over = {**sc.overrides, **overrides}
    for task in tasks:  # validate every configuration before training anything
        for algo in target.presets:
            study_preset(algo, task, **over)
    if scale in SHARED_PRESETS:
        entries = [diagnostic_targets.train_runs(out, sc, tasks, group, seeds or sc.seeds, progress, overrides)
                   for group in training_groups(scale, target.presets)]
        entry = {"runs": {t: [d for e in entries for d in e["runs"][t]] for t in tasks},
                 "run_seeds": {d: s for e in entries for d, s in e["run_seeds"].items()}}
    else:
        entry = study_dir.runs_entry({t: train_study(t, seeds or sc.seeds, os.path.join(out, "runs"),
                                                     target.presets, progress, **over)[1] for t in tasks})
    study_dir.write(out, STUDY, scale, tasks, algorithms=list(target.presets), **entry)


def plan(target, scale: str = "smoke", tasks=None, seeds=None, memory: int | None = 1 << 62, **overrides) -> list:
    """The sweeps [`run`][pgdiag.studies.presets.targets.run] starts: per task, one per group of
    presets ([`training_groups`][pgdiag.studies.presets.training_groups]) and static configuration; at
    the mid scale the shared ones are the programs fig-trust-region plans (the same
    [`Program`][pgdiag.experiments.dry_run.Program], which a plan of several targets costs once)."""
    sc = pick(target.scales, scale)
    over = {**sc.overrides, **overrides}
    return [p for t in tuple(tasks or sc.tasks_of()) for group in training_groups(scale, target.presets)
            for p in dry_run.preset_training(t, group, seeds or sc.seeds, over, memory)]


def run(target, scale="smoke", out="results/algorithms", tasks=None, seeds=None, progress=None, **overrides):
    """fig-rewards, table-2 or table-3: train the study (or reuse it), then draw the target from it; the
    tables' ``statistic`` and ``reporting`` rules are checked before training."""
    rules = {k: overrides.pop(k) for k in ("statistic", "reporting") if k in overrides}
    if rules:
        check_rules(rules.get("statistic", STATISTIC.default), rules.get("reporting", REPORTING_RULE.default))
    _study(target, scale, out, tasks, seeds, progress, overrides)
    return target.redraw(out, **rules)


def draw_rewards(target, from_dir: str, out: str | None = None, tasks=None) -> dict:
    """fig-rewards from the study saved in ``from_dir`` (written to ``out``, default ``from_dir``)."""
    record, metrics = study_dir.load_runs(from_dir, STUDY, target.name, tasks)
    path = plot_rewards(metrics, os.path.join(out or from_dir, f"{target.name}.png"),
                        title=f"Mean episodic reward over training ({record['scale']} scale)")
    return {"figure": path, "metrics": metrics}


AAI_CI_NOTE = ("; AAI and ACLI each the larger |difference| of two means, its interval from their Welch intervals "
               "simultaneous by Bonferroni, coverage ≥ 95%")


def _coverage_note(summary) -> str:
    """What the tables' Student-t intervals cover when agents' scores are skewed: simulated at the fewest agents of
    a cell (lognormal σ = 1; [`pgdiag.stats.t_coverage_on_skewed`][pgdiag.stats.t_coverage_on_skewed]). The claims
    compare median agents instead ([`pgdiag.experiments.claims`][pgdiag.experiments.claims])."""
    n = int(summary.agents.min()) if len(summary) else 0
    if n < 2:
        return ""
    return (f" On skewed (lognormal) agents a 95% Student-t interval over {n} agents covers "
            f"{t_coverage_on_skewed(n):.2f} (simulated); the claims report compares median agents, whose intervals "
            f"hold on any population.")


def draw_table(target, from_dir: str, out: str | None = None, tasks=None, statistic: str = STATISTIC.default,
               reporting: str = REPORTING_RULE.default, *, compared: tuple, title: str, with_aai: bool) -> dict:
    """A table of the ``compared`` presets (Table 2 with AAI and ACLI, Table 3) from the study saved in
    ``from_dir`` (written to ``out``, default ``from_dir``)."""
    check_rules(statistic, reporting)
    record, metrics = study_dir.load_runs(from_dir, STUDY, target.name, tasks)
    metrics = metrics[metrics.algorithm.isin(compared)]
    scores = agent_scores(metrics, statistic, reporting)
    summary = summarize(scores)
    df = table(summary, compared, with_aai=with_aai, scores=scores)
    note = (f"Mean agent reward ({'mean of the last 5 iterations' if statistic == 'final' else 'max over training'}"
            f" of the per-iteration mean episodic reward) with a 95% Student-t interval over agents (the paper's "
            f"are percentile-bootstrap intervals{AAI_CI_NOTE if with_aai else ''}); {record['scale']} scale. "
            f"Episodic reward reported "
            f"under {REPORTING_NOTES[reporting]}. Published values: Engstrom et al. (ref §5).")
    note += _coverage_note(summary)
    out_agents = scores[~np.isfinite(scores.score)]
    if len(out_agents):   # a diverged agent's returns are NaN from its divergence on: named, not averaged
        note += (" Left out, with no finite score (the agent diverged, or no episode ended in the iterations "
                 "scored): " + ", ".join(f"{r.algorithm} agent {r.agent} on {r.task}"
                                         for r in out_agents.itertuples()) + ".")
    md, csv = figures.write_table(df, os.path.join(out or from_dir, target.name), title, note)
    return {"markdown": md, "csv": csv, "table": df, "summary": summary,
            "aggregates": _aggregates(scores, compared, os.path.join(out or from_dir, f"{target.name}-aggregates"),
                                      f"{title}: aggregates over tasks × agents", statistic)}


def _aggregates(scores, compared, path_stem: str, title: str, statistic: str) -> dict:
    """rliable's aggregates of the compared presets over tasks × agents, P(X > Y) for each pair
    ([`pgdiag.experiments.aggregate_tables`][pgdiag.experiments.aggregate_tables]); where the agents per task
    differ, the reason instead."""
    from itertools import combinations

    from pgdiag.experiments.aggregate_tables import summarize, write_aggregates

    what = f"an agent's {'final' if statistic == 'final' else 'max'} mean episodic reward"
    labelled = scores.assign(label=scores.algorithm.map(LABELS))
    present = [LABELS[a] for a in compared if a in set(scores.algorithm)]
    try:
        return write_aggregates(summarize(labelled, what, pairs=list(combinations(present, 2))), path_stem, title)
    except ConfigError as err:
        return {"skipped": str(err)}


def evidence(target, from_dir: str, notes: list) -> list:
    """Every agent's score (IM's claims on Tables 2 and 3 read them)."""
    return ev.score_evidence(agent_scores(study_dir.load_runs(from_dir, STUDY, target.name)[1]))


_COMMON = dict(study=STUDY, kind="training", scales=SCALES, run=run, plan=plan,
               presets=ALGORITHM_PRESETS, notebook="implementation-matters")

REWARDS_TARGET = Target("fig-rewards", paper="CL Fig 10", help="CL Fig 10: reward curves of all five algorithms",
                        draw=draw_rewards, papers=("im",), **_COMMON)
TABLE_2_TARGET = Target("table-2", paper="IM Table 2",
           help="IM Table 2: PPO, PPO-M, TRPO, TRPO+ with 95% intervals, AAI, ACLI",
    draw=functools.partial(draw_table, compared=TABLE_2_PRESETS, with_aai=True,
                           title="IM Table 2: step choice × code-level optimizations"),
    evidence=evidence, papers=("im",), provides=("im_score",), options=("statistic", "reporting"), **_COMMON)
TABLE_3_TARGET = Target("table-3", paper="IM Table 3", help="IM Table 3: PPO vs PPO-NoClip with 95% intervals",
                        draw=functools.partial(draw_table, compared=TABLE_3_PRESETS, with_aai=False,
                                               title="IM Table 3: PPO vs PPO-NoClip"),
                        papers=("im",), options=("statistic", "reporting"), **_COMMON)
TARGETS = (REWARDS_TARGET, TABLE_2_TARGET, TABLE_3_TARGET)

__all__ = ["REPORTING", "REWARDS_TARGET", "SCALES", "SHARED_PRESETS", "STUDY", "TABLE_2_PRESETS", "TABLE_2_TARGET",
           "TABLE_3_PRESETS", "TABLE_3_TARGET", "TARGETS", "agent_scores", "draw_rewards", "draw_table", "plan",
           "plot_rewards", "summarize", "table", "training_groups"]
