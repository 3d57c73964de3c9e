"""``make_train(static) -> Trainer``: one agent's training as pure functions.

``Trainer.train(key, knobs)`` runs the whole training and returns the final
:class:`AgentState` and per-iteration metrics; ``Trainer.init`` and
``Trainer.run(state, knobs, n)`` split it into chunks so a host loop can
report progress between compiled pieces. All of them act on ONE agent;
:mod:`pg_diag.sweep` vmaps them over agents. Every knob is traced, so one
compiled program serves any knob values.

One iteration (ref §2.1): [reset the environments] → collect T steps →
values, GAE and targets → value update → policy update → trust-region and
training metrics. LR annealing is a function of the iteration counter.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from pg_diag import envs, networks, ppo, trpo
from pg_diag.config import Static
from pg_diag.optim import adam, annealed_learning_rate
from pg_diag.rollout import EnvCarry, Filters, collect, gae_advantages, reset_envs


@struct.dataclass
class AgentState:
    """Everything one agent carries from iteration to iteration."""

    policy: dict
    value: dict
    policy_opt: object
    value_opt: object
    filters: Filters
    envs: EnvCarry
    iteration: jax.Array   # int32 []: iterations completed
    key: jax.Array
    diverged: jax.Array    # bool []: parameters or losses became non-finite (sticky)


#: Per-iteration metrics, each a scalar per agent and iteration.
METRICS = {
    "mean_return": "mean raw undiscounted return of the episodes that finished this iteration (NaN if none)",
    "episodes": "number of episodes that finished this iteration",
    "mean_length": "mean length of those episodes",
    "mean_kl": "mean over training states of KL(π_before ‖ π_after) across the update",
    "max_kl": "max over training states of the same KL",
    "max_ratio": "max over the training batch of π_after(a|s)/π_rollout(a|s)",
    "heldout_mean_kl": "mean KL across the update on a held-out batch from the pre-update policy (NaN when not measured)",
    "heldout_max_kl": "max KL across the update on the held-out batch",
    "heldout_max_ratio": "max probability ratio across the update on the held-out batch",
    "policy_std": "mean policy standard deviation after the update",
    "entropy": "policy entropy after the update",
    "value_loss": "value loss, mean over the last value epoch's minibatches",
    "policy_loss": "PPO: clipped surrogate loss, mean over the last epoch's minibatches; TRPO: −surrogate after the step",
    "clip_fraction": "PPO: fraction of samples with |r − 1| > ε, mean over the last epoch (NaN for TRPO)",
    "grad_norm": "policy gradient norm (PPO: before clipping, mean over minibatches; TRPO: of g)",
    "step_scale": "TRPO: the accepted line-search scale 2^-i, 0 if none (NaN for PPO)",
    "lr_policy_used": "policy learning rate used this iteration (after annealing)",
    "lr_value_used": "value learning rate used this iteration (after annealing)",
    "diverged": "the agent's parameters or losses became non-finite (sticky)",
}


def _all_finite(tree) -> jax.Array:
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)]))


class Trainer(NamedTuple):
    static: Static
    env: envs.Env
    init: object        # (key, knobs) -> AgentState
    iteration: object   # (state, knobs[, heldout_now]) -> (state, metrics)
    run: object         # (state, knobs, num_iterations: static) -> (state, metrics [n])
    run_agents: object  # (states, knobs, num_iterations, batching) -> (states, metrics [n, agents])
    train: object       # (key, knobs) -> (state, metrics [num_iterations])
    collect_batch: object  # (state, carry, filters, knobs, key) -> (carry, filters, transitions, batch)


def make_train(static: Static) -> Trainer:
    """Build the pure training functions for one static configuration."""
    env = envs.make(static.task, static.physics, static.physics_threads)
    n_envs, n_steps = static.num_envs, static.steps_per_env
    flat = lambda x: x.reshape((n_envs * n_steps,) + x.shape[2:])

    def init(key, knobs) -> AgentState:
        k_pi, k_v, k_env, k_next = jax.random.split(key, 4)
        policy = networks.init_policy(k_pi, env.obs_size, env.action_size, static.policy_hidden, knobs)
        value = networks.init_value(k_v, env.obs_size, static.value_hidden, knobs)
        filters = Filters.zeros(env.obs_size)
        carry, pushed = reset_envs(env, k_env, n_envs, filters, knobs)
        if not static.reset_every_iteration:
            filters = pushed  # these observations are seen: count them once, now
        return AgentState(policy=policy, value=value, policy_opt=adam(knobs["adam_eps"]).init(policy),
                          value_opt=adam(knobs["adam_eps"]).init(value), filters=filters, envs=carry,
                          iteration=jnp.int32(0), key=k_next, diverged=jnp.bool_(False))

    def heldout_batch(state: AgentState, knobs, key):
        """A batch from fresh environments with the pre-update policy (ref §4.1).

        Unlike the original (§8 B6), it works on copies: the training run's
        environments and normalizer statistics are not touched."""
        k_reset, k_roll = jax.random.split(key)
        carry, filters = reset_envs(env, k_reset, n_envs, state.filters, knobs)
        _, _, tr = collect(env, state.policy, carry, filters, k_roll, knobs, n_steps, freeze_actions=state.diverged)
        return flat(tr.obs), flat(tr.action), flat(tr.log_prob)

    def collect_batch(state: AgentState, carry, filters, knobs, key):
        """Collect T steps from ``carry`` with the agent's policy and build the
        update batch: values and GAE advantages from the pre-update value network
        (ref §2.1 steps 1–3). Returns the new carry and filters, the
        transitions and the flattened :class:`ppo.UpdateBatch`."""
        carry, filters, tr = collect(env, state.policy, carry, filters, key, knobs, n_steps,
                                     freeze_actions=state.diverged)
        values = networks.value_apply(state.value, tr.obs, knobs)              # [T, N]
        final_value = networks.value_apply(state.value, carry.obs, knobs)       # [N], V(s_T)
        last_value = jnp.where(knobs["reference_batch_end"], values[-1], final_value)
        adv = gae_advantages(tr.reward, values, last_value, tr.done, knobs["gamma"], knobs["gae_lambda"])
        batch = ppo.UpdateBatch(obs=flat(tr.obs), action=flat(tr.action), old_log_prob=flat(tr.log_prob),
                                advantages=flat(adv), old_values=flat(values),
                                value_targets=flat(values + adv), value_mask=flat(~tr.done))
        return carry, filters, tr, batch

    def trust_region(before, after, obs, action, rollout_log_prob, knobs):
        """Mean and max KL(π_before ‖ π_after) over ``obs``, and the max probability ratio."""
        mean_old, log_std_old = networks.policy_apply(before, obs, knobs)
        mean_new, log_std_new = networks.policy_apply(after, obs, knobs)
        kl = networks.gaussian_kl(mean_old, log_std_old, mean_new, log_std_new)
        log_ratio = networks.gaussian_log_prob(mean_new, log_std_new, action) - rollout_log_prob
        return jnp.mean(kl), jnp.max(kl), jnp.exp(jnp.max(log_ratio))

    def policy_step(state, batch, knobs, lr, key):
        """The algorithm's policy update; returns params, optimizer state and
        (policy_loss, clip_fraction, grad_norm, step_scale) for the metrics."""
        if static.algorithm == "trpo":
            policy, info = trpo.trpo_step(state.policy, batch, knobs, key, cg_iterations=static.cg_iterations,
                                          line_search_steps=static.line_search_steps,
                                          fisher_size=static.fisher_size)
            return policy, state.policy_opt, (-info.surrogate_after, jnp.nan, info.grad_norm, info.step_scale)
        policy, opt, info = ppo.policy_update(state.policy, state.policy_opt, batch, lr, knobs, key,
                                              static.ppo_epochs, static.num_minibatches)
        return policy, opt, (jnp.mean(info.loss[-1]), jnp.mean(info.clip_fraction[-1]), jnp.mean(info.grad_norm),
                             jnp.nan)

    def iteration(state: AgentState, knobs, heldout_now=None):
        """One training iteration. ``heldout_now`` (bool scalar; by default derived
        from the iteration counter and ``static.heldout_every``) adds the
        held-out trust-region measurement; in a sweep it is shared by all agents,
        so it stays a real branch under vmap."""
        if heldout_now is None:
            heldout_now = _heldout_due(state.iteration)
        key, k_reset, k_roll, k_val, k_pol, k_held = jax.random.split(state.key, 6)
        carry, filters = state.envs, state.filters
        if static.reset_every_iteration:
            carry, filters = reset_envs(env, k_reset, n_envs, filters, knobs)

        if static.heldout_every:
            shapes = jax.eval_shape(heldout_batch, state, knobs, k_held)
            held = jax.lax.cond(heldout_now, lambda: heldout_batch(state, knobs, k_held),
                                lambda: jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes))

        carry, filters, tr, batch = collect_batch(state, carry, filters, knobs, k_roll)

        lr_pi = annealed_learning_rate(knobs["lr_policy"], state.iteration, static.num_iterations, knobs)
        lr_v = annealed_learning_rate(knobs["lr_value"], state.iteration, static.num_iterations, knobs)
        value, value_opt, v_losses = ppo.value_update(
            state.value, state.value_opt, batch, lr_v, knobs, k_val, static.value_epochs, static.num_minibatches)
        policy, policy_opt, (pi_loss, clip_fraction, grad_norm, step_scale) = policy_step(
            state, batch, knobs, lr_pi, k_pol)

        mean_kl, max_kl, max_ratio = trust_region(state.policy, policy, batch.obs, batch.action,
                                                  batch.old_log_prob, knobs)
        if static.heldout_every:
            h = trust_region(state.policy, policy, *held, knobs)
            h_mean_kl, h_max_kl, h_max_ratio = (jnp.where(heldout_now, x, jnp.nan) for x in h)
        else:
            h_mean_kl = h_max_kl = h_max_ratio = jnp.float32(jnp.nan)

        n_finished = jnp.sum(tr.done)
        diverged = state.diverged | ~_all_finite((policy, value)) | ~jnp.all(jnp.isfinite(v_losses))
        metrics = {
            "mean_return": jnp.where(n_finished > 0, jnp.sum(tr.finished_return) / jnp.maximum(n_finished, 1),
                                     jnp.nan),
            "episodes": n_finished.astype(jnp.int32),
            "mean_length": jnp.where(n_finished > 0, jnp.sum(tr.finished_length) / jnp.maximum(n_finished, 1),
                                     jnp.nan),
            "mean_kl": mean_kl,
            "max_kl": max_kl,
            "max_ratio": max_ratio,
            "heldout_mean_kl": h_mean_kl,
            "heldout_max_kl": h_max_kl,
            "heldout_max_ratio": h_max_ratio,
            "policy_std": jnp.mean(jnp.exp(policy["log_std"])),
            "entropy": networks.gaussian_entropy(policy["log_std"]),
            "value_loss": jnp.mean(v_losses[-1]),
            "policy_loss": pi_loss,
            "clip_fraction": clip_fraction,
            "grad_norm": grad_norm,
            "step_scale": step_scale,
            "lr_policy_used": lr_pi,
            "lr_value_used": lr_v,
            "diverged": diverged,
        }
        metrics = {k: jnp.asarray(v, jnp.bool_ if k == "diverged" else jnp.int32 if k == "episodes"
                                  else jnp.float32) for k, v in metrics.items()}
        new_state = AgentState(policy=policy, value=value, policy_opt=policy_opt, value_opt=value_opt,
                               filters=filters, envs=carry, iteration=state.iteration + 1, key=key,
                               diverged=diverged)
        return new_state, metrics

    def _heldout_due(it):
        if not static.heldout_every:
            return jnp.bool_(False)
        return it % static.heldout_every == 0

    def run(state, knobs, num_iterations: int):
        return jax.lax.scan(lambda s, _: iteration(s, knobs), state, None, length=num_iterations)

    def run_agents(states, knobs, num_iterations: int, batching: str = "vmap"):
        """``num_iterations`` iterations of a stack of agents that advance together.
        Metrics come out as [iterations, agents]."""

        def body(s, _):
            due = _heldout_due(s.iteration[0])  # one counter for all agents: a real branch
            if batching == "vmap":
                return jax.vmap(iteration, in_axes=(0, 0, None))(s, knobs, due)
            return jax.lax.map(lambda a: iteration(a[0], a[1], due), (s, knobs))

        return jax.lax.scan(body, states, None, length=num_iterations)

    def train(key, knobs):
        return run(init(key, knobs), knobs, static.num_iterations)

    return Trainer(static=static, env=env, init=init, iteration=iteration, run=run, run_agents=run_agents,
                   train=train, collect_batch=collect_batch)


def seed_key(seed: int) -> jax.Array:
    """The PRNG key of one agent: a function of its seed only, so an agent gets
    the same randomness alone or inside any sweep."""
    return jax.random.PRNGKey(seed)




