"""fig-baselines (CL §5.2, Figs 5/16; ref §4.2 item 5): how much variance each baseline removes.

For every subject the program estimates the gradient K times at every N of
the grid with each baseline, all streams vmapped in one program:

* ``value`` — the agent's own value network (GAE, as the algorithm);
* ``fitted`` — a "true" value function V*: a value network of the agent's
  shape (from the agent's network, or fresh) fit to the Monte-Carlo returns
  of ``fit_pairs`` pairs of the frozen policy (:func:`fit_value`), then used
  in the same GAE;
* ``zero`` — no baseline: the discounted returns in place of the advantages;
* ``exact`` — on the linear-quadratic task, the exact V^π in the learner's
  units (:func:`pg_diag.stages.exact_value`) in the same GAE: the best a
  baseline can do.

Every baseline is computed on the very same pairs: each of the K streams is
sampled once and carries one advantage head per baseline (streaming.stream's
``heads``), so a difference in the pairwise cosine is the baseline's alone and
the study costs one rollout per stream, not one per baseline.

V* is a "true" value function (CL §5.2) only if it is closer to E[R | s] than
the agent's network, and closeness to a conditional mean is a squared-error
statement: for any V, E[(V(s) − R)²] = E[(V(s) − V^π(s))²] + E[(R − V^π(s))²],
the last term the same for every V. So :func:`fit_value` fits V* in rounds of
``fit_epochs`` epochs and after each round compares it with the agent's
network on at least 20 held-out batches (independent batches of the
algorithm's shape) by a one-sided paired t-test of their per-batch squared
errors against the complete Monte-Carlo returns; the fit stops once V* is
shown better or after ``fit_rounds`` rounds. Both networks' MSE, explained
variance and mean relative error are reported; on the linear-quadratic task
also their MSE against the exact V^π and the noise floor E[(R − V^π(s))²].
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
#: the fewest held-out batches the t-test is taken over (its degrees of freedom are one fewer)
MIN_HELDOUT_CHUNKS = 20
#: steps a fit segment runs on past its last kept state (capped by the task's episode length)
TAIL = 1000
#: environments the fit data steps side by side (chains of the algorithm's batch shape, fit_chunks rounded up
#: to a multiple): wide enough to keep a batched physics step busy, narrow enough to stay small in memory
FIT_WIDTH = 64


#: Where the fitted value network's training starts: the agent's own network (its error is then the agent's
#: before the first step and Monte-Carlo regression can only refine it), or a fresh initialization.
FIT_STARTS = ("agent", "fresh")


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


@dataclasses.dataclass(frozen=True)
class BaselineSettings:
    sizes: tuple = PAPER_SIZES["baselines"]
    estimates: int = 10                      # K estimates per baseline and N
    baselines: tuple = ("value", "fitted", "zero")   # + "exact", added on the LQR task
    fit_pairs: int = 500_000                 # pairs the fitted value network learns from (CL: 5e5 or 5e6)
    fit_epochs: int = 30                     # passes of Adam over them per round, the learning rate annealed to 0
    fit_rounds: int = 4                      # the most rounds of fit_epochs epochs (the cap of the stopping rule)
    fit_level: float = 0.05                  # level of "V* shown better" over all rounds (each round's test at
    #                                          fit_level / fit_rounds: Bonferroni over the looks)
    fit_minibatch: int = 1024
    fit_lr: float = 1e-3
    fit_start: str = "agent"                 # the fit starts from the agent's value network, or "fresh" (new init)
    heldout_fraction: float = 0.1            # share of the fit pairs kept out to report the fit's error
    heldout_chunks: int = MIN_HELDOUT_CHUNKS  # held-out batches at least (independent streams; the t-test's sample)
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
        require(_is_int(self.heldout_chunks) and self.heldout_chunks >= MIN_HELDOUT_CHUNKS,
                f"heldout_chunks must be an integer ≥ {MIN_HELDOUT_CHUNKS} (the held-out batches V* and the agent's "
                f"network are compared on by a paired t-test), got {self.heldout_chunks!r}")
        require(_is_int(self.fit_rounds) and self.fit_rounds >= 1,
                f"fit_rounds must be an integer ≥ 1 (the most rounds of fit_epochs epochs V* is fit for), got "
                f"{self.fit_rounds!r}")
        require(isinstance(self.fit_level, (int, float)) and 0 < self.fit_level < 1,
                f"fit_level must be in (0, 1) (the level of the one-sided test that V* is better), got "
                f"{self.fit_level!r}")
        require(isinstance(self.fit_pairs, int) and self.fit_minibatch <= self.fit_pairs * (1 - self.heldout_fraction)
             <= MAX_PAIRS, f"fit_pairs must be an integer with at least one minibatch ({self.fit_minibatch}) of "
                           f"training pairs and at most 2^24, got {self.fit_pairs!r}")
        require(_is_int(self.fit_epochs) and self.fit_epochs >= 1 and self.fit_lr > 0 and self.fit_minibatch >= 2,
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
    fit_chunks: int       # batches of the own shape sampled for the fit, held-out ones included (the last)
    heldout_chunks: int   # of which kept out: V* and the agent's network are compared on them
    tail: int             # extra steps per segment (at most) so the returns of the fit states are complete
    fit_lanes: int        # training chains sampled side by side (the chunks they sample are a multiple)
    exact: bool
    batch_size: int
    objective: str = "surrogate"

    @property
    def fit_pairs(self) -> int:
        return self.fit_chunks * self.own.chunk

    @property
    def heldout_apart(self) -> bool:
        """Whether the held-out batches are sampled as streams of their own: an algorithm that does not reset
        continues its chains from chunk to chunk, so a held-out batch on a training chain would neither be
        independent of the training data nor of the other held-out batches. From reset every chunk is."""
        return self.own.start != "reset"


def resolve(settings: BaselineSettings, statics: list) -> Resolved:
    settings.check()
    first = statics[0]
    for s in statics[1:]:
        if (s.num_envs, s.steps_per_env, s.reset_every_iteration) != (first.num_envs, first.steps_per_env,
                                                                       first.reset_every_iteration):
            raise DiagnosticError("the runs' batches differ in shape (num_envs, steps_per_env or "
                                  "reset_every_iteration): measure them in separate studies")
    exact = envs.exact_answers(first.task, first.policy_hidden) is not None
    if "exact" in settings.baselines and not exact:
        raise DiagnosticError(f"the 'exact' baseline needs the task's exact answers (declared with the task, "
                              f"pg_diag.envs.ExactAnswers: the linear-quadratic task's hold for a linear policy), "
                              f"not task {first.task!r} with hidden sizes {tuple(first.policy_hidden)}")
    baselines = tuple(dict.fromkeys(tuple(settings.baselines) + (("exact",) if exact else ())))
    own = algorithm_sampling(first)
    train = held = 0
    if "fitted" in baselines:
        # fit_pairs less its held-out share trains V*; the held-out share, at least heldout_chunks batches, is the
        # sample of the t-test
        chunks = math.ceil(settings.fit_pairs / own.chunk)
        share = round(chunks * settings.heldout_fraction)
        train, held = max(1, chunks - share), max(settings.heldout_chunks, share)
    laid = train if own.start != "reset" else train + held    # chunks the side-by-side chains sample
    rounds = -(-laid // max(1, FIT_WIDTH // own.envs)) if laid else 0   # sequential segments per lane
    lanes = max(1, -(-laid // rounds)) if laid else 1   # as few extra chunks as the rounding needs
    train += rounds * lanes - laid                       # the extra ones train
    sizes = snap_sizes(tuple(settings.sizes) + (own.chunk,), own.chunk)  # the algorithm's batch size always
    # sizes below the batch drawn at random from a whole batch, as in the gradient study (streaming.Grid.pool):
    # every N sees the batch's state distribution
    return Resolved(baselines=baselines, grid=Grid(sizes=sizes, chunk=own.chunk, pool=own.chunk),
                    estimates=settings.estimates, own=own, fit_chunks=train + held, heldout_chunks=held,
                    tail=TAIL, fit_lanes=lanes, exact=exact, batch_size=own.chunk, objective=settings.objective)


@struct.dataclass
class FitData:
    obs: jax.Array       # [C, B, obs]
    returns: jax.Array   # [C, B] discounted returns of the learner's rewards
    complete: jax.Array  # [C, B] the episode ends inside the segment
    exact: jax.Array | None = None   # [C, B] the exact V^π of each state (the linear-quadratic task), else None


def fit_data(env, r: Resolved, agent, knobs, key, exact_value=None) -> FitData:
    """``fit_chunks`` batches of the algorithm's shape, each segment run on for the task's episode length
    (at most ``r.tail`` steps) so the returns of its states are complete; only the first ``steps`` states
    of a segment are kept. ``r.fit_lanes`` chains run side by side (each from its own start, continuing from
    chunk to chunk unless the algorithm resets), so the sequential length is a few segments, not fit_chunks.
    The last ``r.heldout_chunks`` batches are held out, each an independent sample of the policy's batches:
    from reset, any chunk is; otherwise (:attr:`Resolved.heldout_apart`) each is a stream of its own, started
    as every diagnostic stream is (:func:`~pg_diag.diagnostics.sampling.start_carry`), one segment long.
    ``exact_value`` (raw state -> V^π, the linear-quadratic task): also the exact value of every kept state."""
    steps, tail = r.own.steps, min(env.max_episode_steps, r.tail)
    lanes = r.fit_lanes
    env_major = lambda x: jnp.swapaxes(x[:steps], 0, 1).reshape((-1,) + x.shape[2:])  # noqa: E731

    def segment(carry, k):
        k_start, k_roll = jax.random.split(k)
        if r.own.start == "reset":
            carry = start_carry(env, r.own, agent, knobs, k_start)
        data = stages.collect_batch(env, agent.policy, agent.value, carry, agent.filters, knobs, k_roll,
                                    steps + tail, frozen=True, keep_raw_obs=exact_value is not None)
        tr = data.transitions
        out = FitData(obs=env_major(tr.obs), returns=env_major(discounted_returns(tr.reward, tr.done, knobs["gamma"])),
                      complete=env_major(episode_completes(tr.done)),
                      exact=None if exact_value is None else env_major(exact_value(tr.raw_obs[:steps])))
        return data.carry, out

    def body(carries, k):
        return jax.vmap(segment)(carries, jax.random.split(k, lanes))

    laid = r.fit_chunks - (r.heldout_chunks if r.heldout_apart else 0)
    starts = jax.random.split(jax.random.fold_in(key, 1), lanes)
    carries = jax.vmap(lambda k: start_carry(env, r.own, agent, knobs, k))(starts)
    _, data = jax.lax.scan(body, carries, jax.random.split(key, laid // lanes))   # [S, lanes, B, ...]
    data = jax.tree.map(lambda x: x.reshape((laid,) + x.shape[2:]), data)
    if r.heldout_apart and r.heldout_chunks:
        def own_stream(k):
            k_start, k_seg = jax.random.split(k)
            return segment(start_carry(env, r.own, agent, knobs, k_start), k_seg)[1]

        held = jax.vmap(own_stream)(jax.random.split(jax.random.fold_in(key, 2), r.heldout_chunks))
        data = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), data, held)
    return data


@struct.dataclass
class FitReport:
    """V*'s fit and its comparison with the agent's network on the held-out batches (all scalars; NaN where
    no fit was made, and the ``*exact*`` fields off the linear-quadratic task)."""
    fitted_mre: jax.Array    # held-out MRE of the fitted network against the returns
    agent_mre: jax.Array     # the agent's value network on the same states
    fitted_ev: jax.Array     # explained variance 1 − Var(R − V)/Var(R) of the fitted network
    agent_ev: jax.Array
    final_loss: jax.Array    # the fit's training loss, mean over its last epoch
    improvement: jax.Array   # agent_mre − fitted_mre, the mean over held-out segments of the paired difference
    improvement_se: jax.Array  # its standard error across the held-out segments (independent batches)
    fitted_mse: jax.Array    # held-out mean squared error of the fitted network against the returns
    agent_mse: jax.Array     # the agent's network on the same states
    mse_improvement: jax.Array     # agent − fitted MSE: the mean over held-out batches of the paired difference
    mse_improvement_se: jax.Array  # its standard error across the held-out batches
    fit_t: jax.Array         # the paired t statistic of mse_improvement (heldout_chunks − 1 degrees of freedom)
    fit_p: jax.Array         # its one-sided p-value (H1: the fitted network has the lower MSE), last round
    fitted_better: jax.Array  # bool: fit_p < fit_level / fit_rounds after some round (the fit stopped there)
    fit_rounds_used: jax.Array  # int: rounds of fit_epochs epochs run (the cap fit_rounds when never better)
    fit_epochs_used: jax.Array  # int: fit_rounds_used × fit_epochs
    heldout_chunks: jax.Array   # int: held-out batches the test is taken over
    fitted_mse_exact: jax.Array  # LQR: MSE of the fitted network against the exact V^π on the held-out states
    agent_mse_exact: jax.Array   # LQR: the agent's network
    exact_mse: jax.Array         # LQR: MSE of V^π against the returns: the noise floor no network can go below


def empty_report() -> FitReport:
    """The report of a study without V*."""
    nan, zero = jnp.float32(jnp.nan), jnp.int32(0)
    ints = {"fit_rounds_used", "fit_epochs_used", "heldout_chunks"}
    return FitReport(**{f.name: jnp.bool_(False) if f.name == "fitted_better" else zero if f.name in ints else nan
                        for f in dataclasses.fields(FitReport)})


def _explained_variance(v, target, mask):
    w = mask.astype(jnp.float32)
    n = jnp.maximum(jnp.sum(w), 1.0)
    mean = jnp.sum(w * target) / n
    var = jnp.sum(w * jnp.square(target - mean)) / n
    resid = target - v
    rmean = jnp.sum(w * resid) / n
    return 1.0 - jnp.sum(w * jnp.square(resid - rmean)) / n / jnp.maximum(var, 1e-30)


def _mse(v, target, mask, axis=None):
    """Mean of (v − target)² over ``mask`` (along ``axis``); NaN where nothing is selected."""
    n = jnp.sum(mask, axis=axis)
    sq = jnp.sum(jnp.where(mask, jnp.square(v - target), 0.0), axis=axis)
    return jnp.where(n > 0, sq / jnp.maximum(n, 1), jnp.nan)


@struct.dataclass
class PairedT:
    mean: jax.Array   # mean of the differences
    se: jax.Array     # its standard error, sd / √n (sd with n − 1)
    t: jax.Array      # mean / se
    n: jax.Array      # differences counted (the finite ones)
    p: jax.Array      # one-sided p-value of H1: the true mean > 0 (Student's t, n − 1 degrees of freedom)


def student_t_sf(t, df):
    """P(T > t) for Student's t with ``df`` degrees of freedom (traced; any df > 0), through the regularized
    incomplete beta function: P(|T| > |t|) = I_{df/(df+t²)}(df/2, 1/2)."""
    tail = 0.5 * jax.scipy.special.betainc(df / 2.0, 0.5, df / (df + jnp.square(t)))
    return jnp.where(t >= 0, tail, 1.0 - tail)


def paired_t(diff, valid=None) -> PairedT:
    """The one-sided paired t-test of ``diff`` (per-batch differences; those not ``valid`` or not finite are
    left out): NaN p-value with fewer than two differences; ±∞ t when the differences are all equal and
    non-zero."""
    ok = jnp.isfinite(diff) if valid is None else valid & jnp.isfinite(diff)
    n = jnp.sum(ok)
    d = jnp.where(ok, diff, 0.0)
    mean = jnp.sum(d) / jnp.maximum(n, 1)
    var = jnp.sum(jnp.where(ok, jnp.square(d - mean), 0.0)) / jnp.maximum(n - 1, 1)
    se = jnp.sqrt(var / jnp.maximum(n, 1))
    t = jnp.where(se > 0, mean / jnp.where(se > 0, se, 1.0), jnp.sign(mean) * jnp.inf)
    t = jnp.where(mean == 0, jnp.where(se > 0, t, jnp.nan), t)
    p = jnp.where(n >= 2, student_t_sf(t, jnp.maximum(n - 1, 1).astype(jnp.float32)), jnp.nan)
    return PairedT(mean=mean, se=jnp.where(n >= 2, se, jnp.nan), t=jnp.where(n >= 2, t, jnp.nan), n=n, p=p)


def fit_value(static, settings: BaselineSettings, r: Resolved, data: FitData, agent, knobs, key, start=None):
    """A value network fit to the complete returns of ``data`` (all but the held-out chunks), starting from
    the agent's network (``fit_start="agent"``), a fresh one, or ``start`` (parameters) when given: rounds
    of ``fit_epochs`` passes of minibatch Adam on the squared error (algorithms.epochs.value_update with
    clipping off), the learning rate annealed linearly to 0 within each round and restarted at the next.

    After every round V* and the agent's network are scored on each held-out chunk (an independent batch
    of the algorithm's shape) by their mean squared error against the same Monte-Carlo returns, and a
    one-sided paired t-test of the per-chunk differences asks whether V* is closer to E[R | s] (CL §5.2:
    a "true" value function is one fit to the returns, so it must be shown to predict them better than the
    agent's network does). The fit stops at the first round the test says so at level fit_level /
    fit_rounds — Bonferroni over the rounds looked at, so "better" is a level-fit_level statement however
    many rounds ran — or after ``fit_rounds`` rounds. Under vmap a stopped subject's parameters stay as they
    are while the others go on (``lax.while_loop`` on a per-subject flag). Returns the parameters and a
    :class:`FitReport`."""
    train = r.fit_chunks - r.heldout_chunks
    flat = lambda x: x[:train].reshape((-1,) + x.shape[2:])  # noqa: E731
    n = (train * r.own.chunk) // settings.fit_minibatch * settings.fit_minibatch
    obs, ret, ok = (flat(x)[:n] for x in (data.obs, data.returns, data.complete))
    batch = UpdateBatch(obs=obs, action=None, old_log_prob=None, advantages=None, old_values=jnp.zeros_like(ret),
                        value_targets=ret, value_mask=ok)
    plain = {**knobs, "value_clipping": jnp.bool_(False)}
    k_init, k_fit = jax.random.split(key)
    if start is not None:
        params = start
    else:
        params = agent.value if settings.fit_start == "agent" else \
            networks.init_value(k_init, obs.shape[-1], static.value_hidden, knobs)
    opt = adam(knobs["adam_eps"]).init(params)
    E, cap = settings.fit_epochs, settings.fit_rounds
    look_level = settings.fit_level / cap

    # the held-out chunks [H, B]: per chunk, each network's mean squared error against the returns
    h_obs, h_ret, h_ok = data.obs[train:], data.returns[train:], data.complete[train:]
    v_agent = networks.value_apply(agent.value, h_obs, knobs)
    agent_chunk_mse = _mse(v_agent, h_ret, h_ok, axis=1)

    def test(p):
        return paired_t(agent_chunk_mse - _mse(networks.value_apply(p, h_obs, knobs), h_ret, h_ok, axis=1))

    def fit_round(carry):
        p, s, rnd, _, _ = carry

        def epoch(c, e):
            lr = settings.fit_lr * (1.0 - e / E)
            p, s, losses = value_update(c[0], c[1], batch, lr, plain, jax.random.fold_in(k_fit, rnd * E + e), 1,
                                        n // settings.fit_minibatch)
            return (p, s), jnp.mean(losses)

        (p, s), losses = jax.lax.scan(epoch, (p, s), jnp.arange(E))
        return p, s, rnd + 1, test(p).p < look_level, losses[-1]

    carry = (params, opt, jnp.int32(0), jnp.bool_(False), jnp.float32(jnp.nan))
    params, _, rounds, better, final_loss = jax.lax.while_loop(lambda c: ~c[3] & (c[2] < cap), fit_round, carry)

    tt = test(params)
    v_fit = networks.value_apply(params, h_obs, knobs)
    flat_h = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731
    fv, av, hr, hk = flat_h(v_fit), flat_h(v_agent), flat_h(h_ret), flat_h(h_ok)
    # per held-out chunk: the agent's MRE minus the fitted network's on the same states
    mre = jax.vmap(lambda a, f, t, ok: mean_relative_error(a, t, ok) - mean_relative_error(f, t, ok))(
        v_agent, v_fit, h_ret, h_ok)
    mre_t = paired_t(mre)
    nan = jnp.float32(jnp.nan)
    if data.exact is not None:
        h_exact = flat_h(data.exact[train:])
        exact = (_mse(fv, h_exact, hk), _mse(av, h_exact, hk), _mse(h_exact, hr, hk))
    else:
        exact = (nan, nan, nan)
    report = FitReport(fitted_mre=mean_relative_error(fv, hr, hk), agent_mre=mean_relative_error(av, hr, hk),
                       fitted_ev=_explained_variance(fv, hr, hk), agent_ev=_explained_variance(av, hr, hk),
                       final_loss=final_loss, improvement=mre_t.mean, improvement_se=mre_t.se,
                       fitted_mse=_mse(fv, hr, hk), agent_mse=_mse(av, hr, hk), mse_improvement=tt.mean,
                       mse_improvement_se=tt.se, fit_t=tt.t, fit_p=tt.p, fitted_better=better,
                       fit_rounds_used=rounds, fit_epochs_used=rounds * E, heldout_chunks=tt.n.astype(jnp.int32),
                       fitted_mse_exact=exact[0], agent_mse_exact=exact[1], exact_mse=exact[2])
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
        report, fitted = empty_report(), None
        exact_value = (stages.exact_value(envs.EXACT[static.task], agent.policy, agent.filters, knobs)
                       if r.exact else None)
        if "fitted" in r.baselines:
            fitted, report = fit_value(static, settings, r, fit_data(env, r, agent, knobs, k_fit, exact_value),
                                       agent, knobs, k_net)
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


def pairs_total(r: Resolved, num_subjects: int) -> int:
    stream = r.grid.num_chunks * r.grid.chunk
    fit = r.fit_chunks * r.own.envs * (r.own.steps + r.tail)
    return num_subjects * (r.estimates * stream + fit)  # the baselines share each stream's pairs
