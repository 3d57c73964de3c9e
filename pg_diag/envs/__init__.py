"""Task registry: ``make(name, physics, threads)`` returns an :class:`Env` (pure reset/step).

MuJoCo tasks run on one of two physics backends: ``mjx`` (pure JAX; the
backend for GPUs and TPUs) or ``native`` (MuJoCo's C library, multithreaded,
called from the compiled program through a host callback; the fast backend
on CPUs). ``auto`` picks native MuJoCo when JAX's default backend is the CPU
and MJX otherwise; given the batch a program steps (:func:`choose_physics`,
what sweeps use), it picks the backend measured faster for that batch on this
host (:mod:`pg_diag.envs.crossover`). Pure-JAX tasks have no physics backend.
"""

from __future__ import annotations

import functools
import os

from pg_diag.envs.base import Env, EnvState, time_limit

#: name -> (kind, one-line description). MuJoCo tasks import MuJoCo lazily.
TASKS = {
    "hopper": ("mujoco", "Hopper (Brax MJCF), 11-d obs, 3-d action, 1000-step episodes."),
    "walker2d": ("mujoco", "Walker2d (Brax MJCF), 17-d obs, 6-d action, 1000-step episodes."),
    "humanoid": ("mujoco", "Humanoid (Brax MJCF and solver settings), 276-d obs, 17-d action, 1000-step episodes."),
    "pendulum": ("jax", "Pendulum swing-up in pure JAX, 3-d obs, 1-d action, 200-step episodes."),
    "point_mass": ("jax", "2-D point mass in pure JAX with termination, 4-d obs, 2-d action, 200-step episodes."),
    "lqr": ("jax", "Linear-quadratic double integrator in pure JAX, 2-d obs, 1-d action, geometric episodes "
                   "(mean 50 steps); J, ∇J and V^π in closed form."),
}
#: name -> (observation size, action size), known without building the task (plans, memory estimates); a test
#: checks it against every task built
TASK_SIZES = {"hopper": (11, 3), "walker2d": (17, 6), "humanoid": (276, 17), "pendulum": (3, 1), "point_mass": (4, 2),
              "lqr": (2, 1)}
#: name -> time limit in steps (the LQR task's is a cap its geometric episodes practically never reach)
EPISODE_LIMITS = {"hopper": 1000, "walker2d": 1000, "humanoid": 1000, "pendulum": 200, "point_mass": 200,
                  "lqr": 10_000}
PHYSICS = ("auto", "mjx", "native")
#: MuJoCo solver settings (:data:`pg_diag.envs.mujoco_tasks.SOLVERS`): the task's converged ones, or Brax's fast ones.
SOLVERS = ("converged", "fast")


def resolve_physics(task: str, physics: str = "auto", threads: int = 0) -> tuple[str, int]:
    """The backend and thread count a task actually runs with: ("jax", 0) for
    pure-JAX tasks; for MuJoCo tasks ``auto`` means native MuJoCo on a CPU and
    MJX on an accelerator, and 0 threads means every core."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; tasks are: {', '.join(sorted(TASKS))}")
    if physics not in PHYSICS:
        raise ValueError(f"unknown physics backend {physics!r}; choose one of: {', '.join(PHYSICS)}")
    if TASKS[task][0] == "jax":
        if physics != "auto":
            raise ValueError(f"task {task!r} is written in pure JAX and has no physics backend; physics must be "
                             f"'auto', got {physics!r} (the mjx and native backends run the MuJoCo tasks: "
                             f"{', '.join(t for t, (k, _) in TASKS.items() if k == 'mujoco')})")
        return "jax", 0
    if physics == "auto":
        import jax
        physics = "native" if jax.default_backend() == "cpu" else "mjx"
    if physics == "native":
        return "native", threads or (os.cpu_count() or 1)
    return "mjx", 0


def choose_physics(task: str, physics: str, threads: int, solver: str, batch: int) -> tuple[str, int, str]:
    """:func:`resolve_physics` for a program that steps ``batch`` environments per batched step on each
    device: ``auto`` takes the backend measured faster at that batch on this host
    (:func:`pg_diag.envs.crossover.choose`). Returns the backend, its thread count and why."""
    backend, resolved = resolve_physics(task, physics, threads)
    if backend == "jax" or physics != "auto":
        return backend, resolved, "pure-JAX task" if backend == "jax" else "asked for"
    from pg_diag.envs import crossover

    native_threads = threads or (os.cpu_count() or 1)
    backend, why = crossover.choose(task, solver, batch, native_threads)
    return backend, (native_threads if backend == "native" else 0), why


@functools.lru_cache(maxsize=None)
def _make(name: str, physics: str, threads: int, solver: str) -> Env:
    if name == "pendulum":
        from pg_diag.envs.classic import make_pendulum
        return make_pendulum()
    if name == "point_mass":
        from pg_diag.envs.classic import make_point_mass
        return make_point_mass()
    if name == "lqr":
        from pg_diag.envs.lqr import make_lqr
        return make_lqr()
    from pg_diag.envs.mujoco_tasks import MUJOCO_TASKS, make_mujoco_env
    return make_mujoco_env(MUJOCO_TASKS[name], physics, threads, solver=solver)


def episode_limit(task: str) -> int:
    """The task's time limit in steps, without building it."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; tasks are: {', '.join(sorted(TASKS))}")
    return EPISODE_LIMITS[task]


def make(name: str, physics: str = "auto", threads: int = 0, solver: str = "converged") -> Env:
    """Build the named task on a physics backend with a solver setting (``SOLVERS``; MuJoCo tasks only),
    cached per resolved backend."""
    backend, threads = resolve_physics(name, physics, threads)
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver setting {solver!r}; choose one of: {', '.join(SOLVERS)}")
    if backend == "jax" and solver != "converged":
        raise ValueError(f"task {name!r} is written in pure JAX and has no solver; solver must be 'converged', "
                         f"got {solver!r}")
    return _make(name, backend, threads, solver)


__all__ = ["Env", "EnvState", "PHYSICS", "SOLVERS", "TASKS", "TASK_SIZES", "EPISODE_LIMITS", "choose_physics", "episode_limit", "make", "resolve_physics", "time_limit"]
