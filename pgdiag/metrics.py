"""What a run records each iteration: the metrics every algorithm's agents share, the algorithm's own, and when an
agent has diverged ([`pgdiag.trainer`][pgdiag.trainer] computes them inside each iteration; the run's table has a
column per metric)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pgdiag import algorithms, networks, stages
from pgdiag.objectives import entropy


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



def iteration_metrics(episodes: stages.EpisodeStats, train_tr: stages.TrustRegion, held_tr, heldout_now,
             train_v: stages.ValueErrors, held_v, policy: stages.PolicyStep, value: stages.ValueStep, lr_pi, lr_v,
             diverged, frozen) -> dict:
    """The per-iteration [`METRICS`][pgdiag.metrics.METRICS] of one agent, as scalars of fixed dtypes. ``frozen``:
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
    """The metrics a run of ``algorithm`` records: [`METRICS`][pgdiag.metrics.METRICS] and the algorithm's own
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


__all__ = ["METRICS", "diverged_now", "iteration_metrics", "metrics_of", "own_metrics"]
