"""The stages of a training iteration as pure functions (ref §2.1), shared by training and diagnostics.

    collect_batch  T steps with a policy (statistics updating, or frozen) → transitions + update batch
    value_step     the value network's epochs of minibatch Adam
    policy_init    the algorithm's optimizer state for a fresh policy
    policy_step    the algorithm's step (pgdiag.algorithms), computed and returned, never applied
    update         training's value step and policy step (fused where the algorithm offers it)
    objective_terms  what every algorithm's objective is written in (ratio, Â, log σ, KL) at θ on a batch
    trust_region   mean/max KL and max ratio between two policies on a batch
    heldout_batch  a fresh batch from the pre-update policy, leaving the training run untouched, its
                   segments run on to their episodes' ends for complete returns
    value_targets  the value diagnostics' targets on a batch: GAE target, returns, exact V^π (LQR)
    value_errors   the relative and squared errors of a value network against them (CL §5.2)
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

from pgdiag import algorithms, networks
from pgdiag.algorithms import PolicyStep, Terms, ValueStep
from pgdiag.algorithms.epochs import value_update
from pgdiag.config import Static
from pgdiag.envs.base import Env, ExactAnswers
from pgdiag.normalize import reward_affine
from pgdiag.objectives import (explained_variance, kl, kl_stats, masked_mse, mean_relative_error, normalize_advantages,
                               original_gae_relative_error, probability_ratio)
from pgdiag.rollout import (EnvCarry, Filters, Transitions, UpdateBatch, build_batch, collect, discounted_returns,
                            episode_completes, reset_envs)


@struct.dataclass
class Collected:
    carry: EnvCarry           # the environments after the last step
    filters: Filters          # the statistics after the batch (unchanged when frozen)
    transitions: Transitions  # [T, N, ...]
    batch: UpdateBatch        # [T·N, ...]


def collect_batch(env: Env, policy, value, carry: EnvCarry, filters: Filters, knobs, key, num_steps: int, *,
                  frozen: bool = False, freeze_actions=False, keep_raw_obs: bool = False, quota=None,
                  quota_from: int = 0) -> Collected:
    """Collect ``num_steps`` steps from ``carry`` with ``policy`` and build the
    update batch with ``value`` (ref §2.1 steps 1–3). With ``frozen`` the
    observation normalizer and reward scaler keep their statistics; ``quota``, ``quota_from``: the episodes each
    environment may still finish before it idles ([`collect`][pgdiag.rollout.collect])."""
    carry, filters, tr = collect(env, policy, carry, filters, key, knobs, num_steps,
                                 freeze_actions=freeze_actions, frozen=frozen, keep_raw_obs=keep_raw_obs,
                                 quota=quota, quota_from=quota_from)
    return Collected(carry=carry, filters=filters, transitions=tr, batch=build_batch(value, tr, carry.obs, knobs))


def value_step(static: Static, params, opt_state, batch: UpdateBatch, lr, knobs, key) -> ValueStep:
    """The value network's update (ref §2.4), the same for every algorithm."""
    params, opt_state, losses = value_update(params, opt_state, batch, lr, knobs, key, static.value_epochs,
                                             static.num_minibatches)
    return ValueStep(params=params, opt_state=opt_state, losses=losses)


def policy_init(static: Static, policy, knobs):
    """The algorithm's optimizer state for a fresh ``policy`` ([`pgdiag.algorithms`][pgdiag.algorithms])."""
    return algorithms.get(static.algorithm).init_state(policy, knobs)


def policy_step(static: Static, params, opt_state, batch: UpdateBatch, lr, knobs, key) -> PolicyStep:
    """The algorithm's policy step from ``params`` on ``batch`` (PPO ref §2.5, TRPO ref §2.7, the others
    in their modules of [`pgdiag.algorithms`][pgdiag.algorithms]), returned without being applied to any agent."""
    return algorithms.get(static.algorithm).step(static, params, opt_state, batch, lr, knobs, key)


def update(static: Static, policy, policy_opt, value, value_opt, batch: UpdateBatch, lr_policy, lr_value, knobs,
           key_value, key_policy) -> tuple[ValueStep, PolicyStep]:
    """Training's update: [`value_step`][pgdiag.stages.value_step] and [`policy_step`][pgdiag.stages.policy_step],
    each with its own key.

    An algorithm may fuse the two (PPO with as many value as policy epochs runs
    both in one loop, [`pgdiag.algorithms.ppo.ppo_update`][pgdiag.algorithms.ppo.ppo_update], a little faster
    on a CPU), with the same numbers as the two calls one after the other."""
    fused = algorithms.get(static.algorithm).update
    both = None if fused is None else fused(static, policy, policy_opt, value, value_opt, batch, lr_policy,
                                            lr_value, knobs, key_value, key_policy)
    if both is None:   # an algorithm may decline for these settings (PPO: unequal epoch counts)
        both = (value_step(static, value, value_opt, batch, lr_value, knobs, key_value),
                policy_step(static, policy, policy_opt, batch, lr_policy, knobs, key_policy))
    value_out, policy_out = both
    # a value function that shares a trunk with the policy reads the updated policy's (networks.tie)
    return value_out.replace(params=networks.tie(policy_out.params, value_out.params)), policy_out


