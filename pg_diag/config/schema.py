"""Configuration schema: static settings, traced knobs and their validation.

A run is described by one :class:`Config`. Its fields fall in two halves:

* **static** fields (:class:`Static`) fix array shapes or program structure
  (task, batch sizes, epochs, iterations, network widths). They are part of
  the compile key: changing one recompiles.
* **knobs** (:class:`Knobs`) are traced scalars, one per agent. Every
  code-level optimization of IM §3, the PPO ratio clip, both learning rates,
  γ, λ and the entropy coefficient are knobs, so a sweep over any of them is
  one compiled program (vmapped over agents).

``Config.replace(**changes)`` routes each name to its half and validates the
result; every error names the bad value and what is allowed, and is raised
before anything is compiled.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, Callable, Iterable, Mapping

import jax.numpy as jnp
import numpy as np


class ConfigError(ValueError):
    """A configuration value is unknown, of the wrong type, or out of range."""


# --------------------------------------------------------------------------
# Knobs: traced per-agent scalars.
# --------------------------------------------------------------------------

def _knob(default, doc: str, check: Callable[[Any], bool] | None = None,
          allowed: str = ""):
    return dataclasses.field(
        default=default,
        metadata={"doc": doc, "check": check, "allowed": allowed})


_positive = (lambda v: v > 0, "a number > 0")
_unit_open_closed = (lambda v: 0 < v <= 1, "a number in (0, 1]")
_unit_closed = (lambda v: 0 <= v <= 1, "a number in [0, 1]")
_any_real = (lambda v: True, "any finite number")


@dataclasses.dataclass(frozen=True)
class Knobs:
    """Traced settings: one scalar per agent, sweepable without recompiling.

    The first nine boolean fields are the code-level optimizations of IM §3
    (``implementation-matters-ppo-trpo.txt``); semantics follow the original
    code (reference/original-code.md §2, §6). Values here are plain Python
    scalars; :meth:`as_arrays` turns them into the JAX pytree the compiled
    program consumes.
    """

    # --- the nine code-level optimizations (IM §3) ---
    value_clipping: bool = _knob(
        True, "IM opt. 1: clipped value loss, max of the two squared errors (ref §2.4).")
    reward_scaling: bool = _knob(
        True, "IM opt. 2: divide rewards by the std of a running discounted return (ref §2.3).")
    orthogonal_init: bool = _knob(
        True, "IM opt. 3: orthogonal init with layer scaling (gains √2 / 0.01 / 1); off = xavier-uniform (ref §2.6).")
    lr_annealing: bool = _knob(
        True, "IM opt. 4: both Adam learning rates decay linearly to 0 over the run (ref §2.5).")
    reward_clipping: bool = _knob(
        True, "IM opt. 5: clip the scaled reward to ±reward_clip; acts only with reward_scaling on (ref §2.3).")
    obs_normalization: bool = _knob(
        True, "IM opt. 6: running mean/std observation normalization (ref §2.2).")
    obs_clipping: bool = _knob(
        True, "IM opt. 7: clip the normalized observation to ±obs_clip; acts only with obs_normalization on (ref §2.2).")
    tanh_activations: bool = _knob(
        True, "IM opt. 8: tanh hidden activations; off = ReLU.")
    grad_clipping: bool = _knob(
        False, "IM opt. 9: clip the global L2 norm of the policy gradient to max_grad_norm (ref §2.5).")

    # --- ranges of the clipping optimizations ---
    value_clip_eps: float = _knob(0.2, "Value clipping range ε_v.", *_positive)
    reward_clip: float = _knob(10.0, "Reward clipping range.", *_positive)
    obs_clip: float = _knob(10.0, "Observation clipping range.", *_positive)
    max_grad_norm: float = _knob(0.5, "Global gradient-norm bound.", *_positive)

    # --- algorithm hyperparameters ---
    clip_eps: float = _knob(
        0.2, "PPO ratio clip ε; float('inf') (or 1e32) disables it: PPO-NoClip.", *_positive)
    lr_policy: float = _knob(3e-4, "Policy Adam learning rate.", *_positive)
    lr_value: float = _knob(1.5e-4, "Value Adam learning rate.", *_positive)
    adam_eps: float = _knob(1e-5, "Adam ε of both optimizers.", *_positive)
    gamma: float = _knob(0.99, "Discount γ (GAE, returns and the reward scaler).", *_unit_open_closed)
    gae_lambda: float = _knob(0.95, "GAE λ.", *_unit_closed)
    entropy_coef: float = _knob(
        0.0, "Entropy coefficient; the loss adds −coef·H, so negative values penalize entropy.", *_any_real)

    # --- TRPO (ref §2.7) ---
    kl_bound: float = _knob(0.01, "TRPO mean-KL bound δ (the original's max_kl).", *_positive)
    damping: float = _knob(0.1, "TRPO Fisher damping λ: CG solves (F + λI)x = g.",
                           lambda v: v >= 0, "a number >= 0")
    accept_ratio: float = _knob(0.1, "TRPO line search: accept when actual/expected improvement exceeds this.",
                                lambda v: v >= 0, "a number >= 0")

    # --- the original's other reward filter ---
    reward_scaling_uses_rewards: bool = _knob(
        False, "With reward_scaling on, use the original's norm_rewards='rewards' filter — running moments of the "
               "raw rewards, (r − μ)/σ + μ — instead of the discounted return's std (ref §2.3; PPO-NoClip presets).")

    # --- reference behaviours reachable on purpose ---
    reference_batch_end: bool = _knob(
        False, "Bootstrap the batch's last step from V(s_{T-1}) as the original code did "
               "(ref §2.1 step 3, §8 B4) instead of from V(s_T).")

    def as_arrays(self) -> "dict[str, jnp.ndarray]":
        """The pytree the compiled program consumes: bools as jnp.bool_, the rest float32."""
        return {name: jnp.asarray(getattr(self, name),
                                  dtype=jnp.bool_ if name in BOOL_KNOBS else jnp.float32)
                for name in KNOB_NAMES}


KNOB_FIELDS = {f.name: f for f in dataclasses.fields(Knobs)}
KNOB_NAMES = tuple(KNOB_FIELDS)
BOOL_KNOBS = frozenset(n for n, f in KNOB_FIELDS.items() if isinstance(f.default, bool))

#: The nine code-level optimizations of IM §3, in the paper's order.
OPTIMIZATIONS = ("value_clipping", "reward_scaling", "orthogonal_init", "lr_annealing",
                 "reward_clipping", "obs_normalization", "obs_clipping",
                 "tanh_activations", "grad_clipping")


def stack_knobs(knobs: Iterable[Knobs]) -> "dict[str, jnp.ndarray]":
    """Stack per-agent knobs into arrays with a leading agent axis."""
    import jax

    knobs = list(knobs)
    # built in numpy and transferred as is: no device-side conversion to compile
    return {name: jax.device_put(np.array([getattr(k, name) for k in knobs],
                                          dtype=np.bool_ if name in BOOL_KNOBS else np.float32))
            for name in KNOB_NAMES}


# --------------------------------------------------------------------------
# Static settings: shapes and program structure.
# --------------------------------------------------------------------------

def _static(default, doc: str):
    return dataclasses.field(default=default, metadata={"doc": doc})


@dataclasses.dataclass(frozen=True)
class Static:
    """Settings that shape the compiled program (part of the compile key)."""

    task: str = _static("hopper", "Task name (see `pg-diag tasks`).")
    physics: str = _static("auto", "Physics backend of MuJoCo tasks: 'native' (MuJoCo's C library through a host "
                                   "callback, multithreaded), 'mjx' (pure JAX) or 'auto' (in a sweep, the backend "
                                   "measured faster on this host for the batch each device steps; elsewhere native "
                                   "on a CPU, MJX on an accelerator). Pure-JAX tasks take only 'auto'.")
    physics_threads: int = _static(0, "Threads of the native backend; 0 = every core.")
    solver: str = _static("converged", "MuJoCo solver setting: 'converged' (the task's own, the same on both "
                                       "backends) or 'fast' (Brax's: 1 Newton iteration, 4 line-search steps; "
                                       "what makes MJX fast; contacts unconverged). MuJoCo tasks only.")
    algorithm: str = _static("ppo", "Update rule: 'ppo' (clipped surrogate, minibatch Adam) or 'trpo' "
                                    "(natural gradient + line search, ref §2.7).")
    num_envs: int = _static(1, "Parallel environments per agent (the original used 1).")
    steps_per_env: int = _static(2048, "Steps collected per environment per iteration; batch = num_envs × steps_per_env.")
    num_iterations: int = _static(488, "Training iterations (488 × 2048 ≈ 1M steps, ref §1).")
    ppo_epochs: int = _static(10, "Passes over the batch in the policy update.")
    value_epochs: int = _static(10, "Passes over the batch in the value update.")
    num_minibatches: int = _static(32, "Minibatches per epoch, for both updates.")
    policy_hidden: tuple = _static((64, 64), "Hidden layer widths of the policy MLP; () = a linear-Gaussian policy.")
    value_hidden: tuple = _static((64, 64), "Hidden layer widths of the value MLP.")
    reset_every_iteration: bool = _static(
        True, "Reset every environment at the start of each iteration, dropping partial episodes (ref §2.1).")
    cg_iterations: int = _static(10, "TRPO conjugate-gradient iterations (fixed, no early stop).")
    line_search_steps: int = _static(10, "TRPO backtracking line search: step scales 2^0 … 2^-(n-1).")
    fisher_fraction: float = _static(0.1, "TRPO: fraction of the batch (a random subset, fixed size) for the "
                                          "Fisher-vector product.")
    heldout_every: int = _static(
        0, "Every this many iterations (0 = never), also collect a held-out batch with the pre-update policy "
           "and report the trust-region metrics on it (ref §4.1).")
    checkpoint_at: tuple = _static(
        (), "Save every agent's full state after these iterations (0 = before training; e.g. 0,150,300,450), "
            "kept in the run directory's checkpoints/. Needs an output directory; does not change the program.")
    checkpoint_every: int = _static(
        0, "Also save a checkpoint every this many iterations (0 = never). Does not change the program.")

    def checkpoint_iterations(self) -> tuple:
        """The iterations after which a checkpoint is kept, sorted (0 = the initial state)."""
        every = range(self.checkpoint_every, self.num_iterations + 1, self.checkpoint_every) \
            if self.checkpoint_every else ()
        return tuple(sorted(set(self.checkpoint_at) | set(every)))

    def program(self) -> "Static":
        """These settings less those that do not shape the compiled program (the compile key)."""
        return dataclasses.replace(self, checkpoint_at=(), checkpoint_every=0)

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.steps_per_env

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches

    @property
    def fisher_size(self) -> int:
        """States in TRPO's Fisher-vector-product subset: int(fraction · batch), truncated as the
        original's ``int(0.1 * T)`` (ref §2.7): 204 of 2,048, 25 of 256."""
        return max(1, int(self.fisher_fraction * self.batch_size))


