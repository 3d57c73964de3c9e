"""Gradient-estimate variance and distance to the true gradient: ONE compiled program (ref §4.2 items 1–2).

For every subject (an agent at a checkpointed iteration) the program runs
K + R independent streams of the frozen policy ([`pgdiag.diagnostics.sampling`][pgdiag.diagnostics.sampling]), all
vmapped together, and streams the sums of [`pgdiag.diagnostics.streaming`][pgdiag.diagnostics.streaming] through them:

* the K *estimate* streams give ĝ_N at every N of the grid, nested within a stream: at and above the algorithm's
  batch size B, N is the stream's first N pairs (whole batches, the first one the algorithm's own batch); below B, N
  pairs drawn uniformly at random from the stream's first whole batch, advantages computed on the whole batch
  ([`pgdiag.diagnostics.streaming`][pgdiag.diagnostics.streaming], ``Grid.pool``). So every estimate's states are
  distributed as in the algorithm's batch and only the count changes with N; a smaller N's pairs are among a larger
  N's;
* the R *truth* streams are merged into one "true" gradient from R × (stream length) ≥ ``true_pairs`` pairs,
  independent of the K estimates. CL Fig 3 takes it from ten million pairs against estimates up to 1e6: the scales
  ask [`TRUE_RATIO`][pgdiag.diagnostics.sizes.TRUE_RATIO] × the largest N or more, and the ratio reached is
  recorded (``true_ratio``). Its own convergence is measured by the split-half cosine
  ([`truth_ceiling`][pgdiag.studies.gradients.measure.truth_ceiling]): the truth streams split into two halves
  of ⌊R/2⌋ streams, the cosine between the halves' merged gradients;
* on the linear-quadratic task with a linear policy, ∇J of the reported return
  (γ = 1) is computed exactly from the closed forms.

What is differentiated (``objective``): ``"surrogate"`` (the default, as CL) is eq. 15's surrogate mean(r·Â) at
θ_old, whose gradient is the policy gradient estimate; ``"own"`` is the algorithm's own objective as its registry
entry writes it ([`pgdiag.algorithms`][pgdiag.algorithms]: PPO's entropy term, PPO-KL's penalty). Its gradient at
θ_old is the surrogate's plus that of the other terms, and the latter is computed once per subject on one batch of
the algorithm's own shape ([`objective_extra`][pgdiag.studies.gradients.measure.objective_extra]): exact for
terms that do not depend on the samples (the entropy of a state-independent σ) or whose gradient vanishes at θ_old
(a KL penalty, a ratio clip), a one-batch estimate for any other.

Per subject and N it returns the K×K matrix of pairwise cosines (CL Fig 2 is
the mean over the K(K−1)/2 pairs), each estimate's cosine to the true gradient
(Fig 3) and to ∇J, and the estimates' norms; per subject the truth's norm, its
split-half cosine and its cosine to ∇J. Everything is reduced in the
program: host memory does not grow with N or with the parameter count.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from pgdiag import algorithms, envs, stages
from pgdiag.config import Range, check_record, setting
from pgdiag.diagnostics.sampling import (ADVANTAGES, STARTS, Sampling, algorithm_sampling, frozen_filters,
                                         independent_burn_in, needs_warmup, start_carry)
from pgdiag.diagnostics.streaming import Grid, GradSums, estimate, merge, snap_sizes, stream, with_batch
from pgdiag.diagnostics.sizes import MAX_PAIRS, PAPER_SIZES
from pgdiag.diagnostics.subjects import BATCHING, SEED_RANGE, DiagnosticError, over_subjects, require

#: advantage modes that need the closed forms of the linear-quadratic task
EXACT_ADVANTAGES = ("exact", "gae_exact_value")

#: what a gradient study differentiates (see the module docstring)
OBJECTIVES = ("surrogate", "own")

def _at_most_max_pairs(sizes) -> "bool | str":
    return max(sizes) <= MAX_PAIRS or f"N = {max(sizes)} is beyond the largest allowed, 2^24 = {MAX_PAIRS}"


@dataclasses.dataclass(frozen=True)
class GradientSettings:
    """What a gradient study samples and computes. ``0`` means "the run's own"."""

    sizes: tuple = setting(PAPER_SIZES["gradients"], "The N of the estimates (state–action pairs).",
                           items=Range(2), item="N", nonempty=True, check=_at_most_max_pairs,
                           why="advantages are normalized by their std")
    estimates: int = setting(10, "K independent estimates at every N.", Range(2), label="estimates (K)",
                             why="a pairwise cosine needs two estimates")
    true_pairs: int = setting(0, "Pairs of the \"true\" gradient (0: none; CL Fig 3: 1e7, TRUE_RATIO × N ≤ 1e6).",
                              Range(0))
    envs: int = setting(0, "Environments per stream (0: the run's num_envs, a chunk is one batch; wider on MJX).",
                        Range(0))
    steps: int = setting(0, "Steps per environment per chunk (0: the run's steps_per_env).", Range(0))
    start: str = setting("algorithm", "Where streams start: the run's own (reset or checkpoint) or one of STARTS.",
                         ("algorithm",) + STARTS)
    burn_in: int = setting(0, "Steps discarded at a stream's start (start=\"stationary\").", Range(0))
    advantages: str = setting("gae", "How the advantages are estimated.", ADVANTAGES)
    normalize: bool = setting(True, "Normalize Â over each estimate's N pairs, as the algorithms do.")
    objective: str = setting("surrogate", "What is differentiated: CL eq. 15's surrogate, or the algorithm's own "
                                          "objective.", OBJECTIVES)
    with_batch_size: bool = setting(True, "Add the algorithm's batch size to the sizes (in place of a size within "
                                          "10% of it: a grid with both 1,000 and 1,024 draws a kink, not a point).")
    seed: int = setting(0, "Seed of the study's samples.", SEED_RANGE)
    batching: str = setting("vmap", "Subjects vmapped together, or \"map\": in turn (less memory).", BATCHING)

    def check(self) -> None:
        """Errors name the value and what is allowed; raised before anything compiles: each field against its
        declaration, then the true gradient's size against the sizes.

        A true gradient from fewer than `TRUE_RATIO` × the largest N (but at least the
        largest N) is allowed — a cheap look — and recorded: the study's ``true_ratio`` (manifest and
        subjects table) says how many times the largest N the truth holds, so a report can decline to
        judge the estimates against a truth barely better than they are."""
        check_record(self, DiagnosticError)
        largest = max(self.sizes)
        require(self.true_pairs == 0 or largest <= self.true_pairs <= 16 * MAX_PAIRS,
                f"true_pairs must be 0 (none) or between the largest N ({largest}) and {16 * MAX_PAIRS}, "
                f"got {self.true_pairs!r}")


@dataclasses.dataclass(frozen=True)
class Resolved:
    """The static shape of a study's program, resolved against the runs."""

    sampling: Sampling
    grid: Grid
    estimates: int
    truth_streams: int
    normalize: bool
    exact: bool       # ∇J is closed-form (the linear-quadratic task with a linear policy)
    batch_size: int   # the algorithm's batch (the vertical line)
    own: Sampling     # the algorithm's own batch shape (the statistics warm-up)
    objective: str = "surrogate"

    @property
    def true_pairs(self) -> int:
        return self.truth_streams * self.grid.num_chunks * self.grid.chunk

    @property
    def true_ratio(self) -> float:
        """The truth's pairs over the largest N (0 without a truth)."""
        return self.true_pairs / self.grid.sizes[-1]

    @property
    def half_streams(self) -> int:
        """Truth streams in each half of the split-half cosine (⌊R/2⌋; 0: no split, R < 2)."""
        return self.truth_streams // 2


