"""Tasks: `make(name, physics, threads)` returns an `Env` (pure reset/step); `register_task` adds one to the
registry (`pgdiag.envs.registry`; the built-in tasks register here, a user's own `Env` the same way).

MuJoCo tasks run on one of three physics backends: ``mjx`` (pure JAX; the backend for GPUs and TPUs), ``warp``
(MuJoCo Warp through MJX's Warp implementation, with the ``warp-lang`` package; for NVIDIA GPUs, runs slowly on
CPUs) or ``native`` (MuJoCo's C library, multithreaded, called from the compiled program through an XLA FFI handler
on a CPU, a host callback elsewhere: [`native_ffi`][pgdiag.envs.native_ffi]; the fast backend on CPUs). ``auto``
picks native MuJoCo when JAX's default backend is the CPU and MJX otherwise; given the batch a program steps
([`choose_physics`][pgdiag.envs.choose_physics], what sweeps use), it picks the backend measured faster for that
batch on this host ([`pgdiag.envs.crossover`][pgdiag.envs.crossover]). Pure-JAX tasks have no physics backend.

The MuJoCo tasks come on two models (``MODELS``): ``brax`` (Brax's MJCF, the
default) and ``gym`` (Gym-v2's MJCF as the papers trained on, read from the
installed Gymnasium package; [`pgdiag.envs.gym_tasks`][pgdiag.envs.gym_tasks]). Gym's Humanoid
runs on native MuJoCo only (MJX has no PGS solver), and ``auto`` picks native
for it rather than swapping the model.
"""

from __future__ import annotations

import os

from pgdiag.envs import classic, lqr
from pgdiag.envs.base import Env, EnvState, ExactAnswers, time_limit
from pgdiag.envs.registry import (EPISODE_LIMITS, EXACT, MODELS, REGISTRY, TASK_MODELS, TASK_SIZES, TASKS, TaskEntry,
                                  build, check_model, episode_limit, exact_answers, register_entry, register_task,
                                  sizes, task_entry, unregister_task)


def _pure(factory):
    """The maker of a pure-JAX task built by `factory()` (it has no physics backend, threads or solver)."""
    def make_env(physics, threads, solver):
        return factory()
    return make_env


def _mujoco(name: str):
    def make_env(physics, threads, solver, model="brax"):  # MuJoCo is imported only when a task is built
        from pgdiag.envs.mujoco_models import mujoco_task
        from pgdiag.envs.mujoco_tasks import make_mujoco_env
        return make_mujoco_env(mujoco_task(name, model), physics, threads, solver=solver)
    return make_env


# the built-in tasks, in the order `pgdiag tasks` lists them
for _name, _sizes, _gym_obs, _desc in (
        ("hopper", (11, 3), 11, "Hopper, 11-d obs, 3-d action, 1000-step episodes."),
        ("walker2d", (17, 6), 17, "Walker2d, 17-d obs, 6-d action, 1000-step episodes."),
        ("humanoid", (276, 17), 376, "Humanoid, 17-d action, 1000-step episodes; 276-d obs on Brax's model (its "
                                     "solver settings), Gym-v2's 376-d on Gym's (native MuJoCo only).")):
    register_entry(TaskEntry(_name, _mujoco(_name), *_sizes, episode_limit=1000, kind="mujoco", description=_desc,
                             models=MODELS, model_sizes=(("gym", (_gym_obs, _sizes[1])),)))
register_task("pendulum", _pure(classic.make_pendulum), obs_size=3, action_size=1, episode_limit=200,
              description="Pendulum swing-up in pure JAX, 3-d obs, 1-d action, 200-step episodes.")
register_task("point_mass", _pure(classic.make_point_mass), obs_size=4, action_size=2, episode_limit=200,
              description="2-D point mass in pure JAX with termination, 4-d obs, 2-d action, 200-step episodes.")
# the LQR task's limit is a cap its geometric episodes practically never reach; its closed forms come with it
register_task("lqr", _pure(lqr.make_lqr), obs_size=2, action_size=1, episode_limit=10_000, exact=lqr.exact_answers(),
              description="Linear-quadratic double integrator in pure JAX, 2-d obs, 1-d action, geometric episodes "
                          "(mean 50 steps); J, ∇J and V^π in closed form.")
PHYSICS = ("auto", "mjx", "native", "warp")
#: MuJoCo solver settings ([`pgdiag.envs.mujoco_tasks.SOLVERS`][pgdiag.envs.mujoco_tasks.SOLVERS]): the task's
#: converged ones, or Brax's fast ones.
SOLVERS = ("converged", "fast")


def mjx_missing(task: str, model: str = "brax") -> str:
    """What MJX lacks to run the task on this model ("" when it runs it)."""
    entry = REGISTRY.get(task)
    if model == MODELS[0] or entry is None or entry.kind != "mujoco" or not entry.models:
        return ""
    from pgdiag.envs.mujoco_models import mujoco_task
    return mujoco_task(task, model).mjx_missing