STATIC_FIELDS = {f.name: f for f in dataclasses.fields(Static)}
STATIC_NAMES = tuple(STATIC_FIELDS)
ALGORITHMS = ("ppo", "trpo")


# --------------------------------------------------------------------------
# Config = Static + Knobs, with validation.
# --------------------------------------------------------------------------

def _is_bool(v) -> bool:
    return isinstance(v, (bool, np.bool_))


def _is_real(v) -> bool:
    return isinstance(v, numbers.Real) and not _is_bool(v)


def check_knob(name: str, value) -> Any:
    """Validate one knob value; return it normalized (bool or float)."""
    if name not in KNOB_FIELDS:
        raise ConfigError(f"unknown knob {name!r}; knobs are: {', '.join(KNOB_NAMES)}")
    if name in BOOL_KNOBS:
        if not _is_bool(value):
            raise ConfigError(f"knob {name!r} must be True or False, got {value!r} ({type(value).__name__})")
        return bool(value)
    meta = KNOB_FIELDS[name].metadata
    if not _is_real(value):
        raise ConfigError(f"knob {name!r} must be {meta['allowed']}, got {value!r} ({type(value).__name__})")
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and name != "clip_eps"):
        raise ConfigError(f"knob {name!r} must be {meta['allowed']}, got {value!r}")
    if not meta["check"](value):
        raise ConfigError(f"knob {name!r} must be {meta['allowed']}, got {value!r}")
    return value


