"""Traced knobs: the per-agent scalars of a run (IM §3's code-level optimizations, both learning rates, γ, λ,
the entropy coefficient, and the running algorithm's own: PPO's ratio clip, TRPO's δ, ...), their validation,
and their stacking over agents. A sweep over any knob is one compiled program, vmapped over agents.
:class:`Option` is how an algorithm declares a setting of its own."""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, Callable, Iterable, Optional

import jax.numpy as jnp
import numpy as np


class ConfigError(ValueError):
    """A configuration value is unknown, of the wrong type, or out of range."""


def _is_bool(v) -> bool:
    return isinstance(v, (bool, np.bool_))


def _is_real(v) -> bool:
    return isinstance(v, numbers.Real) and not _is_bool(v)


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

    # --- hyperparameters every algorithm reads (an algorithm's own, e.g. PPO's ε or TRPO's δ, are
    #     declared in its module and kept in ``own``) ---
    lr_policy: float = _knob(3e-4, "Policy Adam learning rate.", *_positive)
    lr_value: float = _knob(1.5e-4, "Value Adam learning rate.", *_positive)
    adam_eps: float = _knob(1e-5, "Adam ε of both optimizers.", *_positive)
    gamma: float = _knob(0.99, "Discount γ (GAE, returns and the reward scaler).", *_unit_open_closed)
    gae_lambda: float = _knob(0.95, "GAE λ.", *_unit_closed)
    entropy_coef: float = _knob(
        0.0, "Entropy coefficient; the loss adds −coef·H, so negative values penalize entropy.", *_any_real)

    # --- the original's other reward filter ---
    reward_scaling_uses_rewards: bool = _knob(
        False, "With reward_scaling on, use the original's norm_rewards='rewards' filter — running moments of the "
               "raw rewards, (r − μ)/σ + μ — instead of the discounted return's std (ref §2.3; PPO-NoClip presets).")

    # --- reference behaviours reachable on purpose ---
    reference_batch_end: bool = _knob(
        False, "Bootstrap the batch's last step from V(s_{T-1}) as the original code did "
               "(ref §2.1 step 3, §8 B4) instead of from V(s_T).")

    # --- the running algorithm's own knobs (declared in its module: PPO's clip_eps, TRPO's kl_bound, ...),
    #     as sorted (name, value) pairs; a Config keeps them complete ---
    own: tuple = dataclasses.field(default=(), metadata={"doc": "The algorithm's own knobs, (name, value) pairs."})

    def __getattr__(self, item):
        # only reached when normal lookup fails: an own knob by name
        if item != "own":
            for name, value in self.own:
                if name == item:
                    return value
        raise AttributeError(f"{type(self).__name__} has no knob {item!r}")

    def as_arrays(self) -> "dict[str, jnp.ndarray]":
        """The pytree the compiled program consumes: the shared knobs and the algorithm's own, flat by name
        (bools as jnp.bool_, the rest float32)."""
        return {name: jnp.asarray(value, dtype=jnp.bool_ if _is_bool(value) else jnp.float32)
                for name, value in self.values().items()}

    def values(self) -> dict:
        """Every knob by name: the shared ones, then the algorithm's own."""
        return {**{name: getattr(self, name) for name in KNOB_NAMES}, **dict(self.own)}


@dataclasses.dataclass(frozen=True)
class Option:
    """A setting one algorithm declares as its own (PPO's ε, TRPO's δ and CG iterations, a user's new
    hyperparameter): a knob (a traced per-agent scalar: bool or number) or a static setting (part of the
    compile key: bool, int, float or str). The type of ``default`` is the setting's type."""

    default: Any
    doc: str
    allowed: str = ""                          # how an error names the allowed values
    check: Optional[Callable[[Any], bool]] = None
    allow_inf: bool = False                    # a float that may be ±inf (PPO's ε: inf disables the clip)

    def normalize(self, name: str, value, what: str = "knob"):
        """``value`` checked against the declaration and normalized to its type; ConfigError otherwise."""
        default = self.default
        if _is_bool(default):
            if not _is_bool(value):
                raise ConfigError(f"{what} {name!r} must be True or False, got {value!r} ({type(value).__name__})")
            return bool(value)
        allowed = self.allowed or f"a {type(default).__name__}"
        if isinstance(default, str):
            ok = isinstance(value, str)
        elif isinstance(default, numbers.Integral):
            ok = isinstance(value, numbers.Integral) and not _is_bool(value)
        else:
            ok = _is_real(value) and not math.isnan(value) and (self.allow_inf or not math.isinf(value))
        if not ok or (self.check is not None and not self.check(value)):
            raise ConfigError(f"{what} {name!r} must be {allowed}, got {value!r} ({type(value).__name__})")
        return type(default)(value) if not isinstance(default, numbers.Integral) else int(value)


KNOB_FIELDS = {f.name: f for f in dataclasses.fields(Knobs) if f.name != "own"}
KNOB_NAMES = tuple(KNOB_FIELDS)
BOOL_KNOBS = frozenset(n for n, f in KNOB_FIELDS.items() if isinstance(f.default, bool))

#: The nine code-level optimizations of IM §3, in the paper's order.
OPTIMIZATIONS = ("value_clipping", "reward_scaling", "orthogonal_init", "lr_annealing",
                 "reward_clipping", "obs_normalization", "obs_clipping",
                 "tanh_activations", "grad_clipping")


def stack_knobs(knobs: Iterable[Knobs]) -> "dict[str, jnp.ndarray]":
    """Stack per-agent knobs into arrays with a leading agent axis. Agents of different algorithms (the
    subjects of one diagnostic program) stack the union of their own knobs; an agent's value of a knob its
    algorithm does not declare is NaN (False for a boolean knob): no program of that algorithm reads it."""
    import jax

    rows = [k.values() for k in knobs]
    names = list(KNOB_NAMES) + sorted({n for r in rows for n in r} - set(KNOB_NAMES))
    kinds = {n: next(_is_bool(r[n]) for r in rows if n in r) for n in names}
    # built in numpy and transferred as is: no device-side conversion to compile
    return {n: jax.device_put(np.array([r.get(n, False if kinds[n] else np.nan) for r in rows],
                                       dtype=np.bool_ if kinds[n] else np.float32))
            for n in names}


def check_knob(name: str, value) -> Any:
    """Validate one shared knob value; return it normalized (bool or float). An algorithm's own knobs are
    checked against its declaration (:meth:`Option.normalize`)."""
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
    if math.isnan(value) or math.isinf(value):
        raise ConfigError(f"knob {name!r} must be {meta['allowed']}, got {value!r}")
    if not meta["check"](value):
        raise ConfigError(f"knob {name!r} must be {meta['allowed']}, got {value!r}")
    return value
