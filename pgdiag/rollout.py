"""Trajectory collection (``lax.scan``), GAE, discounted returns and the update batch.

One agent collects ``steps_per_env`` steps from each of its ``num_envs``
environments per iteration (ref §2.1). Per step, in the original's order:

1. the policy samples ``a = μ + σ·ε`` at the filtered observation (no
   clipping or squashing; tasks clip or rescale themselves);
2. the environment steps; ``done = terminated | truncated``;
3. the raw reward goes through the reward scaler and clipper; the scaler's
   return restarts at 0 where ``done``;
4. the next raw observation is pushed into the observation statistics; finished
   environments are reset and their reset observations pushed too; the
   observation the policy sees next is filtered with the updated statistics.

With ``frozen=True`` nothing is pushed: the observation normalizer and the
reward scaler use the statistics they were given, so a fixed policy is
sampled as the fixed policy it is (the diagnostics' setting).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from pgdiag import networks
from pgdiag.envs.base import Env, EnvState
from pgdiag.normalize import (RunningStat, clip_reward, observation_filter, push, scale_reward)


@struct.dataclass
class EnvCarry:
    """An agent's environments between steps (leading axis: num_envs)."""

    state: EnvState
    obs: jax.Array         # [N, obs] filtered observation the policy sees next
    ret: jax.Array         # [N] reward scaler's discounted return
    ep_return: jax.Array   # [N] raw return of the running episode
    ep_length: jax.Array   # [N] int32


@struct.dataclass
class Filters:
    """Running statistics of the observation and reward filters (one per agent)."""

    obs: RunningStat
    ret: RunningStat   # discounted returns (reward scaling)
    rew: RunningStat   # raw rewards (the 'rewards' reward filter)

    @staticmethod
    def zeros(obs_size: int) -> "Filters":
        return Filters(obs=RunningStat.zeros((obs_size,)), ret=RunningStat.zeros(), rew=RunningStat.zeros())


@struct.dataclass
class Transitions:
    """A rollout, time-major: every field is [T, N, ...]."""

    obs: jax.Array
    action: jax.Array
    log_prob: jax.Array
    reward: jax.Array      # after reward scaling/clipping: what the learner sees
    raw_reward: jax.Array
    done: jax.Array        # terminated | truncated (ref §2.1: time limits count as terminal)
    terminated: jax.Array
    truncated: jax.Array
    finished_return: jax.Array  # raw return of an episode ending at this step, else 0
    finished_length: jax.Array
    raw_obs: jax.Array = None   # the unfiltered observation (only with ``keep_raw_obs``)


def reset_envs(env: Env, key, num_envs: int, filters: Filters, knobs, frozen: bool = False):
    """Reset every environment and push the reset observations (ref §2.1; not when ``frozen``)."""
    state = jax.vmap(env.reset)(jax.random.split(key, num_envs))
    obs_stat = filters.obs if frozen else push(filters.obs, state.obs)
    carry = EnvCarry(state=state, obs=observation_filter(obs_stat, state.obs, knobs),
                     ret=jnp.zeros(num_envs, jnp.float32),
                     ep_return=jnp.zeros(num_envs, jnp.float32),
                     ep_length=jnp.zeros(num_envs, jnp.int32))
    return carry, filters.replace(obs=obs_stat)


def _select(mask, a, b):
    """Per-environment ``where`` over two pytrees with a leading env axis."""
    def sel(x, y):
        return jnp.where(mask.reshape(mask.shape + (1,) * (x.ndim - 1)), x, y)
    return jax.tree.map(sel, a, b)


