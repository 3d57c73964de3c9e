"""Configuration schema: static settings, traced knobs and their validation.

A run is described by one [`Config`][pgdiag.config.schema.Config]. Its fields fall in two halves:

* **static** fields ([`Static`][pgdiag.config.static.Static]) fix array shapes or program structure
  (task, batch sizes, epochs, iterations, network widths). They are part of
  the compile key: changing one recompiles.
* **knobs** ([`Knobs`][pgdiag.config.knobs.Knobs]) are traced scalars, one per agent. Every
  code-level optimization of IM §3, the PPO ratio clip, both learning rates,
  γ, λ and the entropy coefficient are knobs, so a sweep over any of them is
  one compiled program (vmapped over agents).

``Config.replace(**changes)`` routes each name to its half and validates the result; every error names the bad value
and what is allowed, and is raised before anything is compiled. The halves live in [`static`][pgdiag.config.static]
and [`knobs`][pgdiag.config.knobs]; this module joins them and checks what involves both.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

from pgdiag.config import registry
from pgdiag.config.knobs import (BOOL_KNOBS, KNOB_FIELDS, KNOB_NAMES, OPTIMIZATIONS, ConfigError, Knobs, Option,
                                 check_knob, stack_knobs)
from pgdiag.config.static import STATIC_FIELDS, STATIC_NAMES, Static, check_static


@dataclasses.dataclass(frozen=True)
class Config:
    """A full run description: ``static`` settings plus traced ``knobs``.

    Build one with [`preset`][pgdiag.config.presets.preset] or ``Config().replace(...)``; read any field
    directly (``cfg.lr_policy``, ``cfg.num_envs``, the algorithm's own ``cfg.clip_eps``).
    The running algorithm's own settings (declared in its module, see
    [`pgdiag.Algorithm`][pgdiag.algorithms.base.Algorithm]) live in ``static.own`` and ``knobs.own``, always
    complete: another algorithm's are not there.
    """

    static: Static = dataclasses.field(default_factory=Static)
    knobs: Knobs = dataclasses.field(default_factory=Knobs)
    name: str = "custom"

    def __post_init__(self):
        # complete the algorithm's own settings with their declared defaults (a Config built directly)
        algo = _algorithm(self.static.algorithm)
        for half, declared in (("static", algo.static), ("knobs", algo.knobs)):
            record = getattr(self, half)
            own = dict(record.own)
            if set(own) != set(declared):
                object.__setattr__(self, half, dataclasses.replace(
                    record, own=_pairs({n: own.get(n, o.default) for n, o in declared.items()})))
        validate(self)

    def __getattr__(self, item):
        # Only called when normal lookup fails: delegate to the two halves.
        if item in ("static", "knobs"):
            raise AttributeError(item)
        if item in STATIC_FIELDS:
            return getattr(self.static, item)
        if item in KNOB_FIELDS:
            return getattr(self.knobs, item)
        for name, value in self.static.own + self.knobs.own:
            if name == item:
                return value
        raise AttributeError(f"Config has no setting {item!r}" + _owned_by(item, self.static.algorithm))

    def get(self, name: str, default=None):
        """The setting ``name``, or ``default`` where the running algorithm has no such setting."""
        try:
            return getattr(self, name)
        except AttributeError:
            return default

    def replace(self, **changes) -> "Config":
        """A copy with the named static settings and knobs changed (validated). A setting another algorithm
        declares as its own is refused unless it equals that algorithm's default (a record shared by several
        algorithms' presets names it harmlessly); changing ``algorithm`` keeps the own settings the new
        algorithm also declares."""
        name = changes.pop("name", self.name)
        algo_name = check_static("algorithm", changes["algorithm"]) if "algorithm" in changes \
            else self.static.algorithm
        algo = _algorithm(algo_name)
        own = {"static": {}, "knobs": {}}
        for half, declared in (("static", algo.static), ("knobs", algo.knobs)):
            for key, value in getattr(self, half).own:
                if key in declared:
                    own[half][key] = value
                elif algo_name != self.static.algorithm:
                    _check_foreign(key, value, algo_name)
        static, knobs = {}, {}
        for key, value in changes.items():
            if key in KNOB_FIELDS:
                knobs[key] = check_knob(key, value)
            elif key in STATIC_FIELDS:
                static[key] = check_static(key, value)
            elif key in algo.knobs:
                own["knobs"][key] = algo.knobs[key].normalize(key, value, "knob")
            elif key in algo.static:
                own["static"][key] = algo.static[key].normalize(key, value, "static setting")
            else:
                _check_foreign(key, value, algo_name)
        return Config(static=dataclasses.replace(self.static, **static, own=_pairs(own["static"])),
                      knobs=dataclasses.replace(self.knobs, **knobs, own=_pairs(own["knobs"])), name=name)

    def knob_names(self) -> tuple:
        """Every knob a sweep of this configuration can vary: the shared ones and the algorithm's own."""
        return KNOB_NAMES + tuple(n for n, _ in self.knobs.own)

    def to_dict(self) -> dict:
        """Shared settings under "static" and "knobs"; the algorithm's own nested under its name."""
        shared = lambda record, names: {n: _plain(getattr(record, n)) for n in names}
        return {"name": self.name,
                "static": shared(self.static, STATIC_NAMES),
                "knobs": shared(self.knobs, KNOB_NAMES),
                self.static.algorithm: {"static": {n: _plain(v) for n, v in self.static.own},
                                        "knobs": {n: _plain(v) for n, v in self.knobs.own}}}

    @staticmethod
    def from_dict(d: Mapping) -> "Config":
        """The inverse of [`to_dict`][pgdiag.config.schema.Config.to_dict]. Also reads the earlier flat record
        (every algorithm's settings in "static" and "knobs"): there, settings the run's algorithm does not declare
        are dropped, since it never read them."""
        algo_name = d["static"].get("algorithm", Static.algorithm)
        nested = d.get(algo_name) or {}
        values = {**d["static"], **d["knobs"], **nested.get("static", {}), **nested.get("knobs", {})}
        algo = _algorithm(check_static("algorithm", algo_name))
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()
                  if k in STATIC_FIELDS or k in KNOB_FIELDS or k in algo.static or k in algo.knobs}
        return Config(name=d.get("name", "custom")).replace(**values)


