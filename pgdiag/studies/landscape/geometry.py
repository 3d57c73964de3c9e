"""The landscape's plane (CL §5.3): the algorithm's own step Δ and a random direction of a fixed norm from θ, the
parameters at every grid point, and the algorithm's objective and its KL to the agent measured at a point."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct
from jax.flatten_util import ravel_pytree

from pgdiag import algorithms, stages
from pgdiag.diagnostics.sampling import Sampling, start_carry
from pgdiag.objectives import surrogate


@struct.dataclass
class Surface:
    surrogate: jax.Array    # the objective the algorithm maximizes, on its batch
    unclipped: jax.Array    # mean(r·Â)
    kl: jax.Array           # mean over the batch's states of KL(π_θ ‖ π_θ(x,y))


def surrogate_surface(static, policy, old, batch, knobs, state=None) -> Surface:
    """The objective of the algorithm (its registry entry's ``objective``, with the algorithm's ``state``,
    e.g. PPO-KL's β) at ``policy`` on ``batch`` (collected by ``old``), advantages normalized over the
    whole batch (objectives.py: CL eqs. 13/15)."""
    terms = stages.objective_terms(policy, old, batch, knobs)
    objective = algorithms.get(static.algorithm).objective(terms, knobs, state)
    return Surface(surrogate=objective, unclipped=surrogate(terms.ratio, terms.adv), kl=jnp.mean(terms.kl))


def step_data(env, static, own: Sampling, agent, knobs, key, num_envs: int):
    """``num_envs`` × ``steps_per_env`` pairs of the frozen policy, from where the algorithm would sample next
    ([`pgdiag.stages.collect_batch`][pgdiag.stages.collect_batch]'s result: the update batch and the transitions)."""
    k_start, k_roll = jax.random.split(key)
    carry = start_carry(env, dataclasses.replace(own, envs=num_envs), agent, knobs, k_start)
    return stages.collect_batch(env, agent.policy, agent.value, carry, agent.filters, knobs, k_roll, own.steps,
                                frozen=True)


def step_batch(env, static, own: Sampling, agent, knobs, key, num_envs: int):
    """The update batch of [`step_data`][pgdiag.studies.landscape.geometry.step_data]."""
    return step_data(env, static, own, agent, knobs, key, num_envs).batch


def step_direction(static, agent, batch, lr, knobs, key):
    """Δ = the algorithm's step from ``agent`` on ``batch`` (flat), computed with the static of a run whose
    batch has this size (minibatch and Fisher-subset sizes scale with it)."""
    sized = dataclasses.replace(static, num_envs=batch.obs.shape[0] // static.steps_per_env)
    new = stages.policy_step(sized, agent.policy, agent.policy_opt, batch, lr, knobs, key).params
    return ravel_pytree(new)[0] - ravel_pytree(agent.policy)[0]


def random_direction(key, size: int, norm: float):
    d = jax.random.normal(key, (size,))
    return d * (norm / jnp.linalg.norm(d))


def plane(theta, delta, direction, coords):
    """θ(x, y) for every grid point, [G·G, P] with x major."""
    c = jnp.asarray(coords, jnp.float32)
    grid = theta + c[:, None, None] * delta + c[None, :, None] * direction
    return grid.reshape(-1, theta.shape[0])