def collect(env: Env, policy_params, carry: EnvCarry, filters: Filters, key, knobs,
            num_steps: int, freeze_actions=False, frozen: bool = False, keep_raw_obs: bool = False, quota=None,
            quota_from: int = 0):
    """Run ``num_steps`` steps in every environment. Returns the new carry and
    filters and the [`Transitions`][pgdiag.rollout.Transitions]. ``freeze_actions`` (bool []) replaces
    actions by zeros, so a diverged agent cannot feed NaNs to the physics;
    ``frozen`` (static) keeps the filters' statistics as given; ``keep_raw_obs``
    (static) also records the unfiltered observations (for exact values). ``quota`` ([N] int32, filters frozen):
    the episodes each environment may still finish; one that has finished them is idle — its state kept, none of
    its episodes ends (``done`` stays False), and a task that ``skips_idle`` does not step it. What is left of
    the quota afterwards is ``quota − Σ_t done``; only episodes ending at step ``quota_from`` or later count."""
    num_envs = carry.obs.shape[0]
    if quota is not None and not frozen:
        raise ValueError("a quota of episodes needs frozen filters: an idle environment's observations must not "
                         "reach the statistics")

    def step(c, x):
        (carry, filters, remaining), (k, t) = c, x
        k_act, k_reset = jax.random.split(k)
        action, log_prob = _act(policy_params, carry.obs, k_act, knobs, freeze_actions)
        to_env = networks.env_action(policy_params, action)
        if quota is not None:
            active = remaining > 0
            if env.skips_idle:   # NaN: "idle", not stepped (the Env contract)
                to_env = jnp.where(active[:, None], to_env, jnp.nan)
        nxt = jax.vmap(env.step)(carry.state, to_env)
        if quota is not None:   # an idle environment stays as it was, earning nothing (its carried state was reset)
            nxt = _select(active, nxt, carry.state.replace(reward=jnp.zeros_like(nxt.reward)))
        done = nxt.terminated | nxt.truncated

        ret, ret_stat, rew_stat, reward = scale_reward(filters.ret, filters.rew, carry.ret, nxt.reward, knobs,
                                                       update=not frozen)
        reward = clip_reward(reward, knobs)
        ret = jnp.where(done, 0.0, ret)

        fresh = jax.vmap(env.reset)(jax.random.split(k_reset, num_envs))
        state = _select(done, fresh, nxt)
        obs_stat = filters.obs
        if not frozen:
            obs_stat = push(obs_stat, nxt.obs)  # the terminal observation is pushed too
            obs_stat = push(obs_stat, fresh.obs, mask=done)

        ep_return = carry.ep_return + nxt.reward
        ep_length = carry.ep_length + 1
        transition = Transitions(
            obs=carry.obs, action=action, log_prob=log_prob, reward=reward, raw_reward=nxt.reward,
            done=done, terminated=nxt.terminated, truncated=nxt.truncated,
            finished_return=jnp.where(done, ep_return, 0.0),
            finished_length=jnp.where(done, ep_length, 0),
            raw_obs=carry.state.obs if keep_raw_obs else None)
        carry = EnvCarry(state=state, obs=observation_filter(obs_stat, state.obs, knobs), ret=ret,
                         ep_return=jnp.where(done, 0.0, ep_return),
                         ep_length=jnp.where(done, 0, ep_length))
        if quota is not None:
            remaining = remaining - (done & (t >= quota_from)).astype(jnp.int32)
        return (carry, Filters(obs=obs_stat, ret=ret_stat, rew=rew_stat), remaining), transition

    (carry, filters, _), transitions = jax.lax.scan(step, (carry, filters, quota),
                                                    (jax.random.split(key, num_steps), jnp.arange(num_steps)))
    return carry, filters, transitions


def _act(policy_params, obs, key, knobs, freeze_actions):
    """Sampled actions and their log-probabilities (of u: see networks' note on squashing); a frozen agent's
    actions, and any non-finite one, are zeros."""
    mean, log_std = networks.policy_apply(policy_params, obs, knobs)
    action = mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape)
    action = jnp.where(freeze_actions | ~jnp.isfinite(action), 0.0, action)
    return action, networks.gaussian_log_prob(mean, log_std, action)