def check_static(name: str, value) -> Any:
    """Validate one static setting; return it normalized."""
    from pg_diag.envs import TASKS  # late import: envs import config-free modules only

    if name not in STATIC_FIELDS:
        raise ConfigError(f"unknown setting {name!r}; static settings are: {', '.join(STATIC_NAMES)}; "
                          f"knobs are: {', '.join(KNOB_NAMES)}")
    if name == "task":
        if not isinstance(value, str) or value not in TASKS:
            raise ConfigError(f"unknown task {value!r}; tasks are: {', '.join(sorted(TASKS))}")
        return value
    if name == "algorithm":
        if value not in ALGORITHMS:
            raise ConfigError(f"unknown algorithm {value!r}; algorithms are: {', '.join(ALGORITHMS)}")
        return value
    if name in ("policy_hidden", "value_hidden"):
        # () is a linear network: a linear-Gaussian policy (the LQR task's closed forms need one)
        if (not isinstance(value, (tuple, list))
                or not all(isinstance(h, numbers.Integral) and not _is_bool(h) and h > 0 for h in value)):
            raise ConfigError(f"{name} must be a tuple of positive ints (() for a linear network), got {value!r}")
        return tuple(int(h) for h in value)
    if name == "physics":
        from pg_diag.envs import PHYSICS
        if value not in PHYSICS:
            raise ConfigError(f"unknown physics backend {value!r}; choose one of: {', '.join(PHYSICS)}")
        return value
    if name == "solver":
        from pg_diag.envs import SOLVERS
        if value not in SOLVERS:
            raise ConfigError(f"unknown solver setting {value!r}; choose one of: {', '.join(SOLVERS)}")
        return value
    if name == "physics_threads":
        if not isinstance(value, numbers.Integral) or _is_bool(value) or value < 0:
            raise ConfigError(f"physics_threads must be an int >= 0 (0 = every core), got {value!r}")
        return int(value)
    if name == "fisher_fraction":
        if not _is_real(value) or not 0 < value <= 1:
            raise ConfigError(f"fisher_fraction must be a number in (0, 1], got {value!r}")
        return float(value)
    if name == "checkpoint_at":
        items = value if isinstance(value, (tuple, list)) else None
        if items is None or not all(isinstance(i, numbers.Integral) and not _is_bool(i) and i >= 0 for i in items):
            raise ConfigError(f"checkpoint_at must be a list of iterations (ints >= 0; 0 = before training), "
                              f"got {value!r}")
        return tuple(sorted({int(i) for i in items}))
    if name in ("heldout_every", "checkpoint_every"):
        if not isinstance(value, numbers.Integral) or _is_bool(value) or value < 0:
            raise ConfigError(f"{name} must be an int >= 0 (0 = never), got {value!r}")
        return int(value)
    if name == "reset_every_iteration":
        if not _is_bool(value):
            raise ConfigError(f"{name} must be True or False, got {value!r}")
        return bool(value)
    if not isinstance(value, numbers.Integral) or _is_bool(value) or value < 1:
        raise ConfigError(f"{name} must be a positive int, got {value!r} ({type(value).__name__})")
    return int(value)