def resolve(settings: GradientSettings, statics: list) -> Resolved:
    """Fill the run-dependent defaults and check they agree across the runs."""
    settings.check()
    first = statics[0]

    def own(s):
        start = settings.start if settings.start != "algorithm" else algorithm_sampling(s).start
        return (start, settings.envs or s.num_envs, settings.steps or s.steps_per_env,
                s.num_envs * s.steps_per_env)

    mine = own(first)
    for s in statics[1:]:
        if own(s) != mine:
            raise DiagnosticError(
                f"the runs sample differently by default ({mine[:3]} vs {own(s)[:3]} as (start, envs, steps)); "
                f"set start, envs and steps explicitly to measure them together")
    start, n_envs, steps, batch = mine
    exact = envs.exact_answers(first.task, first.policy_hidden, first.network) is not None
    if settings.advantages in EXACT_ADVANTAGES and not exact:
        raise DiagnosticError(f"advantages={settings.advantages!r} needs the task's exact answers (declared with "
                              f"the task, pgdiag.envs.ExactAnswers: the linear-quadratic task's hold for a linear "
                              f"policy, policy_hidden=(), of the 'mlp' network), not task {first.task!r} with hidden "
                              f"sizes {tuple(first.policy_hidden)} and network {first.network!r}")
    burn_in = settings.burn_in
    if start == "independent" and not burn_in:
        burn_in = independent_burn_in(first.task)
    sampling = Sampling(envs=n_envs, steps=steps, start=start, burn_in=burn_in, advantages=settings.advantages,
                        per_iteration=first.steps_per_env if start == "independent" else 0)
    requested = with_batch(settings.sizes, batch) if settings.with_batch_size else tuple(settings.sizes)
    # sizes below the batch are drawn from the stream's first batch (at most its first chunk), not its first
    # steps: only the count of pairs changes with N, not their states (CL §5.1, Figs 2/3)
    grid = Grid(sizes=snap_sizes(requested, sampling.chunk), chunk=sampling.chunk, pool=min(batch, sampling.chunk))
    stream_pairs = grid.num_chunks * grid.chunk
    truth = -(-settings.true_pairs // stream_pairs) if settings.true_pairs else 0
    own = algorithm_sampling(first)
    return Resolved(sampling=sampling, grid=grid, estimates=settings.estimates, truth_streams=truth,
                    normalize=settings.normalize, exact=exact, batch_size=batch, own=own, objective=settings.objective)


def _unit(x, axis=-1):
    return x / jnp.maximum(jnp.linalg.norm(x, axis=axis, keepdims=True), 1e-30)


def truth_ceiling(split_half, truth_streams: int):
    """The cosine of the true gradient itself to g, estimated from its split-half cosine ρ (NaN without a
    split): c = √(kρ / (1 + (k − 1)ρ)), k = R/⌊R/2⌋ (2 for an even R), 0 for ρ ≤ 0.

    Why. The truth from T pairs is ĝ_T = g + e, g = E[ĝ_T] the estimator's own limit (∇J where it is unbiased:
    ``true_to_exact`` measures the rest on the LQR task), e zero-mean noise with E|e|² = σ²/T. Its two halves of
    ⌊R/2⌋ streams (T_h = T/k pairs each) are h_i = g + e_i, independent. With many parameters, g·e_i and e_1·e_2 are
    small against |g|² and |e_i|² ≈ σ²/T_h, so ρ = cos(h_1, h_2) ≈ |g|²/(|g|² + σ²/T_h): x = σ²/(T_h|g|²) = 1/ρ − 1.
    The full truth has noise σ²/T = σ²/(k T_h), so cos(ĝ_T, g)² ≈ 1/(1 + x/k) = kρ/(1 + (k − 1)ρ) (the
    Spearman–Brown formula; k = 2: 2ρ/(1 + ρ)). With few parameters the concentration fails, but for small noise
    both sides depend only on the noise across g: 1 − cos(g + a, g + b) ≈ |a⊥ − b⊥|²/(2|g|²), so E[1 − ρ] ≈
    E|e_h⊥|²/|g|² and E[1 − cos(ĝ_T, g)] ≈ E|e_h⊥|²/(2k|g|²) = E[1 − ρ]/(2k) — the formula's own small-noise limit,
    in any dimension.

    What it bounds. An estimate ĝ_N independent of the truth has, by the same argument,
    cos(ĝ_N, ĝ_T) ≈ cos(ĝ_N, g)·c: even an estimate equal to g would show only c against the truth, so c is
    the ceiling of fig-grad-true's curves, and 1 − c the part of their distance to 1 that is the truth's
    own noise."""
    rho = np.asarray(split_half, np.float64)
    half = truth_streams // 2
    if not half:
        return np.full_like(rho, np.nan)
    k = truth_streams / half
    with np.errstate(invalid="ignore"):
        return np.sqrt(np.clip(k * rho / (1.0 + (k - 1.0) * rho), 0.0, 1.0))


def objective_extra(env, static, own: Sampling, agent, knobs, key) -> jax.Array:
    """∇_θ [objective − surrogate] at θ_old (flat): the part of the algorithm's own objective's gradient that
    the surrogate's lacks, on one batch of the algorithm's shape from where it would sample next."""
    k_start, k_roll = jax.random.split(key)
    batch = stages.collect_batch(env, agent.policy, agent.value, start_carry(env, own, agent, knobs, k_start),
                                 agent.filters, knobs, k_roll, own.steps, frozen=True).batch
    flat, unravel = ravel_pytree(agent.policy)
    algorithm = algorithms.get(static.algorithm)

    def extra(theta):
        terms = stages.objective_terms(unravel(theta), agent.policy, batch, knobs)
        return algorithm.objective(terms, knobs, agent.policy_opt) - jnp.mean(terms.ratio * terms.adv)

    return jax.grad(extra)(flat)


def subject_program(env, r: Resolved, static=None):
    """(agent, knobs, key) -> the reductions of one subject (see the module docstring); ``static`` (the runs'
    settings) names the algorithm whose objective ``objective="own"`` differentiates."""

    def subject(agent, knobs, key):
        warmed = needs_warmup(agent.filters)
        agent = agent.replace(filters=frozen_filters(env, r.own, agent, knobs, key))
        exact_value = exact_grad = None
        if r.exact:  # the task's closed forms: V^π of its own reward (γ = 1) and ∇J
            answers = envs.REGISTRY[static.task if static is not None else env.name].exact
            exact_value = answers.value(agent.policy, agent.filters.obs, knobs, 1.0)
            if r.sampling.advantages == "gae_exact_value":
                exact_value = stages.exact_value(answers, agent.policy, agent.filters, knobs)
            exact_grad = ravel_pytree(answers.gradient(agent.policy, agent.filters.obs, knobs))[0]
        keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(r.estimates + r.truth_streams))
        est, sums = jax.vmap(lambda k: stream(env, r.sampling, r.grid, agent, knobs, k, r.normalize,
                                              exact_value))(keys)
        extra = 0.0
        if r.objective == "own":
            extra = objective_extra(env, static, r.own, agent, knobs,
                                    jax.random.fold_in(key, r.estimates + r.truth_streams))
        est_k = est[:r.estimates] + extra                        # [K, G, P]
        unit = _unit(est_k)
        nan_gk = jnp.full(est_k.shape[:2], jnp.nan).T
        out = {"pairwise": jnp.einsum("kgp,lgp->gkl", unit, unit), "norm": jnp.linalg.norm(est_k, axis=-1).T,
               "to_true": nan_gk, "to_exact": nan_gk, "true_to_exact": jnp.float32(jnp.nan),
               "true_norm": jnp.float32(jnp.nan), "exact_norm": jnp.float32(jnp.nan), "warmed": warmed,
               "split_half": jnp.float32(jnp.nan)}
        truth = None
        if r.truth_streams:
            def merged(first, count):  # the sums of truth streams first … first + count − 1
                total = GradSums.zeros(est.shape[-1])
                for i in range(r.estimates + first, r.estimates + first + count):
                    total = merge(total, jax.tree.map(lambda x: x[i], sums))
                return total

            # the truth's own convergence: two disjoint halves of ⌊R/2⌋ streams (truth_ceiling); with R odd
            # the last stream is in the truth only
            h = r.half_streams
            halves = (merged(0, h), merged(h, h)) if h else ()
            total = merge(merge(*halves), merged(2 * h, r.truth_streams - 2 * h)) if h else merged(
                0, r.truth_streams)
            truth = estimate(total, r.normalize) + extra
            out.update(to_true=jnp.einsum("kgp,p->gk", unit, _unit(truth)), true_norm=jnp.linalg.norm(truth))
            if h:
                a, b = (_unit(estimate(x, r.normalize) + extra) for x in halves)
                out.update(split_half=a @ b)
        if exact_grad is not None:
            out.update(to_exact=jnp.einsum("kgp,p->gk", unit, _unit(exact_grad)),
                       exact_norm=jnp.linalg.norm(exact_grad))
            if truth is not None:
                out.update(true_to_exact=_unit(truth) @ _unit(exact_grad))
        return out

    return subject


def program(static, r: Resolved, batching: str = "vmap"):
    """The study's jitted program over stacked subjects: (states, knobs, keys) -> reductions [S, ...]."""
    env = envs.make(static.task, static.physics, static.physics_threads, static.solver, static.model)
    subject = subject_program(env, r, static)
    return over_subjects(subject, batching)


def pairs_total(r: Resolved, num_subjects: int) -> int:
    return num_subjects * (r.estimates + r.truth_streams) * (
        r.grid.num_chunks * r.grid.chunk + (r.sampling.burn_in * r.sampling.envs))
