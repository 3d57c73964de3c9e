"""Task registry: ``make(name, physics, threads)`` returns an [`Env`][pg_diag.envs.base.Env] (pure reset/step);
[`register_task`][pg_diag.envs.register_task] adds one (the built-in tasks register here, a user's own [`Env`][pg_diag.envs.base.Env] the same way).

MuJoCo tasks run on one of three physics backends: ``mjx`` (pure JAX; the
backend for GPUs and TPUs), ``warp`` (MuJoCo Warp through MJX's Warp implementation, with the
``warp-lang`` package; for NVIDIA GPUs, runs slowly on CPUs) or ``native`` (MuJoCo's C library, multithreaded,
called from the compiled program through an XLA FFI handler on a CPU, a host
callback elsewhere: [`native_ffi`][pg_diag.envs.native_ffi]; the fast backend on CPUs). ``auto`` picks native MuJoCo when JAX's default backend is the CPU
and MJX otherwise; given the batch a program steps ([`choose_physics`][pg_diag.envs.choose_physics],
what sweeps use), it picks the backend measured faster for that batch on this
host ([`pg_diag.envs.crossover`][pg_diag.envs.crossover]). Pure-JAX tasks have no physics backend.

The MuJoCo tasks come on two models (``MODELS``): ``brax`` (Brax's MJCF, the
default) and ``gym`` (Gym-v2's MJCF as the papers trained on, read from the
installed Gymnasium package; [`pg_diag.envs.gym_tasks`][pg_diag.envs.gym_tasks]). Gym's Humanoid
runs on native MuJoCo only (MJX has no PGS solver), and ``auto`` picks native
for it rather than swapping the model.
"""

from __future__ import annotations

import functools
import os

from pg_diag.envs.base import Env, EnvState, ExactAnswers, time_limit

#: The registry, filled by [`register_task`][pg_diag.envs.register_task] (the built-in tasks below; a user's own the same way):
#: name -> (kind, one-line description); kind "jax" (pure JAX) or "mujoco" (a physics backend)
TASKS: dict = {}
#: name -> (observation size, action size), known without building the task (plans, memory estimates);
#: [`make`][pg_diag.envs.make] checks it against the task built
TASK_SIZES: dict = {}
#: name -> time limit in steps
EPISODE_LIMITS: dict = {}
#: name -> the MuJoCo models it comes on, the default first (() for a task with one definition)
TASK_MODELS: dict = {}
#: (name, model) -> (observation size, action size) where a model's sizes differ from TASK_SIZES'
MODEL_SIZES: dict = {}
#: name -> the task's closed-form answers ([`ExactAnswers`][pg_diag.envs.base.ExactAnswers]), for the tasks that declare them
EXACT: dict = {}
#: MuJoCo models (see the module's docstring)
MODELS = ("brax", "gym")
_MAKERS: dict = {}


def register_task(name: str, make_env, *, obs_size: int, action_size: int, episode_limit: int,
                  description: str = "", kind: str = "jax", exact: ExactAnswers | None = None) -> None:
    """Add a task to the registry. ``make_env(physics, threads, solver) -> Env`` builds it (a pure-JAX
    task ignores the three); its sizes and time limit are declared here so that plans and memory
    estimates need not build it, and [`make`][pg_diag.envs.make] checks the built task against them. ``exact``: the
    task's closed-form J, ∇J and V^π ([`ExactAnswers`][pg_diag.envs.base.ExactAnswers]), which every diagnostic then uses."""
    if not isinstance(name, str) or not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"a task's name must be letters, digits, '-' or '_', got {name!r}")
    if name in TASKS:
        raise ValueError(f"task {name!r} is already registered; tasks are: {', '.join(sorted(TASKS))}")
    if kind not in ("jax", "mujoco"):
        raise ValueError(f"a task's kind must be 'jax' (pure JAX) or 'mujoco', got {kind!r}")
    for field, value in (("obs_size", obs_size), ("action_size", action_size), ("episode_limit", episode_limit)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"task {name!r}: {field} must be a positive int, got {value!r}")
    if exact is not None and not isinstance(exact, ExactAnswers):
        raise ValueError(f"task {name!r}: exact must be a pg_diag.envs.ExactAnswers, got {type(exact).__name__}")
    TASKS[name] = (kind, description)
    if exact is not None:
        EXACT[name] = exact
    TASK_SIZES[name] = (obs_size, action_size)
    EPISODE_LIMITS[name] = episode_limit
    _MAKERS[name] = make_env


