"""Sampling a frozen policy for the diagnostics: the state distribution, the advantages, the pair order.

A diagnostic estimate is built from *streams*. One stream is ``envs``
environments stepped together; every ``steps`` steps they form a *chunk* of
``envs × steps`` state–action pairs, sampled with the checkpoint's policy and
its observation normalizer and reward scaler frozen (``collect(frozen=True)``).

Which states a chunk visits ([`Sampling`][pgdiag.diagnostics.sampling.Sampling]):

* ``start="reset"`` — every chunk starts its environments from reset, so each
  environment contributes one ``steps``-step segment from reset, running on
  through episode ends: the batch of an algorithm that resets its
  environments every iteration (the original's, ref §7) when ``steps`` is the
  algorithm's ``steps_per_env``;
* ``start="independent"`` — the default for an algorithm that never resets
  (the CPU scale): every stream starts from its own resets and runs a
  burn-in of min(iteration × steps_per_env, ``burn_in``) steps with the
  frozen policy — as far as the run itself had run its environments, up to
  a few episode lengths, after which the episode phase has mixed — then
  continues from chunk to chunk. Streams, step batches and fit data thus
  never share start states, while sampling the run's own state distribution;
* ``start="checkpoint"`` — the streams start from the checkpoint's own
  environment states (environment e from the checkpoint's environment
  e mod num_envs) and continue from chunk to chunk: the states an algorithm
  that never resets would visit next, shared by every stream (their
  estimates agree more than independent ones would at small N);
* ``start="stationary"`` — start from reset, discard ``burn_in`` steps, then
  continue from chunk to chunk: the long-run state distribution of the
  environments. On the linear-quadratic task it is exactly the (continuation-)
  discounted occupancy measure of the policy-gradient theorem once
  p^burn_in ≈ 0, so unbiased advantages give an unbiased ∇J there.

Pairs are ordered environment-major inside a chunk (environment 0's segment,
then environment 1's, …) and chunk by chunk, so the first N pairs of a stream
are whole segments, the last one cut short: with the algorithm's own segment
length the first ``num_envs × steps_per_env`` pairs are one batch of the
algorithm's exact shape. (A size below that batch is not its first pairs but a
random draw from the whole batch where a study asks so: ``streaming.Grid.pool``.)

Statistics: a checkpoint's observation normalizer and reward scaler are used
as saved, except when one of them holds fewer than two samples (the initial
state, iteration 0): training never acts with those — its first batch pushes
every observation before normalizing it — and frozen they would divide by
σ = 0. Then [`frozen_filters`][pgdiag.diagnostics.sampling.frozen_filters] first collects one batch of the algorithm's
own shape with the frozen policy and the statistics updating, as training's
next batch would, and freezes the statistics after it.

Advantages (``advantages``):

* ``"gae"`` — the agent's value network and GAE with its own γ, λ and frozen
  reward scaler, the segment end bootstrapped as the algorithm does (ref §2.1
  step 3): the estimator the algorithm uses;
* ``"returns"`` — discounted returns of the same rewards, no baseline (ref §4.2
  item 5, "Zero" baseline), cut at the segment end;
* ``"gae_exact_value"`` — the linear-quadratic task only: the ``"gae"`` estimator
  with the exact V^π of the learner's (scaled) rewards and γ in place of the
  value network ([`pgdiag.stages.exact_value`][pgdiag.stages.exact_value]): the perfect baseline;
* ``"exact"`` — the linear-quadratic task only: GAE (γ = 1, the agent's λ) on
  the raw rewards with the exact V^π of the reported return
  ([`pgdiag.envs.lqr.value_function`][pgdiag.envs.lqr.value_function]), an unbiased estimate of A^π(s, a)
  for any λ because every TD error has conditional mean zero.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from pgdiag import stages
from pgdiag.envs.base import Env
from pgdiag.normalize import NORM_EPS
from pgdiag.rollout import EnvCarry, Filters, build_batch, collect, discounted_returns, gae_advantages, reset_envs

#: Where a chunk's environments start (``start=``; the module's docstring describes each).
STARTS = ("reset", "checkpoint", "stationary", "independent")
#: The advantage estimators (``advantages=``; the module's docstring describes each).
ADVANTAGES = ("gae", "returns", "exact", "gae_exact_value")


@dataclasses.dataclass(frozen=True)
class Sampling:
    """How a stream samples (static: fixes the program's shapes)."""

    envs: int          # environments stepped together per stream
    steps: int         # steps per environment per chunk (the segment length)
    start: str         # one of STARTS
    burn_in: int = 0   # steps discarded at a stream's start (start="stationary"; "independent": at most)
    advantages: str = "gae"
    per_iteration: int = 0  # start="independent": burn-in steps per training iteration the checkpoint completed

    @property
    def chunk(self) -> int:
        """State–action pairs per chunk."""
        return self.envs * self.steps


@dataclasses.dataclass(frozen=True)
class Chunk:
    obs: jax.Array       # [C, obs] filtered observations, environment-major
    action: jax.Array    # [C, act]
    advantage: jax.Array  # [C] Â, not normalized ([H, C] with several heads)
    log_prob: jax.Array  # [C] log π(a|s) under the sampling policy


jax.tree_util.register_dataclass(Chunk, data_fields=["obs", "action", "advantage", "log_prob"], meta_fields=[])


WARMUP_KEY = 0x7FFFFFFF  # fold_in data of the statistics warm-up (stream keys use 0, 1, 2, …)


def independent_burn_in(task: str) -> int:
    """The longest burn-in of ``start="independent"``: two episode lengths (every environment has been
    through at least one episode end), at most 2,048 steps."""
    from pgdiag.envs import episode_limit

    return min(2 * episode_limit(task), 2048)


def algorithm_sampling(static, advantages: str = "gae") -> Sampling:
    """How the algorithm itself samples its next batch: from reset when it resets every iteration, else from
    independent resets burnt in to the run's state distribution (``start="independent"``)."""
    if static.reset_every_iteration:
        return Sampling(envs=static.num_envs, steps=static.steps_per_env, start="reset", advantages=advantages)
    return Sampling(envs=static.num_envs, steps=static.steps_per_env, start="independent",
                    burn_in=independent_burn_in(static.task), per_iteration=static.steps_per_env,
                    advantages=advantages)


def needs_warmup(filters: Filters) -> jax.Array:
    """Whether any statistic holds fewer than two samples (see the module docstring)."""
    return (filters.obs.n < 2) | (filters.ret.n < 2) | (filters.rew.n < 2)


def frozen_filters(env: Env, own: Sampling, agent, knobs, key) -> Filters:
    """The statistics a frozen policy acts with: the checkpoint's, or, when
    [`needs_warmup`][pgdiag.diagnostics.sampling.needs_warmup], those after one batch of the algorithm's shape
    ``own`` collected with the statistics updating."""
    k_start, k_roll = jax.random.split(jax.random.fold_in(key, WARMUP_KEY))
    if own.start == "checkpoint":
        carry, filters = start_carry(env, own, agent, knobs, k_start), agent.filters
    else:
        carry, filters = reset_envs(env, k_start, own.envs, agent.filters, knobs)
    warmed = stages.collect_batch(env, agent.policy, agent.value, carry, filters, knobs, k_roll, own.steps).filters
    return jax.tree.map(lambda w, f: jnp.where(needs_warmup(agent.filters), w, f), warmed, agent.filters)


def start_carry(env: Env, sampling: Sampling, agent, knobs, key) -> EnvCarry:
    """The environments a stream starts from (``agent``: an [`AgentState`][pgdiag.trainer.AgentState])."""
    if sampling.start == "checkpoint":
        n = agent.envs.obs.shape[0]
        take = jnp.arange(sampling.envs) % n
        return jax.tree.map(lambda x: x[take], agent.envs)
    k_reset, k_burn = jax.random.split(key)
    carry, _ = reset_envs(env, k_reset, sampling.envs, agent.filters, knobs, frozen=True)
    if sampling.start == "stationary" and sampling.burn_in:
        carry = stages.collect_batch(env, agent.policy, agent.value, carry, agent.filters, knobs, k_burn,
                                     sampling.burn_in, frozen=True).carry
    if sampling.start == "independent" and sampling.burn_in:
        # as many steps as the run had taken (iteration × steps_per_env), at most burn_in: every step is
        # computed, the ones past the subject's own length are not kept (the length is traced)
        length = jnp.minimum(agent.iteration * sampling.per_iteration, sampling.burn_in)

        def step(c, t):
            moved, _, _ = collect(env, agent.policy, c, agent.filters, jax.random.fold_in(k_burn, t), knobs, 1,
                                  frozen=True)
            return jax.tree.map(lambda a, b: jnp.where(t < length, a, b), moved, c), None

        carry, _ = jax.lax.scan(step, carry, jnp.arange(sampling.burn_in))
    return carry


def sample_chunk(env: Env, sampling: Sampling, agent, knobs, carry: EnvCarry, key, exact_value=None, heads=None):
    """One chunk from ``carry``: returns the carry to continue from and the
    [`Chunk`][pgdiag.diagnostics.sampling.Chunk]. ``exact_value`` (``advantages="exact"`` or
    ``"gae_exact_value"``): raw state [.., obs] -> V^π.

    ``heads``: several advantage estimators on the very same pairs, a tuple of (advantages kind, value
    network parameters or None); the chunk's ``advantage`` is then [H, C]. The pairs do not depend on the
    heads (the policy is frozen), so the baselines of fig-baselines differ on identical samples."""
    k_reset, k_roll = jax.random.split(key)
    if sampling.start == "reset":
        carry, _ = reset_envs(env, k_reset, sampling.envs, agent.filters, knobs, frozen=True)
    kinds = (sampling.advantages,) if heads is None else tuple(kind for kind, _ in heads)
    carry, _, tr = collect(env, agent.policy, carry, agent.filters, k_roll, knobs, sampling.steps, frozen=True,
                           keep_raw_obs="gae_exact_value" in kinds)
    env_major = lambda x: jnp.swapaxes(x, 0, 1).reshape((-1,) + x.shape[2:])  # noqa: E731 [T, E] -> [E·T]
    if heads is None:
        adv = env_major(advantages(sampling.advantages, agent.value, tr, carry, agent.filters, knobs, exact_value))
    else:
        adv = jnp.stack([env_major(advantages(kind, value, tr, carry, agent.filters, knobs, exact_value))
                         for kind, value in heads])
    return carry, Chunk(obs=env_major(tr.obs), action=env_major(tr.action), advantage=adv,
                        log_prob=env_major(tr.log_prob))


def advantages(kind: str, value_params, tr, after: EnvCarry, filters: Filters, knobs, exact_value=None):
    """Â [T, E] of one of ``ADVANTAGES`` on the transitions ``tr``, ``after`` the environments past their
    last step (its observation bootstraps the segment end)."""
    if kind == "gae":
        return build_batch(value_params, tr, after.obs, knobs).advantages.reshape(tr.reward.shape)
    if kind == "returns":
        return discounted_returns(tr.reward, tr.done, knobs["gamma"])
    if kind == "gae_exact_value":
        values = exact_value(tr.raw_obs)
        last = jnp.where(knobs["reference_batch_end"], values[-1], exact_value(after.state.obs))
        return gae_advantages(tr.reward, values, last, tr.done, knobs["gamma"], knobs["gae_lambda"])
    raw = lambda x: unfilter(filters, x, knobs)  # noqa: E731
    values, last = exact_value(raw(tr.obs)), exact_value(raw(after.obs))
    return gae_advantages(tr.raw_reward, values, last, tr.done, 1.0, knobs["gae_lambda"])


def unfilter(filters: Filters, obs, knobs):
    """The raw observation behind a filtered one (exact only without observation clipping)."""
    stat = filters.obs
    return jnp.where(knobs["obs_normalization"], obs * (stat.std + NORM_EPS) + stat.mean, obs)