@dataclasses.dataclass(frozen=True)
class Config:
    """A full run description: ``static`` settings plus traced ``knobs``.

    Build one with :func:`preset` or ``Config().replace(...)``; read any field
    directly (``cfg.lr_policy``, ``cfg.num_envs``).
    """

    static: Static = dataclasses.field(default_factory=Static)
    knobs: Knobs = dataclasses.field(default_factory=Knobs)
    name: str = "custom"

    def __post_init__(self):
        validate(self)

    def __getattr__(self, item):
        # Only called when normal lookup fails: delegate to the two halves.
        if item in STATIC_FIELDS:
            return getattr(self.static, item)
        if item in KNOB_FIELDS:
            return getattr(self.knobs, item)
        raise AttributeError(item)

    def replace(self, **changes) -> "Config":
        """A copy with the named static settings and knobs changed (validated)."""
        static, knobs = {}, {}
        for key, value in changes.items():
            if key in KNOB_FIELDS:
                knobs[key] = check_knob(key, value)
            elif key in STATIC_FIELDS:
                static[key] = check_static(key, value)
            elif key == "name":
                continue
            else:
                raise ConfigError(f"unknown setting {key!r}; static settings are: {', '.join(STATIC_NAMES)}; "
                                  f"knobs are: {', '.join(KNOB_NAMES)}")
        return Config(static=dataclasses.replace(self.static, **static),
                      knobs=dataclasses.replace(self.knobs, **knobs),
                      name=changes.get("name", self.name))

    def to_dict(self) -> dict:
        return {"name": self.name,
                "static": dataclasses.asdict(self.static),
                "knobs": dataclasses.asdict(self.knobs)}

    @staticmethod
    def from_dict(d: Mapping) -> "Config":
        static = {k: tuple(v) if isinstance(v, list) else v for k, v in d["static"].items()}
        return Config(name=d.get("name", "custom")).replace(**static, **d["knobs"])


