"""fig-baselines (CL §5.2, Figs 5/16; ref §4.2 item 5): how much variance each baseline removes.

For every subject the program estimates the gradient K times at every N of
the grid with each baseline, all streams vmapped in one program:

* ``value`` — the agent's own value network (GAE, as the algorithm);
* ``fitted`` — a "true" value function V*: a value network of the agent's shape (from the agent's network, or fresh)
  fit to the Monte-Carlo returns of ``fit_pairs`` pairs of the frozen policy
  ([`fit_value`][pgdiag.studies.baselines.value_fit.fit_value]), then used in the same GAE;
* ``zero`` — no baseline: the discounted returns in place of the advantages;
* ``exact`` — on the linear-quadratic task, the exact V^π in the learner's
  units ([`pgdiag.stages.exact_value`][pgdiag.stages.exact_value]) in the same GAE: the best a
  baseline can do.

Every baseline is computed on the very same pairs: each of the K streams is
sampled once and carries one advantage head per baseline (streaming.stream's
``heads``), so a difference in the pairwise cosine is the baseline's alone and
the study costs one rollout per stream, not one per baseline.

V* is a "true" value function (CL §5.2) only if it is closer to E[R | s] than
the agent's network, and closeness to a conditional mean is a squared-error
statement: for any V, E[(V(s) − R)²] = E[(V(s) − V^π(s))²] + E[(R − V^π(s))²],
the last term the same for every V. So [`fit_value`][pgdiag.studies.baselines.value_fit.fit_value] fits V* in rounds of
``fit_epochs`` epochs and after each round compares it with the agent's
network on at least 20 held-out batches (independent batches of the
algorithm's shape) by a one-sided paired t-test of their per-batch squared
errors against the complete Monte-Carlo returns; the fit stops once V* is
shown better or after ``fit_rounds`` rounds. Both networks' MSE, explained
variance and mean relative error are reported; on the linear-quadratic task
also their MSE against the exact V^π and the noise floor E[(R − V^π(s))²].

A fit stopped at the first round its test batches favour it reads too well on
them, so the floor — V*'s own error against the returns, the level a value
function at E[R | s] reads from their noise, and the agent's on the same
states — is read on ``floor_chunks`` further held-out batches the stopping rule
never looks at (``floor_*`` in the fits table), against the complete returns
and against the returns cut at the batch end (the original's target).
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

from pgdiag import envs, stages
from pgdiag.config import Range, check_record, setting
from pgdiag.studies.gradients import measure as gradients
from pgdiag.diagnostics.subjects import BATCHING, SEED_RANGE
from pgdiag.diagnostics.sizes import MAX_PAIRS, PAPER_SIZES
from pgdiag.diagnostics.sampling import Sampling, algorithm_sampling, frozen_filters
from pgdiag.diagnostics.streaming import Grid, snap_sizes, stream, with_batch
from pgdiag.diagnostics.subjects import DiagnosticError, over_subjects, require
from pgdiag.run.shard import AXIS, over_devices
from pgdiag.studies.baselines.value_fit import empty_report, fit_data, fit_value

#: value: the agent's network; fitted: V* fit to Monte-Carlo returns; zero: returns in place of advantages, through
#: the algorithm's normalization (mean subtracted: CL §5.2's reading); zero_raw: the same returns with no
#: normalization at all (no baseline in any sense); exact: V^π in closed form (LQR)
BASELINES = ("value", "fitted", "zero", "zero_raw", "exact")
#: the fewest held-out batches the t-test is taken over (its degrees of freedom are one fewer)
MIN_HELDOUT_CHUNKS = 20
#: held-out batches by default on which the floor is read (V*'s and the agent's errors on batches the stopping
#: rule never looked at: a fit stopped when it looked good on its test batches reads too well there)
FLOOR_CHUNKS = 20
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
    """What a baseline study compares (the baselines at every N) and how V*, the fitted value network, is fit."""

    sizes: tuple = setting(PAPER_SIZES["baselines"], "The N of the estimates (state–action pairs).",
                           items=Range(2, MAX_PAIRS), item="N", nonempty=True)
    estimates: int = setting(10, "K estimates per baseline and N.", Range(2), label="estimates (K)",
                             why="a pairwise cosine needs two estimates")
    baselines: tuple = setting(("value", "fitted", "zero"), "The baselines compared (+ \"exact\", added on the "
                                                            "LQR task).", items=BASELINES, nonempty=True)
    fit_pairs: int = setting(500_000, "Pairs the fitted value network learns from (CL: 5e5 or 5e6).", Range(1))
    fit_epochs: int = setting(30, "Passes of Adam over them per round, the learning rate annealed to 0.", Range(1))
    fit_rounds: int = setting(4, "The most rounds of fit_epochs epochs V* is fit for (the cap of the stopping "
                                 "rule).", Range(1))
    fit_level: float = setting(0.05, "Level of \"V* shown better\" over all rounds (each round's test at "
                                     "fit_level / fit_rounds: Bonferroni over the looks).",
                               Range(0, 1, low_open=True, high_open=True),
                               why="the level of the one-sided test that V* is better")
    fit_minibatch: int = setting(1024, "Minibatch of the fit's Adam steps.", Range(2))
    fit_lr: float = setting(1e-3, "Learning rate of the fit's Adam.", Range(0, low_open=True))
    fit_start: str = setting("agent", "The fit starts from the agent's value network, or \"fresh\" (a new "
                                      "initialization).", FIT_STARTS)
    heldout_fraction: float = setting(0.1, "Share of the fit pairs kept out to report the fit's error.",
                                      Range(0, 1, low_open=True, high_open=True))
    heldout_chunks: int = setting(MIN_HELDOUT_CHUNKS, "Held-out batches at least (independent streams; the "
                                                      "t-test's sample).", Range(MIN_HELDOUT_CHUNKS),
                                  why="the held-out batches V* and the agent's network are compared on by a "
                                      "paired t-test")
    floor_chunks: int = setting(FLOOR_CHUNKS, "Further held-out batches, never looked at by the stopping rule: the "
                                              "floor (V*'s own error) and the agent's error on the same states.",
                                Range(2), why="the held-out batches, apart from the t-test's, that V*'s and the "
                                              "agent's errors are read on")
    seed: int = setting(0, "Seed of the study's samples.", SEED_RANGE)
    batching: str = setting("vmap", "Subjects vmapped together, or \"map\": in turn (less memory).",
                            BATCHING)
    objective: str = setting("surrogate", "CL eq. 15's surrogate, or \"own\": the algorithm's own objective.",
                             gradients.OBJECTIVES)

    def check(self) -> None:
        """Each field against its declaration, then the fit's training pairs against its minibatch."""
        check_record(self, DiagnosticError)
        training = self.fit_pairs * (1 - self.heldout_fraction)
        require(self.fit_minibatch <= training <= MAX_PAIRS,
                f"fit_pairs must be an integer with at least one minibatch ({self.fit_minibatch}) of training pairs "
                f"and at most 2^24, got {self.fit_pairs!r}")


