"""``make_train(static) -> Trainer``: one agent's training as pure functions.

``Trainer.train(key, knobs)`` runs the whole training and returns the final
[`AgentState`][pgdiag.trainer.AgentState] and per-iteration metrics; ``Trainer.init`` and
``Trainer.run(state, knobs, n)`` split it into chunks so a host loop can
report progress and save checkpoints between compiled pieces. All of them act
on ONE agent; [`pgdiag.run`][pgdiag.run] vmaps them over agents. Every knob is
traced, so one compiled program serves any knob values.

One iteration (ref §2.1), each stage a function of [`pgdiag.stages`][pgdiag.stages]:
[reset the environments] → collect T steps and build the batch → value step →
policy step → trust-region and training metrics; the first two are ``collect``, the
rest ``learn``, which [`pgdiag.run.split`][pgdiag.run.split] places on two devices.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from pgdiag import envs, networks, stages
from pgdiag.config import Static
from pgdiag.metrics import diverged_now, iteration_metrics, own_metrics
from pgdiag.optim import adam, annealed_learning_rate
from pgdiag.rollout import EnvCarry, Filters, reset_envs


@struct.dataclass
class AgentState:
    """Everything one agent carries from iteration to iteration."""

    policy: dict
    value: dict
    policy_opt: object     # the algorithm's state (PPO: Adam's moments; TRPO: None; PPO-KL: Adam's and β)
    value_opt: object
    filters: Filters
    envs: EnvCarry
    iteration: jax.Array   # int32 []: iterations completed
    key: jax.Array
    diverged: jax.Array    # bool []: the agent became unusable (sticky; see pgdiag.metrics.diverged_now)


class Trainer(NamedTuple):
    static: Static
    env: envs.Env
    init: Callable       # (key, knobs) -> AgentState
    iteration: Callable  # (state, knobs[, heldout_now]) -> (state, metrics)
    collect: Callable    # (state, knobs, heldout_now) -> (data, held, keys): an iteration's first half
    learn: Callable      # (state, data, held, keys, knobs, heldout_now) -> (learned fields, metrics): its second
    run: Callable        # (state, knobs, num_iterations: static) -> (state, metrics [n])
    run_agents: Callable  # (states, knobs, num_iterations, batching[, count]) -> (states, metrics [n, agents])
    train: Callable      # (key, knobs) -> (state, metrics [num_iterations])


def make_train(static: Static) -> Trainer:
    """The pure training functions of one static configuration; each takes the traced knobs as arrays, e.g.
    ``make_train(config.static).train(key, config.knobs.as_arrays())``.

    Args:
        static: the static settings (``config.static``): what a compiled program's shapes depend on.

    Returns:
        ``init``, ``iteration``, ``collect``, ``learn``, ``run``, ``run_agents``, ``train``, ``static``, ``env``.
    """
    env = envs.make(static.task, static.physics, static.physics_threads, static.solver, static.model)
    n_envs, n_steps = static.num_envs, static.steps_per_env
    exact = envs.exact_answers(static.task, static.policy_hidden, static.network)  # closed forms, where they hold

    def init(key, knobs) -> AgentState:
        return _init_agent(static, env, key, knobs)

    def collect(state: AgentState, knobs, heldout_now):
        """An iteration's collection (ref §2.1 steps 1–3): the batch, the held-out batch (``None`` when not
        measured) and the keys the update and the next iteration take. Only the environments, filters, key
        and the pre-update networks are read: with ``placement='split'`` this half runs on the host's CPU."""
        key, k_reset, k_roll, k_val, k_pol, k_held = jax.random.split(state.key, 6)
        carry, filters = state.envs, state.filters
        if static.reset_every_iteration:
            carry, filters = reset_envs(env, k_reset, n_envs, filters, knobs)
        held = _maybe_heldout(static, heldout_now, lambda: stages.heldout_batch(
            env, state.policy, state.value, state.filters, knobs, k_held, n_envs, n_steps, state.diverged, exact))
        data = stages.collect_batch(env, state.policy, state.value, carry, filters, knobs, k_roll, n_steps,
                                    freeze_actions=state.diverged, keep_raw_obs=exact is not None)
        return data, held, (key, k_val, k_pol)

    def learn(state: AgentState, data: stages.Collected, held, keys, knobs, heldout_now):
        """An iteration's update and metrics from `collect`'s output: the learner's new fields
        (networks, optimizer states, counter, divergence flag) and the metrics. Reads no environment state
        (``data.carry`` may be ``None``)."""
        lr_pi = annealed_learning_rate(knobs["lr_policy"], state.iteration, static.num_iterations, knobs)
        lr_v = annealed_learning_rate(knobs["lr_value"], state.iteration, static.num_iterations, knobs)
        value, policy = stages.update(static, state.policy, state.policy_opt, state.value, state.value_opt,
                                      data.batch, lr_pi, lr_v, knobs, keys[1], keys[2])
        learned, metrics = _measure(state, data, held, policy, value, exact, knobs, heldout_now, lr_pi, lr_v)
        metrics.update(own_metrics(static.algorithm, policy.info))
        return learned, metrics

    def iteration(state: AgentState, knobs, heldout_now=None):
        """One training iteration: `collect`, then `learn`. ``heldout_now`` (bool scalar; default from the
        iteration counter and ``static.heldout_every``) adds the held-out measurement; in a sweep all agents
        share it, so it stays a real branch under vmap."""
        heldout_now = heldout_due(static, state.iteration) if heldout_now is None else heldout_now
        data, held, keys = collect(state, knobs, heldout_now)
        learned, metrics = learn(state, data, held, keys, knobs, heldout_now)
        return state.replace(filters=data.filters, envs=data.carry, key=keys[0], **learned), metrics

    def run(state, knobs, num_iterations: int):
        return jax.lax.scan(lambda s, _: iteration(s, knobs), state, None, length=num_iterations)

    def train(key, knobs):
        return run(init(key, knobs), knobs, static.num_iterations)

    return Trainer(static=static, env=env, init=init, iteration=iteration, collect=collect, learn=learn, run=run,
                   run_agents=_agents_runner(static, iteration), train=train)


