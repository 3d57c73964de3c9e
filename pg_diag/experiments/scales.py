"""What a study target trains and measures at each scale (smoke, mid, paper): one record for every target.

A target's module holds its ``SCALES`` (scale name -> :class:`Scale`); :func:`pick` looks one up with a clear
error. Training settings come in two layers (every task, then per task) and so do measurement settings, so
that the paper's exceptions (the LQR task's shorter run and smaller random direction) are one entry each.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

from pg_diag.config import ConfigError


@dataclasses.dataclass(frozen=True)
class Scale:
    tasks: tuple | Mapping           # the tasks trained; {target: tasks} where the study's targets differ
    seeds: int                       # agents per preset (per grid point for fig-ablation)
    description: str
    overrides: Mapping = dataclasses.field(default_factory=dict)        # training, every task
    task_overrides: Mapping = dataclasses.field(default_factory=dict)   # training, per task
    settings: Mapping = dataclasses.field(default_factory=dict)         # measurement name -> its settings
    task_settings: Mapping = dataclasses.field(default_factory=dict)    # task -> measurement settings (all)

    def tasks_of(self, target: str | None = None) -> tuple:
        """The tasks ``target`` runs at this scale."""
        return tuple(self.tasks[target] if isinstance(self.tasks, Mapping) else self.tasks)

    def training(self, task: str, user: Mapping | None = None) -> dict:
        """The settings ``task`` trains with: the scale's, the task's, then the ``user``'s."""
        return {**self.overrides, **self.task_overrides.get(task, {}), **(user or {})}

    def measuring(self, name: str, task: str | None = None, user: Mapping | None = None) -> dict:
        """The settings of measurement ``name`` on ``task``: the scale's, the task's, then the ``user``'s."""
        return {**self.settings.get(name, {}), **(self.task_settings.get(task, {}) if task else {}), **(user or {})}


def pick(scales: Mapping, scale: str) -> Scale:
    """``scales[scale]``, or a ConfigError naming the scales there are."""
    if scale not in scales:
        raise ConfigError(f"unknown scale {scale!r}; scales are: {', '.join(scales)}")
    return scales[scale]


__all__ = ["Scale", "pick"]