@dataclasses.dataclass(frozen=True)
class Resolved:
    baselines: tuple
    grid: Grid
    estimates: int
    own: Sampling         # the algorithm's own batch shape: the estimate streams sample it
    fit_chunks: int       # batches of the own shape sampled for the fit, held-out ones included (the last)
    heldout_chunks: int   # of which kept out: V* and the agent's network are compared on them (the stopping rule)
    tail: int             # extra steps per segment (at most) so the returns of the fit states are complete
    fit_lanes: int        # training chains sampled side by side (the chunks they sample are a multiple)
    exact: bool
    batch_size: int
    objective: str = "surrogate"
    floor_chunks: int = 0  # and after them kept out too, never looked at while fitting: the floor is read there

    @property
    def fit_pairs(self) -> int:
        return self.fit_chunks * self.own.chunk

    @property
    def kept_out(self) -> int:
        """Batches V* never trains on: the t-test's (``heldout_chunks``), then the floor's (``floor_chunks``)."""
        return self.heldout_chunks + self.floor_chunks

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
    exact = envs.exact_answers(first.task, first.policy_hidden, first.network) is not None
    if "exact" in settings.baselines and not exact:
        raise DiagnosticError(f"the 'exact' baseline needs the task's exact answers (declared with the task, "
                              f"pgdiag.envs.ExactAnswers: the linear-quadratic task's hold for a linear policy "
                              f"of the 'mlp' network), not task {first.task!r} with hidden sizes "
                              f"{tuple(first.policy_hidden)} and network {first.network!r}")
    baselines = tuple(dict.fromkeys(tuple(settings.baselines) + (("exact",) if exact else ())))
    own = algorithm_sampling(first)
    train = held = floor = 0
    if "fitted" in baselines:
        # fit_pairs less its held-out share trains V*; the held-out share, at least heldout_chunks batches, is the
        # sample of the t-test; floor_chunks more are kept out for the floor, which the stopping rule never sees
        chunks = math.ceil(settings.fit_pairs / own.chunk)
        share = round(chunks * settings.heldout_fraction)
        train, held, floor = max(1, chunks - share), max(settings.heldout_chunks, share), settings.floor_chunks
    laid = train if own.start != "reset" else train + held + floor   # chunks the side-by-side chains sample
    rounds = -(-laid // max(1, FIT_WIDTH // own.envs)) if laid else 0   # sequential segments per lane
    lanes = max(1, -(-laid // rounds)) if laid else 1   # as few extra chunks as the rounding needs
    train += rounds * lanes - laid                       # the extra ones train
    sizes = snap_sizes(with_batch(settings.sizes, own.chunk), own.chunk)  # the algorithm's batch size always
    # sizes below the batch drawn at random from a whole batch, as in the gradient study (streaming.Grid.pool):
    # every N sees the batch's state distribution
    return Resolved(baselines=baselines, grid=Grid(sizes=sizes, chunk=own.chunk, pool=own.chunk),
                    estimates=settings.estimates, own=own, fit_chunks=train + held + floor, heldout_chunks=held,
                    tail=TAIL, fit_lanes=lanes, exact=exact, batch_size=own.chunk, objective=settings.objective,
                    floor_chunks=floor)


def _unit(x):
    return x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), 1e-30)


#: the advantage estimator each baseline puts in the same GAE stream (sampling.ADVANTAGES), and whether the
#: estimate normalizes its advantages as the algorithm does
HEADS = {"value": ("gae", True), "fitted": ("gae", True), "zero": ("returns", True), "zero_raw": ("returns", False),
         "exact": ("gae_exact_value", True)}


def phases(env, static, settings: BaselineSettings, r: Resolved):
    """One subject's measurement in three parts, ``(agent, knobs, key)`` first: ``prepare`` (the frozen filters and
    V*'s fit data), ``fit`` (V*, [`fit_value`][pgdiag.studies.baselines.value_fit.fit_value]) and ``finish`` (every
    baseline's estimates on the same streams)."""
    def keys_of(key):
        return jax.random.split(jax.random.fold_in(key, 0x5EED), 3)   # the fit's data, V*'s fit, the streams

    def exact_of(agent, knobs):
        return (stages.exact_value(envs.REGISTRY[static.task].exact, agent.policy, agent.filters, knobs)
                if r.exact else None)

    def prepare(agent, knobs, key):
        agent = agent.replace(filters=frozen_filters(env, r.own, agent, knobs, key))
        if "fitted" not in r.baselines:
            return agent, None
        return agent, fit_data(env, r, agent, knobs, keys_of(key)[0], exact_of(agent, knobs))

    def fit(agent, knobs, key, data):
        if data is None:
            return None, empty_report()
        return fit_value(static, settings, r, data, agent, knobs, keys_of(key)[1])

    def finish(agent, knobs, key, fitted, report):
        exact_value, k_streams = exact_of(agent, knobs), keys_of(key)[2]
        keys = jax.vmap(lambda i: jax.random.fold_in(k_streams, i))(jnp.arange(r.estimates))
        # every baseline on the very same pairs: each stream is sampled once, one advantage head per baseline
        heads = tuple((HEADS[b][0], fitted if b == "fitted" else agent.value, HEADS[b][1]) for b in r.baselines)
        est, _ = jax.vmap(lambda k: stream(env, r.own, r.grid, agent, knobs, k, exact_value=exact_value,
                                           heads=heads))(keys)                               # [K, B, G, P]
        if r.objective == "own":   # the terms the algorithm's objective adds to the surrogate (gradients.py)
            est = est + gradients.objective_extra(env, static, r.own, agent, knobs, jax.random.fold_in(key, 0x0B1))
        unit = _unit(est)
        return {"pairwise": jnp.einsum("kbgp,lbgp->bgkl", unit, unit),
                "norm": jnp.transpose(jnp.linalg.norm(est, axis=-1), (1, 2, 0)), "fit": report}

    return prepare, fit, finish


def subject_program(env, static, settings: BaselineSettings, r: Resolved):
    """One subject's measurement, ``(agent, knobs, key) -> outputs``: its [`phases`][pgdiag.studies.baselines.
    measure.phases] in turn."""
    prepare, fit, finish = phases(env, static, settings, r)

    def subject(agent, knobs, key):
        agent, data = prepare(agent, knobs, key)
        return finish(agent, knobs, key, *fit(agent, knobs, key, data))

    return subject


def program(static, settings: BaselineSettings, r: Resolved):
    """The study's program over stacked subjects. Vmapped, V*'s fits still run one subject after another: a fit
    stops at the round its test shows it better, and under vmap every subject would run the rounds of the slowest
    (one subject of 42 needing 4 rounds made all 42 fit four times)."""
    env = envs.make(static.task, static.physics, static.physics_threads, static.solver, static.model)
    if settings.batching != "vmap" or "fitted" not in r.baselines:
        return over_subjects(subject_program(env, static, settings, r), settings.batching)
    prepare, fit, finish = phases(env, static, settings, r)

    def fn(states, knobs, keys):
        agents, data = jax.vmap(prepare)(states, knobs, keys)
        fitted, report = jax.lax.map(lambda a: fit(*a), (agents, knobs, keys, data))
        return jax.vmap(finish)(agents, knobs, keys, fitted, report)

    return jax.jit(over_devices(fn, jax.sharding.PartitionSpec(AXIS)))


def pairs_total(r: Resolved, num_subjects: int) -> int:
    stream = r.grid.num_chunks * r.grid.chunk
    fit = r.fit_chunks * r.own.envs * (r.own.steps + r.tail)
    return num_subjects * (r.estimates * stream + fit)  # the baselines share each stream's pairs