def objective_terms(policy, old, batch: UpdateBatch, knobs) -> Terms:
    """The [`pgdiag.algorithms.Terms`][pgdiag.algorithms.base.Terms] of ``policy`` on ``batch`` collected by
    ``old``, advantages normalized over the whole batch (what an algorithm's ``objective`` is written in)."""
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
    complete: jax.Array  # the step's return is complete: its episode ends inside the batch (or its tail)
    exact: jax.Array     # LQR: V^π of the pre-update policy in the learner's units; NaN elsewhere
    full_returns: jax.Array | None = None  # with a tail: the returns of the segment run on past the batch end,
    #                                        complete for every state whose episode ends in it (else None)
    old_values: jax.Array | None = None    # V_old: the pre-update value network's values, the centre of the
    #                                        clipped value loss (None: the loss is read unclipped)


def value_targets(data: Collected, knobs, exact_value=None, tail: Transitions | None = None) -> ValueTargets:
    """The targets of [`value_errors`][pgdiag.stages.value_errors] on a collected batch. ``exact_value`` (raw
    observation → V, see [`exact_value`][pgdiag.stages.exact_value]) needs the batch collected with
    ``keep_raw_obs``. ``tail``: the transitions that continue the batch's environments past its end; the complete
    returns are then those of the segment run on (``full_returns``), ``returns`` staying cut at the batch end (the
    original's reading)."""
    tr = data.transitions
    flat = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731
    returns = discounted_returns(tr.reward, tr.done, knobs["gamma"])
    exact = exact_value(tr.raw_obs) if exact_value is not None else jnp.full(tr.reward.shape, jnp.nan)
    full, done = None, tr.done
    if tail is not None:
        T = tr.reward.shape[0]
        done = jnp.concatenate([tr.done, tail.done])
        full = flat(discounted_returns(jnp.concatenate([tr.reward, tail.reward]), done, knobs["gamma"])[:T])
        done_complete = episode_completes(done)[:T]
    else:
        done_complete = episode_completes(done)
    return ValueTargets(obs=data.batch.obs, gae=data.batch.value_targets, returns=flat(returns),
                        mask=data.batch.value_mask, complete=flat(done_complete), exact=flat(exact),
                        full_returns=full, old_values=data.batch.old_values)


def exact_value(answers: ExactAnswers, policy, filters: Filters, knobs):
    """Raw state → the exact V^π of ``policy`` behind the frozen ``filters`` from the task's closed forms
    ([`pgdiag.envs.ExactAnswers`][pgdiag.envs.base.ExactAnswers]), with the learner's γ and in the learner's
    reward units: the scaled reward a·r + b (before clipping,
    [`pgdiag.normalize.reward_affine`][pgdiag.normalize.reward_affine])."""
    a, b = reward_affine(filters.ret, filters.rew, knobs)
    return answers.value(policy, filters.obs, knobs, knobs["gamma"], a, b)


@struct.dataclass
class ValueErrors:
    gae: jax.Array      # MRE against V_old + Â over non-terminal samples
    returns: jax.Array  # MRE against the returns over non-terminal samples whose return is complete
    exact: jax.Array    # MRE against the exact V^π over non-terminal samples (LQR; NaN elsewhere)
    returns_truncated: jax.Array  # MRE against the returns over all non-terminal samples, cut at the batch end
    returns_mse: jax.Array   # mean squared error against the complete returns (the samples of ``returns``)
    returns_ev: jax.Array    # explained variance 1 − Var(R − V)/Var(R) on the same samples
    exact_mse: jax.Array     # MSE against the exact V^π on the same samples (LQR; NaN elsewhere)
    floor_mse: jax.Array     # MSE of V^π itself against the complete returns there: the noise floor (LQR)
    gae_original: jax.Array  # the original's "GAE MRE": the value loss per sample as configured over |V_old + Â|,
    #                          mean over non-terminal samples (not a relative error; ref §4.1 item 3)
    floor_mre: jax.Array     # MRE of V^π itself against the complete returns on the samples of ``returns``: what
    #                          a perfect value function reads from the returns' noise alone (LQR; NaN elsewhere)
    floor_mre_truncated: jax.Array  # the same against the returns cut at the batch end, on the samples of
    #                                 ``returns_truncated`` (LQR; NaN elsewhere)


