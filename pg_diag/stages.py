"""The stages of a training iteration as pure functions (ref §2.1), shared by training and diagnostics.

    collect_batch  T steps with a policy (statistics updating, or frozen) → transitions + update batch
    value_step     the value network's epochs of minibatch Adam
    policy_init    the algorithm's optimizer state for a fresh policy
    policy_step    the algorithm's step (pg_diag.algorithms), computed and returned, never applied
    update         training's value step and policy step (fused where the algorithm offers it)
    objective_terms  what every algorithm's objective is written in (ratio, Â, log σ, KL) at θ on a batch
    trust_region   mean/max KL and max ratio between two policies on a batch
    heldout_batch  a fresh batch from the pre-update policy, leaving the training run untouched
    value_targets  the value diagnostics' targets on a batch: GAE target, returns, exact V^π (LQR)
    value_errors   the mean relative error of a value network against them (CL §5.2)
    episode_stats  returns and lengths of the episodes that ended in a batch

Each takes named inputs and returns a named record; none of them reads or
writes an agent, so a diagnostic can call the very code that trains (the
step an algorithm *would* take from a checkpoint, a batch from a frozen
policy) and measure exactly what the algorithm uses.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from pg_diag import algorithms, networks
from pg_diag.algorithms import PolicyStep, Terms, ValueStep
from pg_diag.algorithms.epochs import value_update
from pg_diag.config import Static
from pg_diag.envs import lqr
from pg_diag.envs.base import Env
from pg_diag.normalize import reward_affine
from pg_diag.objectives import kl, kl_stats, mean_relative_error, normalize_advantages, probability_ratio
from pg_diag.rollout import (EnvCarry, Filters, Transitions, UpdateBatch, build_batch, collect, discounted_returns,
                             episode_completes, reset_envs)


@struct.dataclass
class Collected:
    carry: EnvCarry           # the environments after the last step
    filters: Filters          # the statistics after the batch (unchanged when frozen)
    transitions: Transitions  # [T, N, ...]
    batch: UpdateBatch        # [T·N, ...]


def collect_batch(env: Env, policy, value, carry: EnvCarry, filters: Filters, knobs, key, num_steps: int, *,
                  frozen: bool = False, freeze_actions=False, keep_raw_obs: bool = False) -> Collected:
    """Collect ``num_steps`` steps from ``carry`` with ``policy`` and build the
    update batch with ``value`` (ref §2.1 steps 1–3). With ``frozen`` the
    observation normalizer and reward scaler keep their statistics."""
    carry, filters, tr = collect(env, policy, carry, filters, key, knobs, num_steps,
                                 freeze_actions=freeze_actions, frozen=frozen, keep_raw_obs=keep_raw_obs)
    return Collected(carry=carry, filters=filters, transitions=tr, batch=build_batch(value, tr, carry.obs, knobs))


def value_step(static: Static, params, opt_state, batch: UpdateBatch, lr, knobs, key) -> ValueStep:
    """The value network's update (ref §2.4), the same for every algorithm."""
    params, opt_state, losses = value_update(params, opt_state, batch, lr, knobs, key, static.value_epochs,
                                             static.num_minibatches)
    return ValueStep(params=params, opt_state=opt_state, losses=losses)


def policy_init(static: Static, policy, knobs):
    """The algorithm's optimizer state for a fresh ``policy`` (:mod:`pg_diag.algorithms`)."""
    return algorithms.get(static.algorithm).init_state(policy, knobs)


def policy_step(static: Static, params, opt_state, batch: UpdateBatch, lr, knobs, key) -> PolicyStep:
    """The algorithm's policy step from ``params`` on ``batch`` (PPO ref §2.5, TRPO ref §2.7, the others
    in their modules of :mod:`pg_diag.algorithms`), returned without being applied to any agent."""
    return algorithms.get(static.algorithm).step(static, params, opt_state, batch, lr, knobs, key)


