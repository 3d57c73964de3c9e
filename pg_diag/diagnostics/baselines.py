"""fig-baselines (CL §5.2, Figs 5/16; ref §4.2 item 5): how much variance each baseline removes.

For every subject the program estimates the gradient K times at every N of
the grid with each baseline, all streams vmapped in one program:

* ``value`` — the agent's own value network (GAE, as the algorithm);
* ``fitted`` — a "true" value function: a fresh value network of the same
  shape fit to the Monte-Carlo returns of ``fit_pairs`` pairs of the frozen
  policy (:func:`fit_value`), then used in the same GAE;
* ``zero`` — no baseline: the discounted returns in place of the advantages;
* ``exact`` — on the linear-quadratic task, the exact V^π in the learner's
  units (:func:`pg_diag.stages.lqr_value`) in the same GAE: the best a
  baseline can do.

Every baseline is computed on the very same pairs: each of the K streams is
sampled once and carries one advantage head per baseline (streaming.stream's
``heads``), so a difference in the pairwise cosine is the baseline's alone and
the study costs one rollout per stream, not one per baseline. The fitted network's own quality is reported: its mean
relative error and explained variance on held-out returns, beside the agent's
network on the same states.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
from flax import struct

from pg_diag import envs, networks, stages
from pg_diag.algorithms.epochs import value_update
from pg_diag.diagnostics import gradients
from pg_diag.diagnostics.sizes import MAX_PAIRS, PAPER_SIZES
from pg_diag.diagnostics.sampling import Sampling, algorithm_sampling, frozen_filters, start_carry
from pg_diag.diagnostics.streaming import Grid, snap_sizes, stream
from pg_diag.diagnostics.subjects import DiagnosticError, check_batching, over_subjects, require
from pg_diag.objectives import mean_relative_error
from pg_diag.optim import adam
from pg_diag.rollout import UpdateBatch, discounted_returns, episode_completes

#: value: the agent's network; fitted: V* fit to Monte-Carlo returns; zero: returns in place of advantages, through
#: the algorithm's normalization (mean subtracted: CL §5.2's reading); zero_raw: the same returns with no
#: normalization at all (no baseline in any sense); exact: V^π in closed form (LQR)
BASELINES = ("value", "fitted", "zero", "zero_raw", "exact")
#: steps a fit segment runs on past its last kept state (capped by the task's episode length)
TAIL = 1000
#: environments the fit data steps side by side (chains of the algorithm's batch shape, fit_chunks rounded up
#: to a multiple): wide enough to keep a batched physics step busy, narrow enough to stay small in memory
FIT_WIDTH = 64


#: Where the fitted value network's training starts: the agent's own network (its error is then the agent's
#: before the first step and Monte-Carlo regression can only refine it), or a fresh initialization.
FIT_STARTS = ("agent", "fresh")


@dataclasses.dataclass(frozen=True)
class BaselineSettings:
    sizes: tuple = PAPER_SIZES["baselines"]
    estimates: int = 10                      # K estimates per baseline and N
    baselines: tuple = ("value", "fitted", "zero")   # + "exact", added on the LQR task
    fit_pairs: int = 500_000                 # pairs the fitted value network learns from (CL: 5e5 or 5e6)
    fit_epochs: int = 30                     # passes of Adam over them, the learning rate annealed to 0
    fit_minibatch: int = 1024
    fit_lr: float = 1e-3
    fit_start: str = "agent"                 # the fit starts from the agent's value network, or "fresh" (new init)
    heldout_fraction: float = 0.1            # share of the fit pairs kept out to report the fit's error
    seed: int = 0
    batching: str = "vmap"
    resamples: int = 500
    objective: str = "surrogate"             # CL eq. 15's surrogate, or "own": the algorithm's own objective

    def check(self) -> None:
        sizes = tuple(self.sizes)
        require(len(sizes) > 0 and all(isinstance(n, int) and not isinstance(n, bool) for n in sizes),
             f"sizes must be a non-empty list of integers, got {self.sizes!r}")
        require(min(sizes) >= 2 and max(sizes) <= MAX_PAIRS, f"every N must be in 2 … 2^24, got {min(sizes)} … "
                                                          f"{max(sizes)}")
        require(isinstance(self.estimates, int) and self.estimates >= 2,
             f"estimates (K) must be an integer ≥ 2: a pairwise cosine needs two estimates; got {self.estimates!r}")
        unknown = [b for b in self.baselines if b not in BASELINES]
        require(len(self.baselines) > 0 and not unknown,
             f"baselines must be a non-empty list of {', '.join(BASELINES)}; got {list(self.baselines)!r}")
        require(0 < self.heldout_fraction < 1, f"heldout_fraction must be in (0, 1), got {self.heldout_fraction!r}")
        require(isinstance(self.fit_pairs, int) and self.fit_minibatch <= self.fit_pairs * (1 - self.heldout_fraction)
             <= MAX_PAIRS, f"fit_pairs must be an integer with at least one minibatch ({self.fit_minibatch}) of "
                           f"training pairs and at most 2^24, got {self.fit_pairs!r}")
        require(self.fit_epochs >= 1 and self.fit_lr > 0 and self.fit_minibatch >= 2,
             f"fit_epochs ≥ 1, fit_lr > 0 and fit_minibatch ≥ 2 are needed, got {self.fit_epochs}, {self.fit_lr}, "
             f"{self.fit_minibatch}")
        require(self.objective in gradients.OBJECTIVES, f"objective must be one of "
                                                        f"{', '.join(gradients.OBJECTIVES)}, got {self.objective!r}")
        require(self.fit_start in FIT_STARTS, f"fit_start must be one of {', '.join(FIT_STARTS)}, got "
                                              f"{self.fit_start!r}")
        check_batching(self.batching, self.resamples)


@dataclasses.dataclass(frozen=True)
class Resolved:
    baselines: tuple
    grid: Grid
    estimates: int
    own: Sampling         # the algorithm's own batch shape: the estimate streams sample it
    fit_chunks: int       # batches of the own shape sampled for the fit
    heldout_chunks: int   # of which kept out
    tail: int             # extra steps per segment (at most) so the returns of the fit states are complete
    fit_lanes: int        # fit chains sampled side by side (fit_chunks is a multiple)
    exact: bool
    batch_size: int
    objective: str = "surrogate"

    @property
    def fit_pairs(self) -> int:
        return self.fit_chunks * self.own.chunk


def resolve(settings: BaselineSettings, statics: list) -> Resolved:
    settings.check()
    first = statics[0]
    for s in statics[1:]:
        if (s.num_envs, s.steps_per_env, s.reset_every_iteration) != (first.num_envs, first.steps_per_env,
                                                                       first.reset_every_iteration):
            raise DiagnosticError("the runs' batches differ in shape (num_envs, steps_per_env or "
                                  "reset_every_iteration): measure them in separate studies")
    exact = first.task == "lqr" and tuple(first.policy_hidden) == ()
    if "exact" in settings.baselines and not exact:
        raise DiagnosticError(f"the 'exact' baseline needs the linear-quadratic task with a linear policy, not task "
                              f"{first.task!r}")
    baselines = tuple(dict.fromkeys(tuple(settings.baselines) + (("exact",) if exact else ())))
    own = algorithm_sampling(first)
    # at least 2 held-out chunks: the fit's comparison with the agent's network takes its error across them
    chunks = max(3, math.ceil(settings.fit_pairs / own.chunk)) if "fitted" in baselines else 0
    rounds = -(-chunks // max(1, FIT_WIDTH // own.envs))    # sequential segments per lane
    lanes = max(1, -(-chunks // rounds)) if chunks else 1  # as few extra chunks as the rounding needs
    chunks = rounds * lanes
    held = max(2, round(chunks * settings.heldout_fraction)) if chunks else 0
    sizes = snap_sizes(tuple(settings.sizes) + (own.chunk,), own.chunk)  # the algorithm's batch size always
    return Resolved(baselines=baselines, grid=Grid(sizes=sizes, chunk=own.chunk),
                    estimates=settings.estimates, own=own, fit_chunks=chunks, heldout_chunks=held,
                    tail=TAIL, fit_lanes=lanes, exact=exact, batch_size=own.chunk, objective=settings.objective)


@struct.dataclass
class FitData:
    obs: jax.Array       # [C, B, obs]
    returns: jax.Array   # [C, B] discounted returns of the learner's rewards
    complete: jax.Array  # [C, B] the episode ends inside the segment


def fit_data(env, r: Resolved, agent, knobs, key) -> FitData:
    """``fit_chunks`` batches of the algorithm's shape, each segment run on for the task's episode length
    (at most ``r.tail`` steps) so the returns of its states are complete; only the first ``steps`` states
    of a segment are kept. ``r.fit_lanes`` chains run side by side (each from its own start, continuing from
    chunk to chunk unless the algorithm resets), so the sequential length is fit_chunks / fit_lanes
    segments, not fit_chunks."""
    steps, tail = r.own.steps, min(env.max_episode_steps, r.tail)
    lanes = r.fit_lanes

    def segment(carry, k):
        k_start, k_roll = jax.random.split(k)
        if r.own.start == "reset":
            carry = start_carry(env, r.own, agent, knobs, k_start)
        data = stages.collect_batch(env, agent.policy, agent.value, carry, agent.filters, knobs, k_roll,
                                    steps + tail, frozen=True)
        tr = data.transitions
        env_major = lambda x: jnp.swapaxes(x[:steps], 0, 1).reshape((-1,) + x.shape[2:])  # noqa: E731
        out = FitData(obs=env_major(tr.obs), returns=env_major(discounted_returns(tr.reward, tr.done, knobs["gamma"])),
                      complete=env_major(episode_completes(tr.done)))
        return data.carry, out

    def body(carries, k):
        return jax.vmap(segment)(carries, jax.random.split(k, lanes))

    starts = jax.random.split(jax.random.fold_in(key, 1), lanes)
    carries = jax.vmap(lambda k: start_carry(env, r.own, agent, knobs, k))(starts)
    _, data = jax.lax.scan(body, carries, jax.random.split(key, r.fit_chunks // lanes))   # [S, lanes, B, ...]
    return jax.tree.map(lambda x: x.reshape((r.fit_chunks,) + x.shape[2:]), data)


@struct.dataclass
class FitReport:
    fitted_mre: jax.Array    # held-out MRE of the fitted network against the returns
    agent_mre: jax.Array     # the agent's value network on the same states
    fitted_ev: jax.Array     # explained variance 1 − Var(R − V)/Var(R) of the fitted network
    agent_ev: jax.Array
    final_loss: jax.Array    # the fit's training loss, mean over its last epoch
    improvement: jax.Array   # agent_mre − fitted_mre, the mean over held-out segments of the paired difference
    improvement_se: jax.Array  # its standard error across the held-out segments (independent batches)


def _explained_variance(v, target, mask):
    w = mask.astype(jnp.float32)
    n = jnp.maximum(jnp.sum(w), 1.0)
    mean = jnp.sum(w * target) / n
    var = jnp.sum(w * jnp.square(target - mean)) / n
    resid = target - v
    rmean = jnp.sum(w * resid) / n
    return 1.0 - jnp.sum(w * jnp.square(resid - rmean)) / n / jnp.maximum(var, 1e-30)


def fit_value(static, settings: BaselineSettings, r: Resolved, data: FitData, agent, knobs, key):
    """A value network fit to the complete returns of ``data`` (all but the held-out chunks), starting from
    the agent's network (``fit_start="agent"``) or a fresh one: ``fit_epochs`` passes of minibatch Adam on
    the squared error (algorithms.epochs.value_update with clipping off), the learning rate annealed linearly to 0.

    Both networks are then scored on the held-out chunks against the same Monte-Carlo returns; the paired
    difference of their relative errors is averaged per held-out chunk (each an independent batch of the
    algorithm's shape) and its standard error taken across the chunks, so "V* is closer to the true value
    than the agent's network" is a claim with a confidence bound. Returns the parameters and a
    :class:`FitReport`."""
    train = r.fit_chunks - r.heldout_chunks
    flat = lambda x: x[:train].reshape((-1,) + x.shape[2:])  # noqa: E731
    n = (train * r.own.chunk) // settings.fit_minibatch * settings.fit_minibatch
    obs, ret, ok = (flat(x)[:n] for x in (data.obs, data.returns, data.complete))
    batch = UpdateBatch(obs=obs, action=None, old_log_prob=None, advantages=None, old_values=jnp.zeros_like(ret),
                        value_targets=ret, value_mask=ok)
    plain = {**knobs, "value_clipping": jnp.bool_(False)}
    k_init, k_fit = jax.random.split(key)
    params = agent.value if settings.fit_start == "agent" else \
        networks.init_value(k_init, obs.shape[-1], static.value_hidden, knobs)
    opt = adam(knobs["adam_eps"]).init(params)

    def epoch(carry, e):
        p, s = carry
        lr = settings.fit_lr * (1.0 - e / settings.fit_epochs)
        p, s, losses = value_update(p, s, batch, lr, plain, jax.random.fold_in(k_fit, e), 1,
                                        n // settings.fit_minibatch)
        return (p, s), jnp.mean(losses)

    (params, _), losses = jax.lax.scan(epoch, (params, opt), jnp.arange(settings.fit_epochs))
    held = lambda x: x[train:].reshape((-1,) + x.shape[2:])  # noqa: E731
    h_obs, h_ret, h_ok = held(data.obs), held(data.returns), held(data.complete)
    v_fit = networks.value_apply(params, h_obs, knobs)
    v_agent = networks.value_apply(agent.value, h_obs, knobs)
    # per held-out chunk: the agent's MRE minus the fitted network's on the same states
    per_chunk = jax.vmap(lambda o, t, ok: mean_relative_error(networks.value_apply(agent.value, o, knobs), t, ok)
                         - mean_relative_error(networks.value_apply(params, o, knobs), t, ok))(
        data.obs[train:], data.returns[train:], data.complete[train:])
    ok = jnp.isfinite(per_chunk)
    m = jnp.maximum(jnp.sum(ok), 1)
    diff = jnp.where(ok, per_chunk, 0.0)
    mean = jnp.sum(diff) / m
    se = jnp.sqrt(jnp.sum(jnp.where(ok, jnp.square(diff - mean), 0.0)) / jnp.maximum(m - 1, 1) / m)
    report = FitReport(fitted_mre=mean_relative_error(v_fit, h_ret, h_ok),
                       agent_mre=mean_relative_error(v_agent, h_ret, h_ok),
                       fitted_ev=_explained_variance(v_fit, h_ret, h_ok),
                       agent_ev=_explained_variance(v_agent, h_ret, h_ok), final_loss=losses[-1],
                       improvement=mean, improvement_se=jnp.where(m > 1, se, jnp.nan))
    return params, report


def _unit(x):
    return x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), 1e-30)


#: the advantage estimator each baseline puts in the same GAE stream (sampling.ADVANTAGES), and whether the
#: estimate normalizes its advantages as the algorithm does
HEADS = {"value": ("gae", True), "fitted": ("gae", True), "zero": ("returns", True), "zero_raw": ("returns", False),
         "exact": ("gae_exact_value", True)}


def subject_program(env, static, settings: BaselineSettings, r: Resolved):
    def subject(agent, knobs, key):
        agent = agent.replace(filters=frozen_filters(env, r.own, agent, knobs, key))
        k_fit, k_net, k_streams = jax.random.split(jax.random.fold_in(key, 0x5EED), 3)
        keys = jax.vmap(lambda i: jax.random.fold_in(k_streams, i))(jnp.arange(r.estimates))
        nan = jnp.float32(jnp.nan)
        report, fitted = FitReport(nan, nan, nan, nan, nan, nan, nan), None
        if "fitted" in r.baselines:
            fitted, report = fit_value(static, settings, r, fit_data(env, r, agent, knobs, k_fit), agent, knobs,
                                       k_net)
        exact_value = stages.lqr_value(agent.policy, agent.filters, knobs) if "exact" in r.baselines else None
        # every baseline on the very same pairs: each stream is sampled once, one advantage head per baseline
        heads = tuple((HEADS[b][0], fitted if b == "fitted" else agent.value, HEADS[b][1]) for b in r.baselines)
        est, _ = jax.vmap(lambda k: stream(env, r.own, r.grid, agent, knobs, k, exact_value=exact_value,
                                           heads=heads))(keys)                               # [K, B, G, P]
        if r.objective == "own":   # the terms the algorithm's objective adds to the surrogate (gradients.py)
            est = est + gradients.objective_extra(env, static, r.own, agent, knobs, jax.random.fold_in(key, 0x0B1))
        unit = _unit(est)
        return {"pairwise": jnp.einsum("kbgp,lbgp->bgkl", unit, unit),
                "norm": jnp.transpose(jnp.linalg.norm(est, axis=-1), (1, 2, 0)), "fit": report}

    return subject


def program(static, settings: BaselineSettings, r: Resolved):
    env = envs.make(static.task, static.physics, static.physics_threads, static.solver, static.model)
    subject = subject_program(env, static, settings, r)
    return over_subjects(subject, settings.batching)


def memory_estimate(static, r: Resolved, num_subjects: int, obs_size: int, action_size: int, num_params: int,
                    batching: str) -> int:
    heads = len(r.baselines)
    per_pair = 2 * obs_size + 2 * action_size + 12 + heads + 3 * sum(static.policy_hidden) + \
        3 * sum(static.value_hidden)
    streams = r.estimates * r.own.chunk * per_pair + r.estimates * heads * (len(r.grid.sizes) + 4) * num_params
    fit = r.fit_pairs * (obs_size + 3) + r.fit_lanes * r.own.envs * (r.own.steps + r.tail) * per_pair
    return 4 * (streams + fit) * (num_subjects if batching == "vmap" else 1)


def batching_that_fits(static, r: Resolved, num_subjects: int, obs_size: int, action_size: int, num_params: int,
                       batching: str, have: int) -> str:
    """``batching`` when the study fits in ``have`` bytes; subjects vmapped together that do not fit run in turn
    ("map") instead; a study that does not fit even so is refused, naming what to lower."""
    shapes = (obs_size, action_size, num_params)
    if batching == "vmap" and memory_estimate(static, r, num_subjects, *shapes, "vmap") <= have:
        return "vmap"
    gradients.require_memory(memory_estimate(static, r, num_subjects, *shapes, "map"), "the baseline study",
                             f"a fit set of {r.fit_pairs:,} pairs and {r.estimates} streams per subject, subjects "
                             f"in turn", "lower fit_pairs or estimates (K)")
    return "map"


def pairs_total(r: Resolved, num_subjects: int) -> int:
    stream = r.grid.num_chunks * r.grid.chunk
    fit = r.fit_chunks * r.own.envs * (r.own.steps + r.tail)
    return num_subjects * (r.estimates * stream + fit)  # the baselines share each stream's pairs