def _init_agent(static: Static, env: envs.Env, key, knobs) -> AgentState:
    """A new agent: fresh networks and optimizer states, its environments reset (their first observations
    counted in the filters unless every iteration resets them)."""
    n_envs = static.num_envs
    k_pi, k_v, k_env, k_next = jax.random.split(key, 4)
    policy = networks.init_policy(k_pi, env.obs_size, env.action_size, static.policy_hidden, knobs,
                                  static.network)
    value = networks.tie(policy, networks.init_value(k_v, env.obs_size, static.value_hidden, knobs, static.network))
    filters = Filters.zeros(env.obs_size)
    carry, pushed = reset_envs(env, k_env, n_envs, filters, knobs)
    if not static.reset_every_iteration:
        filters = pushed  # these observations are seen: count them once, now
    policy_opt = stages.policy_init(static, policy, knobs)
    return AgentState(policy=policy, value=value, policy_opt=policy_opt,
                      value_opt=adam(knobs["adam_eps"]).init(value), filters=filters, envs=carry,
                      iteration=jnp.int32(0), key=k_next, diverged=jnp.bool_(False))


def _measure(state: AgentState, data: stages.Collected, held, policy: stages.PolicyStep, value: stages.ValueStep,
             exact, knobs, heldout_now, lr_pi, lr_v):
    """After an update: the learner's new fields and the iteration's metrics (trust region and value errors on
    the training batch and, when measured, the held-out one; the divergence flag)."""
    b = data.batch
    train_tr = stages.trust_region(state.policy, policy.params, b.obs, b.action, b.old_log_prob, knobs)
    train_v = stages.value_errors(value.params, stages.value_targets(
        data, knobs, stages.exact_value(exact, state.policy, data.filters, knobs) if exact else None), knobs)
    held_tr = held_v = None
    if held is not None:
        held_tr = stages.trust_region(state.policy, policy.params, held.obs, held.action, held.log_prob, knobs)
        held_v = stages.value_errors(value.params, held.targets, knobs)
    diverged = state.diverged | diverged_now(policy, value, train_tr)
    metrics = iteration_metrics(stages.episode_stats(data.transitions), train_tr, held_tr, heldout_now, train_v, held_v,
                       policy, value, lr_pi, lr_v, diverged, frozen=state.diverged)
    learned = dict(policy=policy.params, value=value.params, policy_opt=policy.opt_state,
                   value_opt=value.opt_state, iteration=state.iteration + 1, diverged=diverged)
    return learned, metrics


def _maybe_heldout(static: Static, now, fn):
    """The held-out batch ``fn()`` when ``now`` (a real branch), zeros of its shapes otherwise; None when the
    configuration never measures it."""
    if not static.heldout_every:
        return None
    shapes = jax.eval_shape(fn)
    return jax.lax.cond(now, fn, lambda: jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes))


def _agents_runner(static: Static, iteration: Callable) -> Callable:
    """``run_agents`` of [`Trainer`][pgdiag.trainer.Trainer] for one configuration's ``iteration``."""

    def run_agents(states, knobs, num_iterations: int, batching: str = "vmap", count=None):
        """``num_iterations`` iterations of a stack of agents that advance together.
        Metrics come out as [iterations, agents]. ``count`` (a traced int, optional): take only the first
        ``count`` iterations; the others leave the states as they are and give zero metrics. One compiled
        program then serves every chunk length up to ``num_iterations`` (a run cut at its checkpoints
        compiles once, not once per distinct length)."""

        def step(s):
            due = heldout_due(static, s.iteration[0])  # one counter for all agents: a real branch
            if batching == "vmap":
                return jax.vmap(iteration, in_axes=(0, 0, None))(s, knobs, due)
            return jax.lax.map(lambda a: iteration(a[0], a[1], due), (s, knobs))

        if count is None:
            return jax.lax.scan(lambda s, _: step(s), states, None, length=num_iterations)
        shapes = jax.eval_shape(step, states)[1]

        def skip(s):
            return s, jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)

        # the predicate is one scalar for all agents: a real branch, skipped iterations cost nothing
        return jax.lax.scan(lambda s, i: jax.lax.cond(i < count, step, skip, s), states,
                            jnp.arange(num_iterations))

    return run_agents


def heldout_due(static: Static, iteration) -> jax.Array:
    """Whether iteration ``iteration`` measures the held-out batch (every ``heldout_every``)."""
    if not static.heldout_every:
        return jnp.bool_(False)
    return iteration % static.heldout_every == 0


def seed_key(seed: int) -> jax.Array:
    """The PRNG key of one agent: a function of its seed only, so an agent gets
    the same randomness alone or inside any sweep."""
    return jax.random.PRNGKey(seed)