def _algorithm(name: str):
    return registry.get(name)


def _pairs(values: Mapping) -> tuple:
    return tuple(sorted(values.items()))


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


def _owned_by(name: str, algo_name: str) -> str:
    owners = registry.owners(name)
    return f": it belongs to {', '.join(owners)}, not to {algo_name!r}" if owners else ""


def _check_foreign(key, value, algo_name: str) -> None:
    """A setting the running algorithm does not declare: harmless at the default of the algorithms that
    declare it (dropped), an error otherwise (it would do nothing, silently)."""
    owners = registry.owners(key)
    if not owners:
        raise ConfigError(f"unknown setting {key!r}; static settings are: {', '.join(STATIC_NAMES)}; "
                          f"knobs are: {', '.join(KNOB_NAMES)}; algorithm {algo_name!r} adds: "
                          f"{', '.join(_algorithm(algo_name).static | _algorithm(algo_name).knobs) or 'nothing'}")
    defaults = {registry.get(o).setting(key).default for o in owners}
    if value not in defaults:
        kind = "knob" if key in _algorithm(owners[0]).knobs else "static setting"
        raise ConfigError(f"{kind} {key}={value!r} belongs to {', '.join(owners)}; algorithm {algo_name!r} does "
                          f"not read it (leave it at its default {sorted(defaults, key=str)[0]!r}, or choose one "
                          f"of: {', '.join(owners)})")


def task_kind(task: str) -> str:
    from pgdiag.envs import REGISTRY
    return REGISTRY[task].kind


def validate(cfg: Config) -> None:
    """Check every field and the cross-field constraints; raise ConfigError."""
    for name in STATIC_NAMES:
        check_static(name, getattr(cfg.static, name))
    for name in KNOB_NAMES:
        check_knob(name, getattr(cfg.knobs, name))
    algo = _algorithm(cfg.static.algorithm)
    for half, declared, what in ((cfg.static, algo.static, "static setting"), (cfg.knobs, algo.knobs, "knob")):
        own = dict(half.own)
        if set(own) != set(declared):
            raise ConfigError(f"algorithm {algo.name!r} declares the {what}s {sorted(declared)}, the configuration "
                              f"holds {sorted(own)}")
        for n, v in own.items():
            declared[n].normalize(n, v, what)
    s = cfg.static
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
        from pgdiag.envs import mjx_missing
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


__all__ = ["BOOL_KNOBS", "KNOB_FIELDS", "KNOB_NAMES", "OPTIMIZATIONS", "STATIC_FIELDS", "STATIC_NAMES", "Config",
           "ConfigError", "Knobs", "Option", "Static", "check_knob", "check_static", "stack_knobs", "task_kind",
           "validate"]