def default_threads() -> int:
    """The native backend's threads where none are asked for: the host's cores, shared among the CPU devices a
    program runs on. Each device steps its block of agents at the same time as the others
    ([`pgdiag.run.host_devices`][pgdiag.run.host_devices]), so one thread each keeps the cores busy without a pool
    per call contending for them (64 Walker2d agents on 2 cores and 2 devices: 4.3 s against 5.9 s with two threads
    each and 7.7 s on one device). The thread count never changes results."""
    from pgdiag.envs import hosts

    devices = hosts.cpu_device_count() if hosts.backend() == "cpu" else 1
    return max(1, hosts.cores() // devices)


def resolve_physics(task: str, physics: str = "auto", threads: int = 0, model: str = "brax") -> tuple[str, int]:
    """The backend and thread count a task actually runs with: ("jax", 0) for
    pure-JAX tasks; for MuJoCo tasks ``auto`` means native MuJoCo on a CPU and
    MJX on an accelerator (native where MJX cannot run the model), and 0 threads
    means every core ([`default_threads`][pgdiag.envs.default_threads])."""
    check_model(task, model)
    if physics not in PHYSICS:
        raise ValueError(f"unknown physics backend {physics!r}; choose one of: {', '.join(PHYSICS)}")
    if REGISTRY[task].kind == "jax":
        if physics != "auto":
            raise ValueError(f"task {task!r} is written in pure JAX and has no physics backend; physics must be "
                             f"'auto', got {physics!r} (the physics backends run the MuJoCo tasks: "
                             f"{', '.join(t for t, e in REGISTRY.items() if e.kind == 'mujoco')})")
        return "jax", 0
    missing = mjx_missing(task, model)
    from pgdiag.envs.mujoco_physics import refuse_backend
    refuse_backend(physics, task, model, missing)
    if physics == "warp":
        return "warp", 0
    if physics == "auto":
        from pgdiag.envs import hosts
        physics = "native" if hosts.backend() == "cpu" or missing else "mjx"
    if physics == "native":
        return "native", threads or default_threads()
    return "mjx", 0


def choose_physics(task: str, physics: str, threads: int, solver: str, batch: int,
                   model: str = "brax") -> tuple[str, int, str]:
    """[`resolve_physics`][pgdiag.envs.resolve_physics] for a program that steps ``batch`` environments per batched
    step on each device: ``auto`` takes the backend measured faster at that batch on this host
    ([`pgdiag.envs.crossover.choose`][pgdiag.envs.crossover.choose]). Returns the backend, its thread count and
    why."""
    backend, resolved = resolve_physics(task, physics, threads, model)
    if backend == "jax" or physics != "auto":
        return backend, resolved, "pure-JAX task" if backend == "jax" else "asked for"
    missing = mjx_missing(task, model)
    if missing:
        return backend, resolved, f"MJX lacks {missing}: native MuJoCo"
    from pgdiag.envs import crossover

    native_threads = threads or default_threads()
    backend, why = crossover.choose(task, solver, batch, native_threads, model)
    return backend, (native_threads if backend == "native" else 0), why


def recorded_physics(task: str, physics: str, threads: int, solver: str, batch: int, model: str = "brax") -> str:
    """The backend [`choose_physics`][pgdiag.envs.choose_physics] would take, from this host's recorded
    measurements alone (nothing timed, nothing written): ``auto`` where they do not decide is native MuJoCo, as on a
    CPU. For plans."""
    backend, _ = resolve_physics(task, physics, threads, model)
    if backend == "jax" or physics != "auto" or mjx_missing(task, model):
        return backend
    from pgdiag.envs import crossover

    decided = crossover.recorded_choice(task, solver, batch, threads or default_threads(), model)
    return decided[0] if decided else "native"


def make(name: str, physics: str = "auto", threads: int = 0, solver: str = "converged",
         model: str = "brax") -> Env:
    """Build the named task on a physics backend with a solver setting (``SOLVERS``) and a model
    (``MODELS``; both MuJoCo tasks only), cached per resolved backend."""
    backend, threads = resolve_physics(name, physics, threads, model)
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver setting {solver!r}; choose one of: {', '.join(SOLVERS)}")
    if backend == "jax" and solver != "converged":
        raise ValueError(f"task {name!r} is written in pure JAX and has no solver; solver must be 'converged', "
                         f"got {solver!r}")
    return build(name, backend, threads, solver, model)


__all__ = ["Env", "EnvState", "EXACT", "ExactAnswers", "exact_answers", "MODELS", "PHYSICS", "REGISTRY", "SOLVERS",
           "TASKS", "TASK_MODELS", "TASK_SIZES", "EPISODE_LIMITS", "TaskEntry", "check_model", "choose_physics",
           "episode_limit", "make", "mjx_missing", "recorded_physics", "register_task", "resolve_physics", "sizes",
           "task_entry", "time_limit", "unregister_task"]
