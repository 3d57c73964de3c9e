"""Traced knobs: the per-agent scalars of a run (IM §3's code-level optimizations, the PPO ratio clip, both
learning rates, γ, λ, the entropy coefficient), their validation, and their stacking over agents. A sweep over
any knob is one compiled program, vmapped over agents."""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, Callable, Iterable

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

    # --- TRPO (ref §2.7) and the natural policy gradient ---
    kl_bound: float = _knob(0.01, "TRPO/NPG mean-KL step size δ (the original's max_kl).", *_positive)
    damping: float = _knob(0.1, "TRPO/NPG Fisher damping λ: CG solves (F + λI)x = g.",
                           lambda v: v >= 0, "a number >= 0")
    accept_ratio: float = _knob(0.1, "TRPO line search: accept when actual/expected improvement exceeds this.",
                                lambda v: v >= 0, "a number >= 0")

    # --- PPO with an adaptive KL penalty (PPO paper §4) ---
    kl_target: float = _knob(0.01, "PPO-KL: the target mean KL d_targ that adapts the penalty coefficient β.",
                             *_positive)
    kl_beta_init: float = _knob(1.0, "PPO-KL: the initial KL penalty coefficient β.", lambda v: v >= 0,
                                "a number >= 0")

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
