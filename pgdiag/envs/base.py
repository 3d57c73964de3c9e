"""The functional task interface shared by every environment.

An environment is a pair of pure functions over pytrees::

    state = env.reset(key)            # EnvState, one environment
    state = env.step(state, action)   # no automatic reset

Both act on a single environment and batch with ``jax.vmap``. ``step``
reports ``terminated`` (the task's own failure condition) and ``truncated``
(the time limit) separately; the training loop decides how to treat each and
performs the reset itself, because the original code pushes the terminal
observation into the observation statistics before resetting (ref §2.2).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class EnvState:
    """One environment's state after a reset or a step."""

    physics: Any          # backend-specific pytree (positions, velocities, ...)
    obs: jax.Array        # raw observation, float32 [obs_size]
    reward: jax.Array     # raw reward of the last step, float32 []
    terminated: jax.Array  # bool []: the task's termination condition held
    truncated: jax.Array   # bool []: the time limit was reached (and not terminated)
    t: jax.Array          # int32 []: steps taken in the current episode


@struct.dataclass
class Env:
    """A task: sizes, time limit and the two pure functions.

    ``reset(key) -> EnvState`` and ``step(state, action) -> EnvState`` act on
    one environment; actions are unbounded float vectors (the policy's raw
    Gaussian sample, as in the original code) and each task clips or rescales
    them itself.

    A task with ``skips_idle`` (native MuJoCo) takes an action of NaN as "idle this step": it does not step
    that environment, which costs no physics. [`pgdiag.rollout.collect`][pgdiag.rollout.collect] sends it for
    the environments that have run their quota of episodes and keeps their state whatever ``step`` returns.
    """

    name: str = struct.field(pytree_node=False)
    obs_size: int = struct.field(pytree_node=False)
    action_size: int = struct.field(pytree_node=False)
    max_episode_steps: int = struct.field(pytree_node=False)
    reset: Callable[[jax.Array], EnvState] = struct.field(pytree_node=False)
    step: Callable[[EnvState, jax.Array], EnvState] = struct.field(pytree_node=False)
    description: str = struct.field(pytree_node=False, default="")
    #: (low, high) per action dimension: the actions the task acts on as given (it clips the rest); None: unstated
    action_bounds: tuple | None = struct.field(pytree_node=False, default=None)
    #: a NaN action leaves the environment unstepped, at no cost (see above); False: it would be computed
    skips_idle: bool = struct.field(pytree_node=False, default=False)


@dataclasses.dataclass(frozen=True)
class ExactAnswers:
    """What a task can say in closed form about a policy network behind a frozen observation normalizer (the
    linear-quadratic task: [`pgdiag.envs.lqr`][pgdiag.envs.lqr]), declared when the task is registered
    ([`pgdiag.envs.register_task`][pgdiag.envs.register_task]). Wherever a run's task has them and they hold for
    its policy, training reports value errors against the exact V^π, the gradient study measures cosines to the
    exact ∇J (and can use exact advantages), the baseline study adds V^π as a baseline and the landscapes the exact
    J.

    * ``applies(policy_hidden) -> bool``: whether they hold for a policy of these hidden sizes;
    * ``value(policy, obs_stat, knobs, gamma, scale, offset)`` -> (raw state -> V^π(s)) of the reward
      ``scale·r + offset`` (the learner's scaled reward; ``scale=1, offset=0``: the task's own), discount γ;
    * ``policy_return(policy, obs_stat, knobs) -> J``: the expected undiscounted return from the start distribution,
      differentiable in ``policy`` (∇J is its gradient, [`gradient`][pgdiag.envs.base.ExactAnswers.gradient])."""

    applies: Callable[[tuple], bool]
    value: Callable
    policy_return: Callable

    def gradient(self, policy, obs_stat, knobs):
        """∇_θ J, a pytree like ``policy``."""
        return jax.grad(lambda p: self.policy_return(p, obs_stat, knobs))(policy)


def time_limit(t_next: jax.Array, terminated: jax.Array, max_steps: int) -> jax.Array:
    """Truncation flag: the episode reached its time limit without terminating."""
    return jnp.logical_and(t_next >= max_steps, jnp.logical_not(terminated))