def unregister_task(name: str) -> None:
    """Remove a registered task (a user's, e.g. between tests)."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; tasks are: {', '.join(sorted(TASKS))}")
    for table in (TASKS, TASK_SIZES, EPISODE_LIMITS, _MAKERS):
        del table[name]
    TASK_MODELS.pop(name, None)
    EXACT.pop(name, None)
    _make.cache_clear()


def exact_answers(task: str, policy_hidden=()) -> ExactAnswers | None:
    """The task's closed-form answers where it declares them and they hold for a policy of these hidden sizes
    (the linear-quadratic task with a linear policy), else ``None``."""
    answers = EXACT.get(task)
    return answers if answers is not None and answers.applies(tuple(policy_hidden)) else None


def _pure(module: str, factory: str):
    def make_env(physics, threads, solver):
        import importlib
        return getattr(importlib.import_module(module), factory)()
    return make_env


def _mujoco(name: str):
    def make_env(physics, threads, solver, model="brax"):  # MuJoCo is imported only when a task is built
        from pg_diag.envs.mujoco_models import mujoco_task
        from pg_diag.envs.mujoco_tasks import make_mujoco_env
        return make_mujoco_env(mujoco_task(name, model), physics, threads, solver=solver)
    return make_env


for _name, _sizes, _gym_obs, _desc in (
        ("hopper", (11, 3), 11, "Hopper, 11-d obs, 3-d action, 1000-step episodes."),
        ("walker2d", (17, 6), 17, "Walker2d, 17-d obs, 6-d action, 1000-step episodes."),
        ("humanoid", (276, 17), 376, "Humanoid, 17-d action, 1000-step episodes; 276-d obs on Brax's model (its "
                                     "solver settings), Gym-v2's 376-d on Gym's (native MuJoCo only).")):
    register_task(_name, _mujoco(_name), obs_size=_sizes[0], action_size=_sizes[1], episode_limit=1000,
                  description=_desc, kind="mujoco")
    TASK_MODELS[_name] = MODELS
    MODEL_SIZES[(_name, "gym")] = (_gym_obs, _sizes[1])
register_task("pendulum", _pure("pg_diag.envs.classic", "make_pendulum"), obs_size=3, action_size=1,
              episode_limit=200, description="Pendulum swing-up in pure JAX, 3-d obs, 1-d action, 200-step episodes.")
register_task("point_mass", _pure("pg_diag.envs.classic", "make_point_mass"), obs_size=4, action_size=2,
              episode_limit=200, description="2-D point mass in pure JAX with termination, 4-d obs, 2-d action, "
                                             "200-step episodes.")
# the LQR task's limit is a cap its geometric episodes practically never reach
from pg_diag.envs import lqr as _lqr  # noqa: E402  (its closed forms, declared with the task)

register_task("lqr", _pure("pg_diag.envs.lqr", "make_lqr"), obs_size=2, action_size=1, episode_limit=10_000,
              exact=_lqr.exact_answers(),
              description="Linear-quadratic double integrator in pure JAX, 2-d obs, 1-d action, geometric episodes "
                          "(mean 50 steps); J, ∇J and V^π in closed form.")
PHYSICS = ("auto", "mjx", "native", "warp")
#: MuJoCo solver settings ([`pg_diag.envs.mujoco_tasks.SOLVERS`][pg_diag.envs.mujoco_tasks.SOLVERS]): the task's converged ones, or Brax's fast ones.
SOLVERS = ("converged", "fast")


def check_model(task: str, model: str) -> None:
    """Refuse a model the task does not come on, naming those it does."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; tasks are: {', '.join(sorted(TASKS))}")
    offered = TASK_MODELS.get(task, ())
    if offered and model not in offered:
        raise ValueError(f"unknown model {model!r} for task {task!r}; choose one of: {', '.join(offered)}")
    if not offered and model != MODELS[0]:
        raise ValueError(f"task {task!r} has one definition and no choice of MuJoCo model; model must be "
                         f"{MODELS[0]!r}, got {model!r} (the models are a choice of "
                         f"{', '.join(t for t in TASKS if TASK_MODELS.get(t))})")


