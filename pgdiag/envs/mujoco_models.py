"""The MuJoCo tasks by model: Brax's MJCF ([`mujoco_tasks`][pgdiag.envs.mujoco_tasks]) or Gym-v2's
([`gym_tasks`][pgdiag.envs.gym_tasks])."""

from __future__ import annotations

from pgdiag.envs.gym_tasks import GYM_TASKS
from pgdiag.envs.mujoco_tasks import MUJOCO_TASKS, MujocoTask

#: model -> {task name: its definition on that model}
BY_MODEL = {"brax": MUJOCO_TASKS, "gym": GYM_TASKS}


def mujoco_task(name: str, model: str = "brax") -> MujocoTask:
    """The task's definition on one of its models ([`pgdiag.envs.MODELS`][pgdiag.envs.MODELS])."""
    if model not in BY_MODEL:
        raise ValueError(f"unknown MuJoCo model {model!r}; choose one of: {', '.join(BY_MODEL)}")
    return BY_MODEL[model][name]


__all__ = ["BY_MODEL", "mujoco_task"]
