"""Traced knobs: the per-agent scalars of a run (IM §3's code-level optimizations, both learning rates, γ, λ,
the entropy coefficient, and the running algorithm's own: PPO's ratio clip, TRPO's δ, ...), their validation,
and their stacking over agents. A sweep over any knob is one compiled program, vmapped over agents. Each knob is
declared once, as a `Setting` (`pgdiag.config.setting`); `Option`, the same type, is how an algorithm declares
a setting of its own."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable

import jax.numpy as jnp
import numpy as np

from pgdiag.config.setting import ConfigError, Range, Setting, _is_bool, declared, setting

#: How an algorithm declares a knob or static setting of its own: a `Setting`.
Option = Setting

_POSITIVE = Range(0, low_open=True)
_UNIT_OPEN_CLOSED = Range(0, 1, low_open=True)
_UNIT_CLOSED = Range(0, 1)
_ANY_REAL = Range()


@dataclasses.dataclass(frozen=True)
class Knobs:
    """Traced settings: one scalar per agent, sweepable without recompiling.

    The first nine boolean fields are the code-level optimizations of IM §3
    (``implementation-matters-ppo-trpo.txt``); semantics follow the original
    code (reference/original-code.md §2, §6). Values here are plain Python
    scalars; [`as_arrays`][pgdiag.config.knobs.Knobs.as_arrays] turns them into the JAX pytree the compiled
    program consumes.
    """

    # --- the nine code-level optimizations (IM §3) ---
    value_clipping: bool = setting(
        True, "IM opt. 1: clipped value loss, max of the two squared errors (ref §2.4).")
    reward_scaling: bool = setting(
        True, "IM opt. 2: divide rewards by the std of a running discounted return (ref §2.3).")
    orthogonal_init: bool = setting(
        True, "IM opt. 3: orthogonal init with layer scaling (gains √2 / 0.01 / 1); off = xavier-uniform (ref §2.6).")
    lr_annealing: bool = setting(
        True, "IM opt. 4: both Adam learning rates decay linearly to 0 over the run (ref §2.5).")
    reward_clipping: bool = setting(
        True, "IM opt. 5: clip the scaled reward to ±reward_clip; acts only with reward_scaling on (ref §2.3).")
    obs_normalization: bool = setting(
        True, "IM opt. 6: running mean/std observation normalization (ref §2.2).")
    obs_clipping: bool = setting(
        True, "IM opt. 7: clip the normalized observation to ±obs_clip; acts only with obs_normalization on "
              "(ref §2.2).")
    tanh_activations: bool = setting(
        True, "IM opt. 8: tanh hidden activations; off = ReLU.")
    grad_clipping: bool = setting(
        False, "IM opt. 9: clip the global L2 norm of the policy gradient to max_grad_norm (ref §2.5).")

    # --- ranges of the clipping optimizations ---
    value_clip_eps: float = setting(0.2, "Value clipping range ε_v.", _POSITIVE)
    reward_clip: float = setting(10.0, "Reward clipping range.", _POSITIVE)
    obs_clip: float = setting(10.0, "Observation clipping range.", _POSITIVE)
    max_grad_norm: float = setting(0.5, "Global gradient-norm bound.", _POSITIVE)

    # --- hyperparameters every algorithm reads (an algorithm's own, e.g. PPO's ε or TRPO's δ, are
    #     declared in its module and kept in ``own``) ---
    lr_policy: float = setting(3e-4, "Policy Adam learning rate.", _POSITIVE)
    lr_value: float = setting(1.5e-4, "Value Adam learning rate.", _POSITIVE)
    adam_eps: float = setting(1e-5, "Adam ε of both optimizers.", _POSITIVE)
    gamma: float = setting(0.99, "Discount γ (GAE, returns and the reward scaler).", _UNIT_OPEN_CLOSED)
    gae_lambda: float = setting(0.95, "GAE λ.", _UNIT_CLOSED)
    value_baseline: bool = setting(
        True, "The value network as the policy gradient's baseline (GAE). Off: no baseline (CL §5.2's agents "
              "\"trained without a baseline function\"): the policy's advantages are the discounted returns of the "
              "(scaled) rewards, cut at the batch end — the gradient studies' zero baseline; the value network is "
              "still fit to its GAE target.")
    entropy_coef: float = setting(
        0.0, "Entropy coefficient; the loss adds −coef·H, so negative values penalize entropy.", _ANY_REAL)

    # --- the original's other reward filter ---
    reward_scaling_uses_rewards: bool = setting(
        False, "With reward_scaling on, use the original's norm_rewards='rewards' filter — running moments of the "
               "raw rewards, (r − μ)/σ + μ — instead of the discounted return's std (ref §2.3; PPO-NoClip presets).")

    # --- reference behaviours reachable on purpose ---
    reference_batch_end: bool = setting(
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


KNOB_FIELDS = {f.name: f for f in dataclasses.fields(Knobs) if f.name != "own"}
#: name -> the `Setting` declaring each shared knob
KNOB_SETTINGS = declared(Knobs)
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
    """Validate one shared knob value against its declaration; return it normalized (bool or float). An
    algorithm's own knobs are checked against theirs (`Setting.normalize`)."""
    if name not in KNOB_SETTINGS:
        raise ConfigError(f"unknown knob {name!r}; knobs are: {', '.join(KNOB_NAMES)}")
    return KNOB_SETTINGS[name].normalize(name, value, "knob")
