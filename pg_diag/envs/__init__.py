"""Task registry: ``make(name)`` returns an :class:`Env` (pure reset/step)."""

from __future__ import annotations

import functools

from pg_diag.envs.base import Env, EnvState, time_limit

#: name -> (kind, one-line description). MuJoCo tasks import MJX lazily.
TASKS = {
    "hopper": ("mujoco", "Hopper (MJX physics, Brax MJCF), 11-d obs, 3-d action, 1000-step episodes."),
    "walker2d": ("mujoco", "Walker2d (MJX physics, Brax MJCF), 17-d obs, 6-d action, 1000-step episodes."),
    "humanoid": ("mujoco", "Humanoid (MJX physics, Brax MJCF), 276-d obs, 17-d action, 1000-step episodes."),
    "pendulum": ("jax", "Pendulum swing-up in pure JAX, 3-d obs, 1-d action, 200-step episodes."),
    "point_mass": ("jax", "2-D point mass in pure JAX with termination, 4-d obs, 2-d action, 200-step episodes."),
}


@functools.lru_cache(maxsize=None)
def make(name: str) -> Env:
    """Build the named task (cached: one Env object per name)."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; tasks are: {', '.join(sorted(TASKS))}")
    if name == "pendulum":
        from pg_diag.envs.classic import make_pendulum
        return make_pendulum()
    if name == "point_mass":
        from pg_diag.envs.classic import make_point_mass
        return make_point_mass()
    from pg_diag.envs.mujoco_tasks import MUJOCO_TASKS, make_mjx_env
    return make_mjx_env(MUJOCO_TASKS[name])


__all__ = ["Env", "EnvState", "TASKS", "make", "time_limit"]