def value_errors(value_params, t: ValueTargets, knobs) -> ValueErrors:
    """Mean relative errors of the value network ``value_params`` against the targets of one batch
    ([`pgdiag.objectives.mean_relative_error`][pgdiag.objectives.mean_relative_error]).

    Against the returns two readings: ``returns`` counts only samples whose episode
    ends inside the batch (complete returns); ``returns_truncated`` counts every
    non-terminal sample with its return cut at the batch end without bootstrapping,
    as the original's ``value_loss_returns`` (ref §4.1 item 3, §4.2 item 4). The
    second is low-biased wherever an episode runs past the batch end, so its error
    is partly the target's, not the network's.

    Beside the relative errors, the squared error against the complete returns and its explained variance:
    closeness to the value E[R | s] is a squared-error statement, E[(V − R)²] = E[(V − V^π)²] + E[(R − V^π)²],
    whose last term — the returns' own noise around V^π — no network goes below (on the linear-quadratic task
    it is measured: ``floor_mse``). A relative error has no such decomposition, and returns near 0 inflate it,
    so on that task V^π's own relative errors against the same targets on the same samples (``floor_mre``,
    ``floor_mre_truncated``) say what a perfect value function reads: an error at the floor is the returns'
    noise (or, truncated, the target's cut), not the network's.

    ``gae_original`` is the original code's "GAE MRE"
    ([`pgdiag.objectives.original_gae_relative_error`][pgdiag.objectives.original_gae_relative_error], ref §4.1
    item 3), the value loss as configured over |target|, with V_old = ``t.old_values`` (unclipped when they are not
    given)."""
    v = networks.value_apply(value_params, t.obs, knobs)
    full = t.returns if t.full_returns is None else t.full_returns
    sel = t.mask & t.complete
    old = v if t.old_values is None else t.old_values   # V_old = V: the clipped term is the unclipped one
    return ValueErrors(gae=mean_relative_error(v, t.gae, t.mask),
                       returns=mean_relative_error(v, full, sel),
                       exact=mean_relative_error(v, t.exact, t.mask),
                       returns_truncated=mean_relative_error(v, t.returns, t.mask),
                       returns_mse=masked_mse(v, full, sel), returns_ev=explained_variance(v, full, sel),
                       exact_mse=masked_mse(v, t.exact, sel), floor_mse=masked_mse(t.exact, full, sel),
                       gae_original=original_gae_relative_error(v, old, t.gae, t.mask, knobs),
                       floor_mre=mean_relative_error(t.exact, full, sel),
                       floor_mre_truncated=mean_relative_error(t.exact, t.returns, t.mask))


@struct.dataclass
class HeldOut:
    obs: jax.Array       # [B, obs]
    action: jax.Array    # [B, act]
    log_prob: jax.Array  # [B]
    targets: ValueTargets  # built with the pre-update value network
    filters: Filters     # the copy's statistics after the batch


#: steps a held-out batch's environments run on past its end so its states' returns are complete (capped by
#: the task's episode length)
HELDOUT_TAIL = 1000


def heldout_batch(env: Env, policy, value, filters: Filters, knobs, key, num_envs: int, num_steps: int,
                  freeze_actions=False, exact: ExactAnswers | None = None, tail: int | None = None) -> HeldOut:
    """A batch from fresh environments with the pre-update policy and value network (ref §4.1).

    Unlike the original (§8 B6) it works on copies: the training run's
    environments and normalizer statistics are not touched. ``exact`` (the
    task's closed forms, where it has them) adds the exact V^π to its value targets.

    The value targets' returns are complete for every state: after the batch its environments run on for ``tail``
    more steps (default: the task's episode length, at most [`HELDOUT_TAIL`][pgdiag.stages.HELDOUT_TAIL]) with the
    batch's statistics frozen, so each state's episode ends inside the segment and its discounted return is the
    whole of it. Keeping only the states whose episode happens to end inside the batch instead would select on the
    outcome (short episodes, early termination). The batch itself — the trust-region metrics' states, actions and
    statistics — is the same as without the tail."""
    k_reset, k_roll = jax.random.split(key)
    carry, filters = reset_envs(env, k_reset, num_envs, filters, knobs)
    data = collect_batch(env, policy, value, carry, filters, knobs, k_roll, num_steps,
                         freeze_actions=freeze_actions, keep_raw_obs=exact is not None)
    tail = min(env.max_episode_steps, HELDOUT_TAIL) if tail is None else tail
    more = None
    if tail:
        more = collect(env, policy, data.carry, data.filters, jax.random.fold_in(key, 1), knobs, tail,
                       freeze_actions=freeze_actions, frozen=True)[2]
    targets = value_targets(data, knobs, exact_value(exact, policy, data.filters, knobs) if exact else None, more)
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