def update(static: Static, policy, policy_opt, value, value_opt, batch: UpdateBatch, lr_policy, lr_value, knobs,
           key_value, key_policy) -> tuple[ValueStep, PolicyStep]:
    """Training's update: :func:`value_step` and :func:`policy_step`, each with its own key.

    An algorithm may fuse the two (PPO with as many value as policy epochs runs
    both in one loop, :func:`pg_diag.algorithms.ppo.ppo_update`, a little faster
    on a CPU), with the same numbers as the two calls one after the other."""
    fused = algorithms.get(static.algorithm).update
    both = None if fused is None else fused(static, policy, policy_opt, value, value_opt, batch, lr_policy,
                                            lr_value, knobs, key_value, key_policy)
    if both is not None:   # an algorithm may decline for these settings (PPO: unequal epoch counts)
        return both
    return (value_step(static, value, value_opt, batch, lr_value, knobs, key_value),
            policy_step(static, policy, policy_opt, batch, lr_policy, knobs, key_policy))


def objective_terms(policy, old, batch: UpdateBatch, knobs) -> Terms:
    """The :class:`pg_diag.algorithms.Terms` of ``policy`` on ``batch`` collected by ``old``, advantages
    normalized over the whole batch (what an algorithm's ``objective`` is written in)."""
    mean, log_std = networks.policy_apply(policy, batch.obs, knobs)
    old_mean, old_log_std = networks.policy_apply(old, batch.obs, knobs)
    return Terms(ratio=probability_ratio(networks.gaussian_log_prob(mean, log_std, batch.action), batch.old_log_prob),
                 adv=normalize_advantages(batch.advantages), log_std=log_std,
                 kl=kl(old_mean, old_log_std, mean, log_std))


@struct.dataclass
class TrustRegion:
    mean_kl: jax.Array    # mean over states of KL(π_before ‖ π_after)
    max_kl: jax.Array     # max over states of the same KL
    max_ratio: jax.Array  # max over samples of π_after(a|s) / π_rollout(a|s)


def trust_region(before, after, obs, action, rollout_log_prob, knobs) -> TrustRegion:
    """The trust-region metrics of a step (ref §4.1) on the states ``obs`` and
    the actions taken there with log-probabilities ``rollout_log_prob``."""
    mean_old, log_std_old = networks.policy_apply(before, obs, knobs)
    mean_new, log_std_new = networks.policy_apply(after, obs, knobs)
    kls = kl_stats(mean_old, log_std_old, mean_new, log_std_new)
    ratio = probability_ratio(networks.gaussian_log_prob(mean_new, log_std_new, action), rollout_log_prob)
    return TrustRegion(mean_kl=kls.mean_kl, max_kl=kls.max_kl, max_ratio=jnp.max(ratio))


@struct.dataclass
class ValueTargets:
    """The targets of the value diagnostics on one batch, per sample [B] (CL §5.2; ref §4.1 item 3)."""

    obs: jax.Array       # [B, obs] the filtered observations the value network sees
    gae: jax.Array       # V_old + Â: the value network's training target (ref §2.4)
    returns: jax.Array   # discounted return of the learner's rewards (scaled and clipped, as trained on)
    mask: jax.Array      # not a done step: the samples the value loss uses
    complete: jax.Array  # the step's episode ends inside the batch, so its return is not cut at the batch end
    exact: jax.Array     # LQR: V^π of the pre-update policy in the learner's units; NaN elsewhere


def value_targets(data: Collected, knobs, exact_value=None) -> ValueTargets:
    """The targets of :func:`value_errors` on a collected batch. ``exact_value`` (raw observation → V,
    see :func:`lqr_value`) needs the batch collected with ``keep_raw_obs``."""
    tr = data.transitions
    flat = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731
    returns = discounted_returns(tr.reward, tr.done, knobs["gamma"])
    exact = exact_value(tr.raw_obs) if exact_value is not None else jnp.full(tr.reward.shape, jnp.nan)
    return ValueTargets(obs=data.batch.obs, gae=data.batch.value_targets, returns=flat(returns),
                        mask=data.batch.value_mask, complete=flat(episode_completes(tr.done)), exact=flat(exact))


def lqr_value(policy, filters: Filters, knobs):
    """Raw state → the exact V^π of ``policy`` behind the frozen ``filters`` on the linear-quadratic
    task, with the learner's γ and in the learner's reward units: scaled reward a·r + b (before
    clipping, :func:`pg_diag.normalize.reward_affine`) gives a·V + b/(1 − γp), p the continuation
    probability of an episode."""
    spec = lqr.default_spec()
    gain, offset, var = lqr.affine_policy(policy, filters.obs, knobs)
    U, u, c = lqr.value_function(spec, gain, offset, var, knobs["gamma"])
    a, b = reward_affine(filters.ret, filters.rew, knobs)
    return lambda s: a * lqr.quadratic(U, u, c, s) + b / (1.0 - knobs["gamma"] * spec.p)


