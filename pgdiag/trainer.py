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

from pgdiag import algorithms, envs, networks, stages
from pgdiag.config import Static
from pgdiag.objectives import entropy
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
    diverged: jax.Array    # bool []: the agent became unusable (sticky; see diverged_now)


#: Per-iteration metrics, each a scalar per agent and iteration.
METRICS = {
    "mean_return": "mean raw undiscounted return of the episodes that finished this iteration (NaN if none, "
                   "and once the agent has diverged: its actions are then held at zero)",
    "mean_return_reference": "the same under the original code's rule: an episode that ends on the batch's last "
                             "step is left out unless no other episode ended in the batch",
    "episodes": "number of episodes that finished this iteration",
    "mean_length": "mean length of those episodes",
    "mean_kl": "mean over training states of KL(π_before ‖ π_after) across the update",
    "max_kl": "max over training states of the same KL",
    "max_ratio": "max over the training batch of π_after(a|s)/π_rollout(a|s)",
    "heldout_mean_kl": "mean KL across the update on a held-out batch from the pre-update policy (NaN when not "
                       "measured)",
    "heldout_max_kl": "max KL across the update on the held-out batch",
    "heldout_max_ratio": "max probability ratio across the update on the held-out batch",
    "value_mre_gae": "mean relative error |V − (V_old + Â)|/|V_old + Â| of the updated value network on the "
                     "training batch's non-terminal states (CL §5.2: its own training target)",
    "value_mre_returns": "the same against the discounted returns of the learner's rewards, over non-terminal "
                         "states whose episode ends inside the batch (complete returns)",
    "value_mre_returns_truncated": "the same against the discounted returns over every non-terminal state, each cut "
                                   "at the batch end without bootstrapping (the original code's returns target)",
    "value_mre_exact": "linear-quadratic task: the same against the exact V^π of the pre-update policy, in the "
                       "learner's reward units (NaN on other tasks)",
    "heldout_value_mre_gae": "value_mre_gae on the held-out batch (GAE target from the pre-update value network "
                             "there; NaN when not measured)",
    "heldout_value_mre_returns": "the same against the complete discounted returns on the held-out batch: its "
                                 "environments run on past the batch end to every episode's end (at most the "
                                 "task's episode length), so every non-terminal state counts",
    "heldout_value_mre_exact": "value_mre_exact on the held-out batch",
    "heldout_value_mre_returns_truncated": "value_mre_returns_truncated on the held-out batch",
    "value_mre_gae_original": "the original code's \"GAE MRE\" (ref §4.1 item 3) on the training batch: the value "
                              "loss per sample as configured (squared error, or with value clipping the max of the "
                              "clipped and unclipped ones) over |V_old + Â|, mean over non-terminal states; a squared "
                              "error over a value, not a relative error (it scales with the reward scale)",
    "heldout_value_mre_gae_original": "value_mre_gae_original on the held-out batch (V_old and Â from the "
                                      "pre-update value network there; NaN when not measured)",
    "heldout_value_mse_returns": "mean squared error of the updated value network against the held-out batch's "
                                 "complete returns (the states of heldout_value_mre_returns); it cannot go below "
                                 "the returns' own noise E[(R − V^π)²] (heldout_value_mse_floor)",
    "heldout_value_ev_returns": "explained variance 1 − Var(R − V)/Var(R) of the same on the same states",
    "heldout_value_mse_exact": "linear-quadratic task: MSE against the exact V^π of the pre-update policy on those "
                               "states (NaN elsewhere)",
    "heldout_value_mse_floor": "linear-quadratic task: MSE of the exact V^π itself against the complete returns "
                               "there, the noise floor of heldout_value_mse_returns (NaN elsewhere)",
    "heldout_value_mre_floor": "linear-quadratic task: MRE of the exact V^π itself against the complete returns on "
                               "the states of heldout_value_mre_returns: what a perfect value function reads "
                               "there from the returns' noise alone (NaN elsewhere)",
    "heldout_value_mre_floor_truncated": "linear-quadratic task: MRE of the exact V^π against the returns cut at the "
                                         "batch end on the states of heldout_value_mre_returns_truncated (NaN "
                                         "elsewhere)",
    "policy_std": "mean policy standard deviation after the update",
    "entropy": "policy entropy after the update",
    "value_loss": "value loss, mean over the last value epoch's minibatches",
    "policy_loss": "minus the objective the step optimized: PPO (and PPO-KL): mean over the last epoch's "
                   "minibatches; TRPO and NPG: −surrogate after the step; VPG: before it",
    "clip_fraction": "PPO: fraction of samples with |r − 1| > ε, mean over the last epoch (NaN for the others)",
    "grad_norm": "policy gradient norm (minibatch algorithms: before clipping, mean over minibatches; TRPO, NPG: "
                 "of g)",
    "step_scale": "TRPO: the accepted line-search scale 2^-i, 0 if none; NPG: 1 (NaN for the others)",
    "penalty": "PPO-KL: the KL coefficient β the step optimized with (it then adapts for the next; NaN for the "
               "others)",
    "lr_policy_used": "policy learning rate used this iteration (after annealing)",
    "lr_value_used": "value learning rate used this iteration (after annealing)",
    "diverged": "the agent became unusable: non-finite parameters, losses, policy σ or KL (sticky)",
}


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
    exact = envs.exact_answers(static.task, static.policy_hidden)  # closed forms where the task has them

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
    value = networks.init_value(k_v, env.obs_size, static.value_hidden, knobs, static.network)
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
    metrics = _metrics(stages.episode_stats(data.transitions), train_tr, held_tr, heldout_now, train_v, held_v,
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


def _metrics(episodes: stages.EpisodeStats, train_tr: stages.TrustRegion, held_tr, heldout_now,
             train_v: stages.ValueErrors, held_v, policy: stages.PolicyStep, value: stages.ValueStep, lr_pi, lr_v,
             diverged, frozen) -> dict:
    """The per-iteration [`METRICS`][pgdiag.trainer.METRICS] of one agent, as scalars of fixed dtypes. ``frozen``:
    the agent had diverged before this iteration's rollout, whose actions were then held at zero: its episodes'
    returns and lengths are not its policy's, so they are NaN."""
    nan = jnp.float32(jnp.nan)
    log_std = networks.state_independent_log_std(policy.params)
    episodes = episodes.replace(**{f: jnp.where(frozen, nan, getattr(episodes, f))
                                   for f in ("mean_return", "mean_return_reference", "mean_length")})
    held = (nan,) * 14 if held_tr is None else (
        jnp.where(heldout_now, x, jnp.nan) for x in (held_tr.mean_kl, held_tr.max_kl, held_tr.max_ratio,
                                                     held_v.gae, held_v.returns, held_v.exact,
                                                     held_v.returns_truncated, held_v.returns_mse,
                                                     held_v.returns_ev, held_v.exact_mse, held_v.floor_mse,
                                                     held_v.gae_original, held_v.floor_mre,
                                                     held_v.floor_mre_truncated))
    (h_mean_kl, h_max_kl, h_max_ratio, hv_gae, hv_returns, hv_exact, hv_truncated, hv_mse, hv_ev, hv_mse_exact,
     hv_floor, hv_gae_original, hv_floor_mre, hv_floor_mre_truncated) = held
    metrics = {
        "mean_return": episodes.mean_return, "mean_return_reference": episodes.mean_return_reference,
        "episodes": episodes.episodes, "mean_length": episodes.mean_length,
        "mean_kl": train_tr.mean_kl, "max_kl": train_tr.max_kl, "max_ratio": train_tr.max_ratio,
        "heldout_mean_kl": h_mean_kl, "heldout_max_kl": h_max_kl, "heldout_max_ratio": h_max_ratio,
        "value_mre_gae": train_v.gae, "value_mre_returns": train_v.returns, "value_mre_exact": train_v.exact,
        "heldout_value_mre_gae": hv_gae, "heldout_value_mre_returns": hv_returns, "heldout_value_mre_exact": hv_exact,
        "value_mre_returns_truncated": train_v.returns_truncated,
        "heldout_value_mre_returns_truncated": hv_truncated,
        "heldout_value_mse_returns": hv_mse, "heldout_value_ev_returns": hv_ev,
        "heldout_value_mse_exact": hv_mse_exact, "heldout_value_mse_floor": hv_floor,
        "value_mre_gae_original": train_v.gae_original, "heldout_value_mre_gae_original": hv_gae_original,
        "heldout_value_mre_floor": hv_floor_mre, "heldout_value_mre_floor_truncated": hv_floor_mre_truncated,
        "policy_std": _mean_or_nan(jnp.exp, log_std), "entropy": _mean_or_nan(entropy, log_std),
        "value_loss": jnp.mean(value.losses[-1]),
        "policy_loss": policy.info.policy_loss, "clip_fraction": policy.info.clip_fraction,
        "grad_norm": policy.info.grad_norm, "step_scale": policy.info.step_scale, "penalty": policy.info.penalty,
        "lr_policy_used": lr_pi, "lr_value_used": lr_v, "diverged": diverged,
    }
    return {k: jnp.asarray(v, jnp.bool_ if k == "diverged" else jnp.int32 if k == "episodes" else jnp.float32)
            for k, v in metrics.items()}


def metrics_of(algorithm: str) -> dict:
    """The metrics a run of ``algorithm`` records: [`METRICS`][pgdiag.trainer.METRICS] and the algorithm's own
    (`Algorithm.metrics`), name -> what it means."""
    own = dict(algorithms.get(algorithm).metrics)
    clash = sorted(set(own) & set(METRICS))
    if clash:
        raise algorithms.AlgorithmError(f"algorithm {algorithm!r} declares the metrics {clash}, which every run "
                                        f"records; its own need names of their own")
    return {**METRICS, **{k: f"{algorithm}: {v}" for k, v in own.items()}}


def own_metrics(algorithm: str, info) -> dict:
    """The algorithm's own metrics from its step's ``info.extra``, as float32 scalars; a declared one its step did
    not return is named (at trace time, before anything runs)."""
    declared = dict(algorithms.get(algorithm).metrics)
    missing = sorted(set(declared) - set(info.extra))
    if missing:
        raise algorithms.AlgorithmError(f"algorithm {algorithm!r} declares the metrics {missing}, but its step's "
                                        f"info.extra holds {sorted(info.extra)}")
    return {k: jnp.asarray(info.extra[k], jnp.float32).reshape(()) for k in declared}


def diverged_now(policy: stages.PolicyStep, value: stages.ValueStep, train_tr: stages.TrustRegion) -> jax.Array:
    """Whether an agent's update left it unusable: non-finite parameters or losses, a policy whose standard
    deviation overflows (finite log σ above ~88 gives σ = inf in float32, so its actions are frozen and its
    KL is NaN although every parameter is finite), or a non-finite KL between the policies before and after
    the update on the training batch (finite for any two usable Gaussian policies)."""
    return (~_all_finite((policy.params, value.params)) | ~jnp.all(jnp.isfinite(value.losses))
            | ~jnp.isfinite(policy.info.policy_loss) | ~_sigma_finite(policy.params)
            | ~jnp.isfinite(train_tr.mean_kl))


def _sigma_finite(params) -> jax.Array:
    log_std = networks.state_independent_log_std(params)  # a state-dependent σ is finite where its inputs are
    return jnp.bool_(True) if log_std is None else jnp.all(jnp.isfinite(jnp.exp(log_std)))


def _mean_or_nan(fn, log_std) -> jax.Array:
    """A statistic of a state-independent σ; NaN for a network whose σ depends on the state."""
    return jnp.float32(jnp.nan) if log_std is None else jnp.mean(fn(log_std))


def _all_finite(tree) -> jax.Array:
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)]))


def seed_key(seed: int) -> jax.Array:
    """The PRNG key of one agent: a function of its seed only, so an agent gets
    the same randomness alone or inside any sweep."""
    return jax.random.PRNGKey(seed)