def gae_advantages(rewards, values, last_value, dones, gamma, lam):
    """Generalized advantage estimation (Schulman et al. 2016; ref §2.1 step 3).

    Time-major arrays [T, ...]. ``last_value`` bootstraps the final step;
    ``done`` steps neither bootstrap nor carry the trace across the boundary:
    δ_t = r_t + γ·V_{t+1}·(1 − d_t) − V_t,  Â_t = δ_t + γλ·(1 − d_t)·Â_{t+1}.
    """
    not_done = 1.0 - dones.astype(jnp.float32)
    next_values = jnp.concatenate([values[1:], last_value[None]], axis=0)
    deltas = rewards + gamma * next_values * not_done - values

    def back(adv_next, x):
        delta, nd = x
        adv = delta + gamma * lam * nd * adv_next
        return adv, adv

    _, adv = jax.lax.scan(back, jnp.zeros_like(last_value), (deltas, not_done), reverse=True)
    return adv


def discounted_returns(rewards, dones, gamma):
    """Discounted return inside each episode segment, not bootstrapped at the
    batch end (ref §2.1 step 3)."""
    not_done = 1.0 - dones.astype(jnp.float32)

    def back(ret_next, x):
        r, nd = x
        ret = r + gamma * nd * ret_next
        return ret, ret

    _, ret = jax.lax.scan(back, jnp.zeros_like(rewards[0]), (rewards, not_done), reverse=True)
    return ret


def episode_completes(dones):
    """Whether the episode of each step [T, ...] ends inside the batch (a done at this or a later step of
    the same environment): exactly the steps whose discounted return is complete, not cut at the batch end."""
    later = jnp.flip(jnp.cumsum(jnp.flip(dones.astype(jnp.int32), 0), axis=0), 0)
    return later > 0


@struct.dataclass
class UpdateBatch:
    """A flattened batch for the updates: every field is [B, ...] (B = T·N)."""

    obs: jax.Array
    action: jax.Array
    old_log_prob: jax.Array
    advantages: jax.Array     # GAE Â, not normalized (each algorithm normalizes its own way)
    old_values: jax.Array     # V_old(s) of the pre-update value network
    value_targets: jax.Array  # V_old + Â
    value_mask: jax.Array     # False on done steps, which the value loss leaves out (ref §2.4)


def build_batch(value_params, transitions: Transitions, next_obs, knobs) -> UpdateBatch:
    """Values, GAE advantages and value targets from the pre-update value
    network (ref §2.1 steps 2–3), flattened into an [`UpdateBatch`][pgdiag.rollout.UpdateBatch]; with
    ``value_baseline`` off the policy's advantages are the discounted returns (no baseline, CL §5.2).

    ``next_obs`` [N, obs] is the filtered observation after the last step,
    whose value bootstraps the batch end; with ``reference_batch_end`` the
    last step bootstraps from V(s_{T−1}) as the original did (ref §8 B4)."""
    values = networks.value_apply(value_params, transitions.obs, knobs)       # [T, N]
    final_value = networks.value_apply(value_params, next_obs, knobs)         # [N], V(s_T)
    last_value = jnp.where(knobs["reference_batch_end"], values[-1], final_value)
    adv = gae_advantages(transitions.reward, values, last_value, transitions.done, knobs["gamma"],
                         knobs["gae_lambda"])
    # without a baseline (CL §5.2) the policy reads the returns themselves; the value network keeps its target
    policy_adv = jnp.where(knobs["value_baseline"], adv,
                           discounted_returns(transitions.reward, transitions.done, knobs["gamma"]))
    flat = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731 - [T, N, ...] -> [T·N, ...]
    return UpdateBatch(obs=flat(transitions.obs), action=flat(transitions.action),
                       old_log_prob=flat(transitions.log_prob), advantages=flat(policy_adv), old_values=flat(values),
                       value_targets=flat(values + adv), value_mask=flat(~transitions.done))
