"""What a study target trains and measures at each scale (smoke, mid, paper): one record for every target.

A target's module holds its ``SCALES`` (scale name -> [`Scale`][pgdiag.experiments.scales.Scale]);
[`pick`][pgdiag.experiments.scales.pick] looks one up with a clear error. Training settings come in two layers
(every task, then per task) and so do measurement settings, so that the paper's exceptions (the LQR task's shorter
run and smaller random direction) are one entry each.

Targets whose scales train the same configuration (tasks, seeds, presets, settings) share one set of runs
([`pgdiag.experiments.diagnostic_targets`][pgdiag.experiments.diagnostic_targets]): the mid scale of the
closer-look targets is one such configuration, [`MID_TRAINING`][pgdiag.experiments.scales.MID_TRAINING], each
target measuring the presets and checkpoints it needs (``measured_at``) of it.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

from pgdiag.config import ConfigError


@dataclasses.dataclass(frozen=True)
class Scale:
    tasks: tuple | Mapping           # the tasks trained; {target: tasks} where the study's targets differ
    seeds: int                       # agents per preset (per grid point for fig-ablation)
    description: str
    overrides: Mapping = dataclasses.field(default_factory=dict)        # training, every task
    task_overrides: Mapping = dataclasses.field(default_factory=dict)   # training, per task
    settings: Mapping = dataclasses.field(default_factory=dict)         # measurement name -> its settings
    task_settings: Mapping = dataclasses.field(default_factory=dict)    # task -> measurement settings (all)
    # the presets trained, where more than the target's own (so that targets measuring different presets share
    # one training); () = the target's own
    presets: tuple = ()
    # measurement name -> the checkpoints it measures, where fewer than the runs keep; absent = every one
    measured_at: Mapping = dataclasses.field(default_factory=dict)

    def tasks_of(self, target: str | None = None) -> tuple:
        """The tasks ``target`` runs at this scale."""
        return tuple(self.tasks[target] if isinstance(self.tasks, Mapping) else self.tasks)

    def training(self, task: str, user: Mapping | None = None) -> dict:
        """The settings ``task`` trains with: the scale's, the task's, then the ``user``'s."""
        return {**self.overrides, **self.task_overrides.get(task, {}), **(user or {})}

    def measuring(self, name: str, task: str | None = None, user: Mapping | None = None) -> dict:
        """The settings of measurement ``name`` on ``task``: the scale's, the task's, then the ``user``'s. A true
        gradient the scale sizes follows sizes the user gives (TRUE_RATIO × their largest N, CL Fig 3) unless the
        user sizes it too."""
        from pgdiag.diagnostics.sizes import MAX_PAIRS, TRUE_RATIO

        merged = {**self.settings.get(name, {}), **(self.task_settings.get(task, {}) if task else {}), **(user or {})}
        user = user or {}
        if "sizes" in user and "true_pairs" not in user and merged.get("true_pairs"):
            merged["true_pairs"] = int(min(TRUE_RATIO * max(user["sizes"]), 16 * MAX_PAIRS))
        return merged

    def checkpoints(self, name: str) -> tuple | None:
        """The checkpoints measurement ``name`` measures (None: every one the runs keep)."""
        return tuple(self.measured_at[name]) if name in self.measured_at else None


#: CL measured at iterations 0/150/300/450 of ~488 (1M steps of 2,048): "later in training" is iteration 300,
#: where PPO's annealed learning rate is still 1 − 300/488 ≈ 0.39 of its start. The mid scale's 100 iterations
#: put those points at 0/31/61/92 (learning-rate shares 1, 0.69, 0.39, 0.08); its late step is read at 61, not at
#: the last iteration, where the annealed step is 1% of its start.
MID_CHECKPOINTS = (0, 31, 61, 92)

#: The mid scale's training, one configuration for every closer-look target (fig-value, fig-trust-region and the
#: diagnostic studies), so that each (preset, seed) trains once and every target reads the same runs: Hopper at the
#: papers' shape (1 environment × 2,048 steps, reset every iteration), 100 iterations; PPO, PPO-M and TRPO with 7
#: agents each — the fewest whose sign test can pass Holm's first step in a section of up to 6 findings (2^−7 ≤
#: 0.05/6; [`pgdiag.experiments.findings.agents_for`][pgdiag.experiments.findings.agents_for]); the union of what
#: the targets read — checkpoints after 0/31/61/92, CL's 0/150/300/450 of a 488-iteration run scaled to 100
#: ([`MID_CHECKPOINTS`][pgdiag.experiments.scales.MID_CHECKPOINTS]), and a held-out batch every 10 iterations
#: (fig-value, fig-trust-region, as the original's log_every; collected with the pre-update policy, never trained
#: on).
MID_TRAINING = dict(tasks=("hopper",), seeds=7, presets=("ppo", "ppo-m", "trpo"),
                    overrides={"num_iterations": 100, "checkpoint_at": MID_CHECKPOINTS, "heldout_every": 10})


#: The papers' own tasks for the claims Hopper cannot carry, at the mid scale's shape (``SCALE=tasks``): CL Fig 4
#: (the value network) on Walker2d; Figs 6, 26, 27 (landscape concentration at iteration 300) and Figs 9, 29 (trust
#: regions) on Humanoid. Its targets' Humanoid runs are one training, as the mid scale's.
def tasks_training(tasks: tuple) -> dict:
    """The mid scale's training on ``tasks``."""
    return {**MID_TRAINING, "tasks": tuple(tasks)}


#: CL's own run (ref §2): 488 iterations of 1 × 2,048 steps (1M steps), checkpoints after iterations 0/150/300/450.
PAPER_ITERATIONS = 488
PAPER_CHECKPOINTS = (0, 150, 300, 450)


#: The replication's training (``SCALE=replication``): the papers' experiment as they ran it, on a CPU where it
#: fits — Gym's MuJoCo models (``model='gym'``, as the papers had them), CL's run length and checkpoints, a held-out
#: batch every 10 iterations (the original's log_every), 8 agents per preset (the fewest whose sign tests can pass
#: Holm's first step over the largest section, CL §5.2's 8 findings, 2^−8 ≤ 0.05/8:
#: [`agents_for`][pgdiag.experiments.findings.agents_for]).
#: The model is set per task (pure-JAX tasks have none), so a target's LQR runs stay on the default.
def replication_training(tasks: tuple, presets: tuple = ("ppo", "ppo-m", "trpo"), seeds: int = 8) -> dict:
    """The replication scale's training on ``tasks``: Gym's models, CL's 488 iterations and checkpoints."""
    return dict(tasks=tuple(tasks), seeds=seeds, presets=tuple(presets),
                overrides={"num_iterations": PAPER_ITERATIONS, "checkpoint_at": PAPER_CHECKPOINTS,
                           "heldout_every": 10},
                task_overrides={t: {"model": "gym"} for t in tasks if t != "lqr"})


def pick(scales: Mapping, scale: str) -> Scale:
    """``scales[scale]``, or a ConfigError naming the scales there are."""
    if scale not in scales:
        raise ConfigError(f"unknown scale {scale!r}; scales are: {', '.join(scales)}")
    return scales[scale]


__all__ = ["MID_CHECKPOINTS", "MID_TRAINING", "PAPER_CHECKPOINTS", "PAPER_ITERATIONS", "Scale", "pick",
           "replication_training", "tasks_training"]