@struct.dataclass
class ValueErrors:
    gae: jax.Array      # MRE against V_old + Â over non-terminal samples
    returns: jax.Array  # MRE against the returns over non-terminal samples whose return is complete
    exact: jax.Array    # MRE against the exact V^π over non-terminal samples (LQR; NaN elsewhere)
    returns_truncated: jax.Array  # MRE against the returns over all non-terminal samples, cut at the batch end


def value_errors(value_params, t: ValueTargets, knobs) -> ValueErrors:
    """Mean relative errors of the value network ``value_params`` against the targets of one batch
    (:func:`pg_diag.objectives.mean_relative_error`).

    Against the returns two readings: ``returns`` counts only samples whose episode
    ends inside the batch (complete returns); ``returns_truncated`` counts every
    non-terminal sample with its return cut at the batch end without bootstrapping,
    as the original's ``value_loss_returns`` (ref §4.1 item 3, §4.2 item 4). The
    second is low-biased wherever an episode runs past the batch end, so its error
    is partly the target's, not the network's."""
    v = networks.value_apply(value_params, t.obs, knobs)
    return ValueErrors(gae=mean_relative_error(v, t.gae, t.mask),
                       returns=mean_relative_error(v, t.returns, t.mask & t.complete),
                       exact=mean_relative_error(v, t.exact, t.mask),
                       returns_truncated=mean_relative_error(v, t.returns, t.mask))


@struct.dataclass
class HeldOut:
    obs: jax.Array       # [B, obs]
    action: jax.Array    # [B, act]
    log_prob: jax.Array  # [B]
    targets: ValueTargets  # built with the pre-update value network
    filters: Filters     # the copy's statistics after the batch


def heldout_batch(env: Env, policy, value, filters: Filters, knobs, key, num_envs: int, num_steps: int,
                  freeze_actions=False, exact: bool = False) -> HeldOut:
    """A batch from fresh environments with the pre-update policy and value network (ref §4.1).

    Unlike the original (§8 B6) it works on copies: the training run's
    environments and normalizer statistics are not touched. ``exact`` (LQR)
    adds the exact V^π to its value targets."""
    k_reset, k_roll = jax.random.split(key)
    carry, filters = reset_envs(env, k_reset, num_envs, filters, knobs)
    data = collect_batch(env, policy, value, carry, filters, knobs, k_roll, num_steps,
                         freeze_actions=freeze_actions, keep_raw_obs=exact)
    targets = value_targets(data, knobs, lqr_value(policy, data.filters, knobs) if exact else None)
    b = data.batch
    return HeldOut(obs=b.obs, action=b.action, log_prob=b.old_log_prob, targets=targets, filters=data.filters)


@struct.dataclass
class EpisodeStats:
    mean_return: jax.Array            # mean raw return of the episodes that ended (NaN if none)
    episodes: jax.Array               # how many ended
    mean_length: jax.Array
    mean_return_reference: jax.Array  # the same under the original code's reporting rule (see below)


def episode_stats(tr: Transitions) -> EpisodeStats:
    """Raw returns and lengths of the episodes that ended in the batch.

    ``mean_return`` counts every episode that ended. The original code (ref
    §2.1 step 6) ignored an episode ending on the batch's last step unless no
    other episode ended in the batch; ``mean_return_reference`` follows that
    rule, so tables can be computed exactly as published."""
    n = jnp.sum(tr.done)
    safe = jnp.maximum(n, 1)
    not_last = jnp.arange(tr.done.shape[0])[:, None] < tr.done.shape[0] - 1
    earlier = tr.done & not_last
    n_earlier = jnp.sum(earlier)
    reference = jnp.where(n_earlier > 0, jnp.sum(jnp.where(earlier, tr.finished_return, 0.0))
                          / jnp.maximum(n_earlier, 1), jnp.sum(tr.finished_return) / safe)
    return EpisodeStats(mean_return=jnp.where(n > 0, jnp.sum(tr.finished_return) / safe, jnp.nan),
                        episodes=n.astype(jnp.int32),
                        mean_length=jnp.where(n > 0, jnp.sum(tr.finished_length) / safe, jnp.nan),
                        mean_return_reference=jnp.where(n > 0, reference, jnp.nan))