def sizes(task: str, model: str = "brax") -> tuple[int, int]:
    """(observation size, action size) of the task on a model, without building it."""
    check_model(task, model)
    return MODEL_SIZES.get((task, model), TASK_SIZES[task])


def mjx_missing(task: str, model: str = "brax") -> str:
    """What MJX lacks to run the task on this model ("" when it runs it)."""
    if model == MODELS[0] or TASKS.get(task, ("jax",))[0] != "mujoco" or not TASK_MODELS.get(task):
        return ""
    from pg_diag.envs.mujoco_models import mujoco_task
    return mujoco_task(task, model).mjx_missing


def default_threads() -> int:
    """The native backend's threads where none are asked for: the host's cores, shared among the CPU devices
    a program runs on. Each device steps its block of agents at the same time as the others
    ([`pg_diag.run.host_devices`][pg_diag.run.host_devices]), so one thread each keeps the cores busy without a pool per call
    contending for them (64 Walker2d agents on 2 cores and 2 devices: 4.3 s against 5.9 s with two threads
    each and 7.7 s on one device). The thread count never changes results."""
    import jax

    devices = jax.local_device_count() if jax.default_backend() == "cpu" else 1
    return max(1, (os.cpu_count() or 1) // devices)


def resolve_physics(task: str, physics: str = "auto", threads: int = 0, model: str = "brax") -> tuple[str, int]:
    """The backend and thread count a task actually runs with: ("jax", 0) for
    pure-JAX tasks; for MuJoCo tasks ``auto`` means native MuJoCo on a CPU and
    MJX on an accelerator (native where MJX cannot run the model), and 0 threads
    means every core ([`default_threads`][pg_diag.envs.default_threads])."""
    check_model(task, model)
    if physics not in PHYSICS:
        raise ValueError(f"unknown physics backend {physics!r}; choose one of: {', '.join(PHYSICS)}")
    if TASKS[task][0] == "jax":
        if physics != "auto":
            raise ValueError(f"task {task!r} is written in pure JAX and has no physics backend; physics must be "
                             f"'auto', got {physics!r} (the physics backends run the MuJoCo tasks: "
                             f"{', '.join(t for t, (k, _) in TASKS.items() if k == 'mujoco')})")
        return "jax", 0
    missing = mjx_missing(task, model)
    from pg_diag.envs.mujoco_physics import refuse_backend
    refuse_backend(physics, task, model, missing)
    if physics == "warp":
        return "warp", 0
    if physics == "auto":
        import jax
        physics = "native" if jax.default_backend() == "cpu" or missing else "mjx"
    if physics == "native":
        return "native", threads or default_threads()
    return "mjx", 0


def choose_physics(task: str, physics: str, threads: int, solver: str, batch: int,
                   model: str = "brax") -> tuple[str, int, str]:
    """[`resolve_physics`][pg_diag.envs.resolve_physics] for a program that steps ``batch`` environments per batched step on each
    device: ``auto`` takes the backend measured faster at that batch on this host
    ([`pg_diag.envs.crossover.choose`][pg_diag.envs.crossover.choose]). Returns the backend, its thread count and why."""
    backend, resolved = resolve_physics(task, physics, threads, model)
    if backend == "jax" or physics != "auto":
        return backend, resolved, "pure-JAX task" if backend == "jax" else "asked for"
    missing = mjx_missing(task, model)
    if missing:
        return backend, resolved, f"MJX lacks {missing}: native MuJoCo"
    from pg_diag.envs import crossover

    native_threads = threads or default_threads()
    backend, why = crossover.choose(task, solver, batch, native_threads, model)
    return backend, (native_threads if backend == "native" else 0), why


def recorded_physics(task: str, physics: str, threads: int, solver: str, batch: int, model: str = "brax") -> str:
    """The backend [`choose_physics`][pg_diag.envs.choose_physics] would take, from this host's recorded measurements alone (nothing
    timed, nothing written): ``auto`` where they do not decide is native MuJoCo, as on a CPU. For plans."""
    backend, _ = resolve_physics(task, physics, threads, model)
    if backend == "jax" or physics != "auto" or mjx_missing(task, model):
        return backend
    from pg_diag.envs import crossover

    decided = crossover.recorded_choice(task, solver, batch, threads or default_threads(), model)
    return decided[0] if decided else "native"


@functools.lru_cache(maxsize=None)
def _make(name: str, physics: str, threads: int, solver: str, model: str) -> Env:
    env = (_MAKERS[name](physics, threads, solver, model=model) if TASK_MODELS.get(name)
           else _MAKERS[name](physics, threads, solver))
    if not isinstance(env, Env):
        raise ValueError(f"task {name!r}: its maker returned {type(env).__name__}, not a pg_diag.envs.Env")
    declared = (sizes(name, model), EPISODE_LIMITS[name])
    if ((env.obs_size, env.action_size), env.max_episode_steps) != declared:
        raise ValueError(f"task {name!r} was registered with (obs, action) sizes {declared[0]} and time limit "
                         f"{declared[1]}, but the task built has {(env.obs_size, env.action_size)} and "
                         f"{env.max_episode_steps}")
    if TASKS[name][0] == "jax":
        _check_shapes(name, env)
    return env


def _check_shapes(name: str, env: Env) -> None:
    """A pure-JAX task's reset and step traced (not compiled) for one environment: every field of what they
    return has the shape and kind the trainer reads, or the error names the field."""
    import jax
    import jax.numpy as jnp

    want = {"obs": ((env.obs_size,), "floating"), "reward": ((), "floating"), "terminated": ((), "bool"),
            "truncated": ((), "bool"), "t": ((), "integer")}
    first = jax.eval_shape(env.reset, jax.random.PRNGKey(0))
    for what, out in (("reset", first),
                      ("step", jax.eval_shape(env.step, first, jnp.zeros((env.action_size,), jnp.float32)))):
        if not isinstance(out, EnvState):
            raise ValueError(f"task {name!r}: its {what} returned {type(out).__name__}, not a pg_diag.envs.EnvState")
        for field, (shape, kind) in want.items():
            got = getattr(out, field)
            ok = kind == "bool" and got.dtype == bool or kind != "bool" and jnp.issubdtype(got.dtype, getattr(
                jnp, kind))
            if tuple(got.shape) != shape or not ok:
                raise ValueError(f"task {name!r}: its {what} returns {field} of shape {tuple(got.shape)} and dtype "
                                 f"{got.dtype}; one environment's {field} is of shape {shape}, {kind} (obs "
                                 f"[obs_size] float, reward [] float, terminated and truncated [] bool, t [] int)")


def episode_limit(task: str) -> int:
    """The task's time limit in steps, without building it."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; tasks are: {', '.join(sorted(TASKS))}")
    return EPISODE_LIMITS[task]


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
    return _make(name, backend, threads, solver, model)


__all__ = ["Env", "EnvState", "EXACT", "ExactAnswers", "exact_answers", "MODELS", "PHYSICS", "SOLVERS", "TASKS", "TASK_MODELS", "TASK_SIZES", "EPISODE_LIMITS",
           "check_model", "choose_physics", "episode_limit", "make", "mjx_missing", "recorded_physics",
           "register_task", "resolve_physics", "sizes", "time_limit", "unregister_task"]