def task_kind(task: str) -> str:
    from pg_diag.envs import TASKS
    return TASKS[task][0]


def validate(cfg: Config) -> None:
    """Check every field and the cross-field constraints; raise ConfigError."""
    for name in STATIC_NAMES:
        check_static(name, getattr(cfg.static, name))
    for name in KNOB_NAMES:
        check_knob(name, getattr(cfg.knobs, name))
    s = cfg.static
    if task_kind(s.task) == "jax" and s.physics != "auto":
        raise ConfigError(f"task {s.task!r} is written in pure JAX and has no physics backend; physics must be "
                          f"'auto', got {s.physics!r} (mjx and native run the MuJoCo tasks: hopper, walker2d, "
                          f"humanoid)")
    if task_kind(s.task) == "jax" and s.solver != "converged":
        raise ConfigError(f"task {s.task!r} is written in pure JAX and has no MuJoCo solver; solver must be "
                          f"'converged', got {s.solver!r}")
    late = [i for i in s.checkpoint_at if i > s.num_iterations]
    if late:
        raise ConfigError(f"checkpoint_at {late} lies beyond the run's num_iterations = {s.num_iterations}; "
                          f"checkpoints can be taken after iterations 0 … {s.num_iterations}")
    if s.checkpoint_every > s.num_iterations:
        raise ConfigError(f"checkpoint_every = {s.checkpoint_every} exceeds num_iterations = {s.num_iterations}: "
                          f"no checkpoint would be taken; use a value in 1 … {s.num_iterations} (0 = never)")
    if s.batch_size % s.num_minibatches:
        raise ConfigError(
            f"batch of num_envs × steps_per_env = {s.num_envs} × {s.steps_per_env} = {s.batch_size} "
            f"samples does not divide into num_minibatches = {s.num_minibatches}; choose num_minibatches "
            f"among the divisors of {s.batch_size}")
    if s.minibatch_size < 2:
        raise ConfigError(
            f"minibatches of {s.minibatch_size} sample(s) are too small: per-minibatch advantage "
            f"normalization needs at least 2 (batch {s.batch_size}, num_minibatches {s.num_minibatches})")
