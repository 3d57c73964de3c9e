"""The task registry: one `TaskEntry` per task in `REGISTRY`, added by `register_task` (the built-in tasks
and a user's own the same way), and a task built from its entry and checked against what the entry declares."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any, Callable

from pgdiag.envs.base import Env, EnvState, ExactAnswers

#: MuJoCo models (see `pgdiag.envs`)
MODELS = ("brax", "gym")


@dataclasses.dataclass(frozen=True, eq=False)
class TaskEntry:
    """One registered task: how to build it, and what plans and memory estimates know without building it.

    Attributes:
        name: the task's name.
        make: `make(physics, threads, solver) -> Env` builds it (a pure-JAX task ignores the three); a task on
            several MuJoCo models takes `model=` too.
        obs_size: the observation size (on the default model).
        action_size: the action size.
        episode_limit: the time limit in steps.
        kind: "jax" (pure JAX) or "mujoco" (run on a physics backend).
        description: one line, as `pgdiag tasks` lists it.
        models: the MuJoCo models it comes on, the default first (() for a task with one definition).
        model_sizes: (model, (observation size, action size)) where a model's sizes differ from the default's.
        exact: the task's closed-form answers (`ExactAnswers`), for a task that declares them.
    """

    name: str
    make: Callable[..., Env]
    obs_size: int
    action_size: int
    episode_limit: int
    kind: str = "jax"
    description: str = ""
    models: tuple[str, ...] = ()
    model_sizes: tuple[tuple[str, tuple[int, int]], ...] = ()
    exact: ExactAnswers | None = None

    def sizes(self, model: str = MODELS[0]) -> tuple[int, int]:
        """(observation size, action size) on `model`."""
        return dict(self.model_sizes).get(model, (self.obs_size, self.action_size))


#: name -> its `TaskEntry`, in the order registered; read it, add to it with `register_task`
REGISTRY: dict[str, TaskEntry] = {}


def register_task(name: str, make_env, *, obs_size: int, action_size: int, episode_limit: int,
                  description: str = "", kind: str = "jax", exact: ExactAnswers | None = None) -> None:
    """Add a task to the registry.

    `make_env(physics, threads, solver) -> Env` builds it (a pure-JAX task ignores the three); its sizes and
    time limit are declared here so that plans and memory estimates need not build it, and `make` checks the
    built task against them. `exact`: the task's closed-form J, ∇J and V^π (`ExactAnswers`), which every
    diagnostic then uses.
    """
    register_entry(TaskEntry(name, make_env, obs_size, action_size, episode_limit, kind=kind,
                             description=description, exact=exact))


def register_entry(entry: TaskEntry) -> None:
    """Add a checked entry to `REGISTRY` (what `register_task` does, with every field of the entry)."""
    name = entry.name
    if not isinstance(name, str) or not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"a task's name must be letters, digits, '-' or '_', got {name!r}")
    if name in REGISTRY:
        raise ValueError(f"task {name!r} is already registered; tasks are: {', '.join(sorted(REGISTRY))}")
    if entry.kind not in ("jax", "mujoco"):
        raise ValueError(f"a task's kind must be 'jax' (pure JAX) or 'mujoco', got {entry.kind!r}")
    for field in ("obs_size", "action_size", "episode_limit"):
        value = getattr(entry, field)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"task {name!r}: {field} must be a positive int, got {value!r}")
    if entry.exact is not None and not isinstance(entry.exact, ExactAnswers):
        raise ValueError(f"task {name!r}: exact must be a pgdiag.envs.ExactAnswers, got "
                         f"{type(entry.exact).__name__}")
    REGISTRY[name] = entry


def unregister_task(name: str) -> None:
    """Remove a registered task (a user's, e.g. between tests)."""
    task_entry(name)
    del REGISTRY[name]
    build.cache_clear()   # a task registered again under the name is built anew


def task_entry(task: str) -> TaskEntry:
    """The task's entry; an unknown name is refused with the tasks there are."""
    if task not in REGISTRY:
        raise ValueError(f"unknown task {task!r}; tasks are: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[task]


def exact_answers(task: str, policy_hidden=(), network: str = "mlp") -> ExactAnswers | None:
    """The task's closed-form answers where it declares them and they hold for a policy of these hidden sizes
    (the linear-quadratic task with a linear policy), else `None`. They are written on the papers' network
    ("mlp": a linear Gaussian without hidden layers reads as an affine policy); another network has none."""
    if network != "mlp":
        return None
    entry = REGISTRY.get(task)
    answers = entry.exact if entry is not None else None
    return answers if answers is not None and answers.applies(tuple(policy_hidden)) else None


def check_model(task: str, model: str) -> None:
    """Refuse a model the task does not come on, naming those it does."""
    offered = task_entry(task).models
    if offered and model not in offered:
        raise ValueError(f"unknown model {model!r} for task {task!r}; choose one of: {', '.join(offered)}")
    if not offered and model != MODELS[0]:
        raise ValueError(f"task {task!r} has one definition and no choice of MuJoCo model; model must be "
                         f"{MODELS[0]!r}, got {model!r} (the models are a choice of "
                         f"{', '.join(t for t, e in REGISTRY.items() if e.models)})")


def sizes(task: str, model: str = "brax") -> tuple[int, int]:
    """(observation size, action size) of the task on a model, without building it."""
    check_model(task, model)
    return REGISTRY[task].sizes(model)


def episode_limit(task: str) -> int:
    """The task's time limit in steps, without building it."""
    return task_entry(task).episode_limit


@functools.lru_cache(maxsize=None)
def build(name: str, physics: str, threads: int, solver: str, model: str) -> Env:
    """The task built by its entry on a resolved backend (cached), checked against what the entry declares."""
    entry = REGISTRY[name]
    env = entry.make(physics, threads, solver, model=model) if entry.models else entry.make(physics, threads, solver)
    if not isinstance(env, Env):
        raise ValueError(f"task {name!r}: its maker returned {type(env).__name__}, not a pgdiag.envs.Env")
    declared = (sizes(name, model), entry.episode_limit)
    if ((env.obs_size, env.action_size), env.max_episode_steps) != declared:
        raise ValueError(f"task {name!r} was registered with (obs, action) sizes {declared[0]} and time limit "
                         f"{declared[1]}, but the task built has {(env.obs_size, env.action_size)} and "
                         f"{env.max_episode_steps}")
    if entry.kind == "jax":
        _check_shapes(name, env)
    return env


def _check_shapes(name: str, env: Env) -> None:
    """A pure-JAX task's reset and step traced (not compiled) for one environment: every field of what they
    return has the shape and kind the trainer reads, or the error names the field."""
    import jax
    import jax.numpy as jnp

    want = {"obs": ((env.obs_size,), "floating"), "reward": ((), "floating"), "terminated": ((), "bool"),
            "truncated": ((), "bool"), "t": ((), "integer")}
    # shapes in, shapes out: nothing runs, so nothing compiles (a run counts its own compiles)
    first = jax.eval_shape(env.reset, jax.ShapeDtypeStruct((2,), jnp.uint32))
    for what, out in (("reset", first),
                      ("step", jax.eval_shape(env.step, first, jax.ShapeDtypeStruct((env.action_size,), jnp.float32)))):
        if not isinstance(out, EnvState):
            raise ValueError(f"task {name!r}: its {what} returned {type(out).__name__}, not a pgdiag.envs.EnvState")
        for field, (shape, kind) in want.items():
            got = getattr(out, field)
            ok = kind == "bool" and got.dtype == bool or kind != "bool" and jnp.issubdtype(got.dtype, getattr(
                jnp, kind))
            if tuple(got.shape) != shape or not ok:
                raise ValueError(f"task {name!r}: its {what} returns {field} of shape {tuple(got.shape)} and dtype "
                                 f"{got.dtype}; one environment's {field} is of shape {shape}, {kind} (obs "
                                 f"[obs_size] float, reward [] float, terminated and truncated [] bool, t [] int)")


class _Column(Mapping):
    """A read-only view of one column of `REGISTRY` (name -> what `read` takes from the entry), for the tasks
    `has` accepts; it follows the registry as tasks are added and removed."""

    def __init__(self, read: Callable[[TaskEntry], Any], has: Callable[[TaskEntry], bool] = lambda e: True):
        self._read, self._has = read, has

    def __getitem__(self, name):
        entry = REGISTRY.get(name)
        if entry is None or not self._has(entry):
            raise KeyError(name)
        return self._read(entry)

    def __iter__(self):
        return (name for name, entry in REGISTRY.items() if self._has(entry))

    def __len__(self):
        return sum(1 for _ in self)

    def __repr__(self):
        return repr(dict(self))


# The registry's columns as the mappings they once were (read by users and tests; pgdiag reads `REGISTRY`).
#: name -> (kind, one-line description); kind "jax" (pure JAX) or "mujoco" (a physics backend)
TASKS = _Column(lambda e: (e.kind, e.description))
#: name -> (observation size, action size) on the default model
TASK_SIZES = _Column(lambda e: (e.obs_size, e.action_size))
#: name -> time limit in steps
EPISODE_LIMITS = _Column(lambda e: e.episode_limit)
#: name -> the MuJoCo models it comes on, the default first, for the tasks on several
TASK_MODELS = _Column(lambda e: e.models, lambda e: bool(e.models))
#: name -> the task's closed-form answers (`ExactAnswers`), for the tasks that declare them
EXACT = _Column(lambda e: e.exact, lambda e: e.exact is not None)


__all__ = ["EPISODE_LIMITS", "EXACT", "MODELS", "REGISTRY", "TASKS", "TASK_MODELS", "TASK_SIZES", "TaskEntry",
           "build", "check_model", "episode_limit", "exact_answers", "register_entry", "register_task", "sizes",
           "task_entry", "unregister_task"]
