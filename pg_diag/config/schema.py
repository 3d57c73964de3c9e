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
before anything is compiled. The halves live in :mod:`.static` and :mod:`.knobs`; this module joins
them and checks what involves both.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

from pg_diag.config.knobs import (BOOL_KNOBS, KNOB_FIELDS, KNOB_NAMES, OPTIMIZATIONS, ConfigError, Knobs,
                                  check_knob, stack_knobs)
from pg_diag.config.static import STATIC_FIELDS, STATIC_NAMES, Static, check_static


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
    _check_owned_knobs(cfg)
    if task_kind(s.task) == "jax" and s.physics != "auto":
        raise ConfigError(f"task {s.task!r} is written in pure JAX and has no physics backend; physics must be "
                          f"'auto', got {s.physics!r} (mjx and native run the MuJoCo tasks: hopper, walker2d, "
                          f"humanoid)")
    if task_kind(s.task) == "jax" and s.solver != "converged":
        raise ConfigError(f"task {s.task!r} is written in pure JAX and has no MuJoCo solver; solver must be "
                          f"'converged', got {s.solver!r}")
    if task_kind(s.task) == "jax" and s.model != "brax":
        raise ConfigError(f"task {s.task!r} is written in pure JAX and has no MuJoCo model; model must be "
                          f"'brax' (the default), got {s.model!r}")
    if s.model == "gym" and s.physics == "mjx":
        from pg_diag.envs import mjx_missing
        if mjx_missing(s.task, s.model):
            raise ConfigError(f"physics='mjx' cannot run {s.task!r} on the 'gym' model: MJX lacks "
                              f"{mjx_missing(s.task, s.model)}; use physics='native' or 'auto'")
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


def _check_owned_knobs(cfg: Config) -> None:
    """A knob that registered algorithms declare as their own (PPO's clip_eps, TRPO's kl_bound, ...) must keep
    its default under any other algorithm: there it would do nothing, silently."""
    from pg_diag import algorithms

    algo = cfg.static.algorithm
    for name in KNOB_NAMES:
        owners = algorithms.owners(name)
        if owners and algo not in owners and getattr(cfg.knobs, name) != KNOB_FIELDS[name].default:
            raise ConfigError(f"knob {name}={getattr(cfg.knobs, name)!r} belongs to {', '.join(owners)}; algorithm "
                              f"{algo!r} does not read it (leave it at its default "
                              f"{KNOB_FIELDS[name].default!r}, or choose one of: {', '.join(owners)})")


__all__ = ["BOOL_KNOBS", "KNOB_FIELDS", "KNOB_NAMES", "OPTIMIZATIONS", "STATIC_FIELDS", "STATIC_NAMES",
           "Config", "ConfigError", "Knobs", "Static", "check_knob", "check_static", "stack_knobs", "task_kind",
           "validate"]
