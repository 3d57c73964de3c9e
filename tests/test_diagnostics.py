"""Gradient and step diagnostics: streamed estimates against direct computation, the unbiased estimator
against the exact LQR gradient, the studies' tables, and bad input refused before compiling.

The statistical tests fix their seeds; their bounds and false-failure rates are stated where they are
asserted.
"""

import dataclasses
import json
import math
import os
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from jax.flatten_util import ravel_pytree

from pgdiag import make_train, networks, preset, seed_key, stages, sweep
from pgdiag.diagnostics import (GRADIENTS, DiagnosticError, engine, gradient_study, load_gradient_study,
                                load_step_study, step_study)
from pgdiag.diagnostics.sampling import Sampling, algorithm_sampling, sample_chunk, start_carry
from pgdiag.diagnostics.streaming import GradSums, Grid, chunk_sums, merge, size_masks, snap_sizes, stream
from pgdiag.diagnostics.tables import crossing
from pgdiag.envs import lqr
from pgdiag.normalize import RunningStat
from pgdiag.objectives import normalize_advantages, probability_ratio, surrogate
from pgdiag.run import CompileCounter

SIZES = (100, 1000, 4096)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """PPO (two seeds) and TRPO (one) on point_mass, checkpoints after iterations 0 and 2; every PPO run
    here has the same program (2 agents, 1-iteration chunks), compiled once."""
    root = tmp_path_factory.mktemp("diag")
    out = {}
    for algo, seeds in (("ppo", 2), ("trpo", 1)):
        cfg = preset(algo, "point_mass").replace(num_iterations=3, checkpoint_at=(0, 2))
        out[algo] = str(root / algo)
        sweep(cfg, seeds=seeds, out=out[algo], chunk_iterations=1)
    out["bare"] = str(root / "bare")  # no checkpoint kept
    sweep(preset("ppo", "point_mass").replace(num_iterations=3), seeds=2, out=out["bare"], chunk_iterations=1)
    return out


@pytest.fixture(scope="module")
def agent(runs):
    """PPO agent 0 after iteration 2: (env, state, knobs)."""
    from pgdiag import load_checkpoint, load_run

    run = load_run(runs["ppo"])
    cfg = run.config(0)
    return make_train(cfg.static).env, jax.tree.map(lambda x: x[0], load_checkpoint(run, 2)), cfg.knobs.as_arrays()


# --- the streamed estimate -------------------------------------------------------------------------

def test_merged_moments_equal_the_two_pass_mean_and_sum_of_squares():
    """Chan's merge on hand-made advantages: chunks {1, 2, 3} and {10, 20}: mean 7.2,
    Σ(x − 7.2)² = 38.44 + 27.04 + 17.64 + 7.84 + 163.84 = 254.8."""
    def sums(x):
        x = jnp.asarray(x, jnp.float32)
        return GradSums(n=jnp.int32(x.size), mean=jnp.mean(x), m2=jnp.sum((x - jnp.mean(x)) ** 2),
                        adv_score=jnp.zeros(1), score=jnp.zeros(1))
    s = merge(merge(GradSums.zeros(1), sums([1.0, 2.0, 3.0])), sums([10.0, 20.0]))
    assert int(s.n) == 5 and float(s.mean) == pytest.approx(7.2, rel=1e-6)
    assert float(s.m2) == pytest.approx(254.8, rel=1e-6)


def test_sizes_below_a_chunk_are_exact_and_larger_ones_whole_chunks():
    assert snap_sizes([100, 1000, 3000, 10_000, 1000], 1024) == (100, 1000, 3072, 10_240)
    g = Grid(sizes=(100, 1000, 3072, 10_240), chunk=1024)
    assert g.partial == (100, 1000) and g.whole == (2, 9) and g.num_chunks == 10


@pytest.mark.parametrize("start,normalize,pool", [("checkpoint", True, 0), ("reset", False, 0), ("reset", True, 32)])
def test_prefix_sums_equal_the_estimate_computed_from_scratch(agent, start, normalize, pool):
    """ĝ_N from the stream's prefix sums equals the gradient of the surrogate (objectives.surrogate with
    normalize_advantages over the N pairs, or the raw Â) taken by autodiff over the N pairs at once: the
    first N pairs, or, for N below ``pool``, the pairs of the first chunk that ``size_masks`` selects."""
    env, state, knobs = agent
    sampling = Sampling(envs=4, steps=16, start=start)
    grid = Grid(sizes=(10, 30, 40, 64, 128, 192), chunk=sampling.chunk, pool=pool)
    key = jax.random.PRNGKey(3)
    est, _ = jax.jit(lambda s, k: stream(env, sampling, grid, s, knobs, k, normalize))(state, key)
    masks = np.asarray(size_masks(grid, key))

    @jax.jit
    def direct(state, key):
        k_start, k_chunks = jax.random.split(key)
        carry, chunks = start_carry(env, sampling, state, knobs, k_start), []
        for c in range(grid.num_chunks):
            carry, chunk = sample_chunk(env, sampling, state, knobs, carry, jax.random.fold_in(k_chunks, c))
            chunks.append(chunk)
        pairs = jax.tree.map(lambda *x: jnp.concatenate(x), *chunks)
        flat, unravel = ravel_pytree(state.policy)
        out = []
        for g, n in enumerate(grid.sizes):
            keep = np.flatnonzero(masks[g]) if n < pool else np.arange(n)
            assert keep.size == n
            taken = jax.tree.map(lambda x, keep=keep: x[keep], pairs)
            adv = normalize_advantages(taken.advantage) if normalize else taken.advantage

            def objective(theta, taken=taken, adv=adv):
                mean, log_std = networks.policy_apply(unravel(theta), taken.obs, knobs)
                log_prob = networks.gaussian_log_prob(mean, log_std, taken.action)
                return surrogate(probability_ratio(log_prob, jax.lax.stop_gradient(log_prob)), adv)

            out.append(jax.grad(objective)(flat))
        return jnp.stack(out)

    # two programs summing the same ≤ 4,096 per-pair gradients in float32: relative error ~√n · 2^-24 ≈ 4e-6
    for i, (n, g) in enumerate(zip(grid.sizes, direct(state, key))):
        assert float(jnp.linalg.norm(est[i] - g) / jnp.linalg.norm(g)) < 1e-5, n


def test_sizes_below_the_batch_are_uniform_draws_from_the_whole_batch():
    """A chunk of E = 8 environments × T = 256 steps from reset, pairs environment-major (pair p is step
    p mod T of its segment), the first batch (pool) its first 4 segments, 1,024 pairs. Each size N below the
    pool keeps exactly N of the pool's pairs, nested; 1,536 (≥ the pool) keeps the first 1,536 pairs.

    The kept pairs' time since reset has the whole batch's mean (T − 1)/2 = 127.5 at every N, where the
    first N pairs' would be (N − 1)/2 (4.5 at N = 10). Worked out: N pairs drawn without replacement from
    P = 1,024 whose t is uniform on 0 … T − 1 (σ² = (T² − 1)/12 = 5,461.25) have a mean of variance
    σ²/N · (P − N)/(P − 1); over S = 1,000 streams the average's standard error is that over S (0.74 at
    N = 10, 0.07 at N = 1,000). Asserted within 5 standard errors (false-failure rate ≈ 6e-7 each, the mean
    of 1,000 independent draws being close to normal)."""
    E, T, S = 8, 256, 1000
    grid = Grid(sizes=(10, 100, 1000, 1536, 2048), chunk=E * T, pool=4 * T)
    masks = np.asarray(jax.jit(jax.vmap(lambda k: size_masks(grid, k)))(
        jax.random.split(jax.random.PRNGKey(0), S)))                               # [S, M, C]
    assert masks.shape == (S, 5, E * T)                                            # 4 sizes in the chunk + whole
    counts = masks.sum(-1)
    assert np.all(counts == np.array([10, 100, 1000, 1536, 2048]))
    assert not masks[:, :3, 4 * T:].any()                                          # drawn from the pool only
    assert np.all(masks[:, :-1] <= masks[:, 1:])                                   # nested
    assert np.all(masks[:, 3] == (np.arange(E * T) < 1536))                        # at or above the pool: prefix
    t = np.arange(E * T) % T
    P, var_t = 4 * T, (T ** 2 - 1) / 12
    for g, n in enumerate((10, 100, 1000)):
        mean_t = (masks[:, g] * t).sum(-1) / n                                     # per stream
        se = math.sqrt(var_t / n * (P - n) / (P - 1) / S)
        assert abs(mean_t.mean() - (T - 1) / 2) < 5 * se, (n, mean_t.mean(), se)
    assert not np.array_equal(masks[0, 0], masks[1, 0])                            # each stream its own draw
    assert np.array_equal(np.asarray(size_masks(Grid(sizes=(10, 2048), chunk=E * T), jax.random.PRNGKey(0))),
                          np.arange(E * T)[None] < np.array([[10], [E * T]]))      # pool 0: prefixes
    with pytest.raises(ValueError, match="pool must be between 0 and the chunk"):
        Grid(sizes=(10,), chunk=64, pool=65)


def test_masked_chunk_sums_select_the_first_pairs(agent):
    env, state, knobs = agent
    sampling = Sampling(envs=2, steps=8, start="reset")
    masks = jnp.arange(16)[None] < jnp.array([5, 16])[:, None]

    @jax.jit
    def sums(state):
        _, chunk = sample_chunk(env, sampling, state, knobs, None, jax.random.PRNGKey(0))
        return chunk, chunk_sums(state.policy, knobs, chunk, masks)

    chunk, s = sums(state)
    assert [int(n) for n in s.n] == [5, 16]
    assert float(s.mean[0]) == pytest.approx(float(jnp.mean(chunk.advantage[:5])), rel=1e-5)


def test_unbiased_estimator_converges_to_the_exact_gradient_at_the_1_over_N_rate():
    """On the linear-quadratic task, with exact advantages (GAE on V^π, γ = 1), no normalization and
    stationary sampling (burn-in 1,000 steps: the occupancy is exact up to p^1000 ≈ 2e-9), the policy-
    gradient theorem gives E[ĝ_N] = (1 − p)·∇J exactly, so ĝ_N/(1 − p) is unbiased for ∇J at every N.

    * unbiased: at each N the mean of K = 100 estimates is within 4.5 standard errors of the exact ∇J
      in each of the 4 coordinates (16 comparisons; t-tail 4.5 with 99 d.o.f. ≈ 2e-5 each, under 4e-4 in
      all);
    * 1/N rate: MSE(N = 1,024)/MSE(N = 65,536) is 64 for an unbiased estimator whose variance falls as 1/N;
      the test accepts [16, 256], a factor 4 either side. A bootstrap of this very design puts the
      standard deviation of log(ratio) near 0.14, so the bounds sit ≈ 10 SDs away (a bias floor or a
      1/√N variance would give a ratio near 1 or 8)."""
    cfg = preset("ppo", "lqr")
    trainer = make_train(cfg.static)
    knobs = cfg.knobs.as_arrays()
    state = trainer.init(seed_key(1), knobs)
    policy = {**state.policy, "layers": [{"w": jnp.array([[-1.5], [-0.4]]), "b": jnp.array([0.2])}],
              "log_std": jnp.array([-0.5])}
    obs = RunningStat.from_moments(101, jnp.array([0.1, -0.2]), jnp.array([100.0, 25.0]))
    state = state.replace(policy=policy, filters=state.filters.replace(obs=obs))
    spec = lqr.default_spec()
    exact = np.asarray(ravel_pytree(lqr.exact_gradient(spec, policy, obs, knobs))[0], np.float64)
    U, u, c = lqr.value_function(spec, *lqr.affine_policy(policy, obs, knobs), 1.0)
    value = lambda s: jnp.einsum("...i,ij,...j->...", s, U, s) + s @ u + c  # noqa: E731

    sampling = Sampling(envs=16, steps=256, start="stationary", burn_in=1000, advantages="exact")
    grid = Grid(sizes=(1024, 4096, 16384, 65536), chunk=sampling.chunk)
    K = 100
    run = jax.jit(jax.vmap(lambda k: stream(trainer.env, sampling, grid, state, knobs, k, False, value)[0]))
    est = np.asarray(run(jax.random.split(jax.random.PRNGKey(0), K)), np.float64) / (1.0 - spec.p)
    err = est - exact[None, None]
    for g in range(len(grid.sizes)):
        z = err[:, g].mean(0) / (est[:, g].std(0, ddof=1) / math.sqrt(K))
        assert np.all(np.abs(z) < 4.5), (grid.sizes[g], z)
    mse = np.sum(err ** 2, axis=-1).mean(0)
    assert 16 < mse[0] / mse[-1] < 256, mse


# --- the true gradient's own convergence ---------------------------------------------------------------

def test_the_truth_ceiling_from_its_split_half_cosine():
    """Closed forms of c = √(kρ/(1 + (k − 1)ρ)), k = R/⌊R/2⌋: ρ = 0.5 with R = 10 (k = 2): √(2/3); with
    R = 3 (k = 3): √(1.5/2) = √0.75; ρ = 1: 1; ρ ≤ 0: 0; R = 1: no split (NaN).

    A constructed case where the answer is closed form: stream j's gradient is g + ε_j, |g| = 1, ε_j
    isotropic Gaussian in P = 200,000 dimensions with E|ε_j|² = v = 4. The halves (the first ⌊R/2⌋ streams,
    the next ⌊R/2⌋) have noise v/⌊R/2⌋ and the truth (all R) v/R, so the truth's cosine to g is
    1/√(1 + v/R) (0.8452 at R = 10, 0.6547 at R = 3): c from the halves' cosine must give it. Every cosine
    here fluctuates by about √(v/P) ≈ 0.0045 at most, so the tolerance 0.02 is over 4 standard deviations."""
    from pgdiag.studies.gradients.measure import truth_ceiling

    assert truth_ceiling(0.5, 10) == pytest.approx(math.sqrt(2 / 3))
    assert truth_ceiling(0.5, 3) == pytest.approx(math.sqrt(0.75))
    assert truth_ceiling(np.array([1.0, 0.0, -0.3]), 4).tolist() == [1.0, 0.0, 0.0]
    assert math.isnan(truth_ceiling(0.7, 1))
    rng = np.random.default_rng(0)
    P, v = 200_000, 4.0
    g = rng.standard_normal(P)
    g /= np.linalg.norm(g)
    cos = lambda a, b: a @ b / (np.linalg.norm(a) * np.linalg.norm(b))  # noqa: E731
    for R in (10, 3):
        streams = g + rng.standard_normal((R, P)) * math.sqrt(v / P)
        m = R // 2
        rho = cos(streams[:m].mean(0), streams[m:2 * m].mean(0))
        truth = streams.mean(0)
        assert truth_ceiling(rho, R) == pytest.approx(1 / math.sqrt(1 + v / R), abs=0.02), R
        assert truth_ceiling(rho, R) == pytest.approx(cos(truth, g), abs=0.02), R


def test_the_split_half_cosine_is_that_of_the_truth_streams_halves(agent):
    """Worked by a second method: R = 5 truth streams (after K = 2 estimate streams, subject key
    fold_in(key, i) for stream i) run one by one with ``stream``; their sums combined by the parallel
    formulas in float64 (N = Σnᵢ, μ = Σnᵢμᵢ/N, M2 = Σ[M2ᵢ + nᵢ(μᵢ − μ)²]), not by ``merge``; the halves are
    streams 2–3 and 4–5 (⌊5/2⌋ = 2 each, stream 6 in the truth only)."""
    from pgdiag.studies.gradients import measure as gr
    from pgdiag.objectives import ADV_EPS

    env, state, knobs = agent
    sampling = Sampling(envs=4, steps=16, start="reset")
    grid = Grid(sizes=(10, 64, 128), chunk=sampling.chunk, pool=sampling.chunk)
    r = gr.Resolved(sampling=sampling, grid=grid, estimates=2, truth_streams=5, normalize=True, exact=False,
                    batch_size=64, own=sampling)
    key = jax.random.PRNGKey(11)
    out = jax.jit(gr.subject_program(env, r))(state, knobs, key)
    one = jax.jit(lambda k: stream(env, sampling, grid, state, knobs, k, True)[1])
    sums = [jax.tree.map(lambda x: np.asarray(x, np.float64), one(jax.random.fold_in(key, i))) for i in range(2, 7)]

    def combined(parts):
        n = sum(p.n for p in parts)
        mu = sum(p.n * p.mean for p in parts) / n
        m2 = sum(p.m2 + p.n * (p.mean - mu) ** 2 for p in parts)
        return (sum(p.adv_score for p in parts) - mu * sum(p.score for p in parts)) / (
            n * (math.sqrt(m2 / (n - 1)) + ADV_EPS))

    a, b, truth = combined(sums[:2]), combined(sums[2:4]), combined(sums)
    assert r.half_streams == 2 and r.true_ratio == 5.0
    assert float(out["split_half"]) == pytest.approx(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), abs=1e-5)
    assert float(out["true_norm"]) == pytest.approx(np.linalg.norm(truth), rel=1e-4)


def test_the_split_half_cosine_predicts_the_truths_cosine_to_the_exact_gradient():
    """On the linear-quadratic task with a linear policy, exact advantages, no normalization and stationary
    sampling (burn-in 300: p^300 ≈ 2e-3), the truth is unbiased for ∇J up to the factor (1 − p) (see the
    1/N test), so its cosine to the exact ∇J measures its own noise — what the split-half cosine ρ is
    meant to estimate. With 4 parameters the concentration behind the ceiling formula fails, but its small-
    noise limit holds in any dimension (gradients.truth_ceiling): E[1 − ρ] = 2k·E[1 − cos(truth, ∇J)], k = 2
    for R = 10 truth streams (here 1 − ρ ≈ 0.05, so the truth's cosine to ∇J is ≈ 0.99).

    Over M = 200 replicates (K = 2, R = 10 streams of 8 × 256 pairs each), log(mean(1 − ρ)/mean(1 − cos))
    must be within 5 standard errors (delta method over the paired replicates; ≈ 0.1 here, false-failure
    rate ≈ 6e-7 for a normal ratio) plus mean(1 − ρ) (the relative size of the next order, ≈ 5/8·x for
    isotropic noise, x = 1/ρ − 1) of log 4. Were the ceiling √ρ (1 − √ρ ≈ (1 − ρ)/2: ratio 2) or ρ itself
    (ratio 1), or the halves not independent, the ratio would sit log 2 = 0.69 or more away, beyond that
    bound."""
    from pgdiag.studies.gradients import measure as gr

    cfg = preset("ppo", "lqr")
    trainer = make_train(cfg.static)
    knobs = cfg.knobs.as_arrays()
    state = trainer.init(seed_key(1), knobs)
    policy = {**state.policy, "layers": [{"w": jnp.array([[-1.5], [-0.4]]), "b": jnp.array([0.2])}],
              "log_std": jnp.array([-0.5])}
    obs = RunningStat.from_moments(101, jnp.array([0.1, -0.2]), jnp.array([100.0, 25.0]))
    state = state.replace(policy=policy, filters=state.filters.replace(obs=obs))
    sampling = Sampling(envs=8, steps=256, start="stationary", burn_in=300, advantages="exact")
    grid = Grid(sizes=(sampling.chunk,), chunk=sampling.chunk, pool=sampling.chunk)
    r = gr.Resolved(sampling=sampling, grid=grid, estimates=2, truth_streams=10, normalize=False, exact=True,
                    batch_size=sampling.chunk, own=sampling)
    M = 200
    out = jax.jit(jax.vmap(lambda k: gr.subject_program(trainer.env, r)(state, knobs, k)))(
        jax.random.split(jax.random.PRNGKey(0), M))
    d_split = 1 - np.asarray(out["split_half"], np.float64)
    d_true = 1 - np.asarray(out["true_to_exact"], np.float64)
    a, b = d_split.mean(), d_true.mean()
    cov = np.cov(np.stack([d_split, d_true])) / M
    se = math.sqrt(cov[0, 0] / a ** 2 + cov[1, 1] / b ** 2 - 2 * cov[0, 1] / (a * b))
    assert a < 0.1, a                                                   # the small-noise regime
    assert abs(math.log(a / b) - math.log(4)) < 5 * se + a, (a, b, se)
    assert 5 * se + a < math.log(2)                                     # the test tells ratio 4 from 2


# --- the studies -------------------------------------------------------------------------------------

def test_gradient_study_tables_and_a_subject_alone_equals_it_among_others(runs):
    with CompileCounter() as cc:
        both = gradient_study([runs["ppo"], runs["trpo"]], sizes=SIZES, estimates=3, true_pairs=8192)
    assert cc.count >= 1
    alone = gradient_study(runs["ppo"], agents=[1], iterations=[2], sizes=SIZES, estimates=3, true_pairs=8192,
                           save=False)
    pick = lambda f: f[(f.run == runs["ppo"]) & (f.agent == 1) & (f.iteration == 2)]  # noqa: E731
    # two programs (3 subjects against 1): cosines of float32 gradients to a few units of rounding (compare.py)
    np.testing.assert_allclose(pick(both.pairs).cosine.to_numpy(), alone.pairs.cosine.to_numpy(), atol=1e-5)
    # 3 subjects × 2 checkpoints; K(K − 1)/2 = 3 pairs and K = 3 estimates per subject and N.
    sizes = both.sizes
    # the batch size (1,024) in place of 1,000, within 10% of it (no kink of two near points)
    assert set(sizes) >= {100, 1024, 4096} and 1000 not in set(sizes) and both.batch_size == 1024
    assert len(both.pairs) == 6 * len(sizes) * 3 and len(both.estimates) == 6 * len(sizes) * 3
    assert np.all(np.abs(both.pairs.cosine) <= 1 + 1e-5) and np.all(np.abs(both.estimates.to_true) <= 1 + 1e-5)
    assert both.estimates.to_exact.isna().all()  # point_mass has no closed form
    # the truth: 8,192 pairs = R = 2 streams of 4 chunks of 1,024, twice the largest N (4,096), split 1 + 1
    resolved = both.manifest["resolved"]
    assert (resolved["true_pairs"], resolved["true_ratio"], resolved["true_ratio_required"]) == (8192, 2.0, 10)
    assert (resolved["half_streams"], resolved["subset_pool"]) == (1, 1024)
    subs = both.subjects
    assert np.all(subs.true_ratio == 2.0) and np.all(np.abs(subs.truth_split_half) <= 1 + 1e-5)
    rho = subs.truth_split_half.to_numpy()
    np.testing.assert_allclose(subs.truth_ceiling, np.sqrt(np.clip(2 * rho / (1 + rho), 0, 1)), rtol=1e-6)
    assert list(both.subjects.statistics_warmed) == [True, False] * 3  # iteration 0 has empty statistics
    loaded = load_gradient_study([runs["ppo"], runs["trpo"]])
    assert loaded.curves("true").equals(both.curves("true"))
    summary = loaded.summary("pairwise")
    assert set(summary.label) == {"ppo", "trpo"} and set(summary.iteration) == {0, 2}


def test_a_study_never_saves_over_a_measurement_made_otherwise(runs, tmp_path):
    """A measurement saved in a run is someone's result: measuring it again with other settings or on other
    subjects is refused before compiling (naming the difference and the studies recorded as reading it) and
    leaves the files as they were; the same measurement saves again, another name saves beside it, and
    ``replace=True`` replaces it with what that name's program computes."""
    from pgdiag.diagnostics.tables import record_reader, study_path

    run = str(tmp_path / "trpo")
    shutil.copytree(runs["trpo"], run, ignore=shutil.ignore_patterns("diagnostics"))
    kw = dict(iterations=[2], sizes=(100, 1000), true_pairs=0)
    first = gradient_study(run, estimates=2, **kw)
    saved = study_path(run, "gradients")
    files = lambda: {os.path.relpath(os.path.join(d, f), saved): open(os.path.join(d, f), "rb").read()  # noqa: E731
                     for d, _, names in os.walk(saved) for f in names}
    before = files()
    reader = tmp_path / "a-study"
    reader.mkdir()
    record_reader(run, "gradients", str(reader))
    refusals = [(dict(estimates=3, **kw), r"estimates: 2 saved, 3 asked"),
                (dict(estimates=2, **{**kw, "iterations": [0]}),
                 r"subjects \(agent, iteration\): \[\(0, 2\)\] saved, \[\(0, 0\)\] asked")]
    for asked, diff in refusals:
        with CompileCounter() as cc, pytest.raises(
                DiagnosticError, match=rf"holds a 'gradients' measurement made otherwise \({diff}\), which "
                                       rf"{reader} reads; saving this one would replace it. Pass name="):
            gradient_study(run, **asked)
        assert cc.count == 0
    # a study measuring for its own directory (a target's reader) replaces only what no other study reads
    with CompileCounter() as cc, pytest.raises(
            DiagnosticError, match=rf"holds the 'gradients' measurement that {reader} reads, made otherwise "
                                   rf"\(estimates: 2 saved, 3 asked\); measuring it again for '[^']*mine' would"):
        engine.run(GRADIENTS, run, estimates=3, reader=str(tmp_path / "mine"), **kw)
    assert cc.count == 0
    assert files() == {**before, "readers.json": files()["readers.json"]}
    again = gradient_study(run, estimates=2, **kw)                       # the same measurement: saved again
    pd.testing.assert_frame_equal(again.pairs, first.pairs)
    beside = gradient_study(run, estimates=3, name="k3", **kw)
    pd.testing.assert_frame_equal(load_gradient_study(run).pairs, first.pairs)
    assert load_gradient_study(run, "k3").pairs.equals(beside.pairs)
    gradient_study(run, estimates=3, replace=True, **kw)
    assert load_gradient_study(run).pairs.equals(beside.pairs)     # the same compiled program as "k3"
    engine.run(GRADIENTS, run, estimates=2, reader=str(reader), **kw)   # its only reader measures it again
    pd.testing.assert_frame_equal(load_gradient_study(run).pairs, first.pairs)
    # loading: each run's rows under the path they are read from; measurements made with other settings are
    # not pooled; another kind of study under the name is named, before any table is read
    other = str(tmp_path / "moved")
    shutil.copytree(run, other)
    assert set(load_gradient_study(other, "k3").pairs.run) == {other}
    manifest = os.path.join(study_path(other, "k3"), "manifest.json")
    record = json.load(open(manifest))
    json.dump({**record, "settings": {**record["settings"], "estimates": 2}}, open(manifest, "w"))
    with pytest.raises(DiagnosticError, match=r"measurements in .* were made with different settings \(estimates: "
                                              r"3 against 2\); load them separately"):
        load_gradient_study([run, other], "k3")
    with pytest.raises(DiagnosticError, match=r"'gradients' in .* is a 'gradients' study, not a step-study"):
        load_step_study(run, "gradients")


def test_empty_statistics_are_warmed_by_one_batch_and_saved_ones_kept(agent, runs):
    """At iteration 0 the reward scaler has no sample (σ = 0): the frozen statistics are those after one
    batch of the algorithm's shape (4 × 256 = 1,024 returns pushed); a trained checkpoint's are kept as saved."""
    from pgdiag import load_checkpoint, load_run
    from pgdiag.diagnostics.sampling import frozen_filters, needs_warmup

    env, trained, knobs = agent
    own = Sampling(envs=4, steps=256, start="checkpoint")
    initial = jax.tree.map(lambda x: x[0], load_checkpoint(load_run(runs["ppo"]), 0))
    assert bool(needs_warmup(initial.filters)) and not bool(needs_warmup(trained.filters))
    warm = jax.jit(lambda a: frozen_filters(env, own, a, knobs, jax.random.PRNGKey(0)))
    assert int(warm(initial).ret.n) == int(initial.filters.ret.n) + 1024
    assert int(warm(initial).obs.n) >= int(initial.filters.obs.n) + 1024  # every next observation, and resets
    kept = warm(trained)
    assert all(bool(jnp.all(a == b)) for a, b in zip(jax.tree.leaves(kept), jax.tree.leaves(trained.filters)))


def test_crossing_interpolates_log_linearly_between_grid_points():
    """Cosines 0.2, 0.4, 0.8 at N = 100, 1000, 10000: 0.5 is a quarter of the way from 1000 to 10000
    in log N, so N = 10^3.25 ≈ 1778.3; 0.9 is never reached; 0.1 holds from the first N."""
    n, v = [100, 1000, 10_000], [0.2, 0.4, 0.8]
    assert crossing(n, v, 0.5) == pytest.approx(10 ** 3.25)
    assert math.isnan(crossing(n, v, 0.9)) and crossing(n, v, 0.1) == 100


def test_the_cosine_at_the_batch_size_between_grid_points_and_cosine_intervals_within_one():
    """By hand: at N = 10^2.5, halfway between 100 and 1000 in log N, the mean cosine 0.2 → 0.4 reads 0.3;
    outside the grid, NaN. K = 3 estimates with pairwise cosines 0.9, −0.8, 0.95: the jackknife interval
    reaches past ±1, and a mean of cosines cannot, so the curve's bounds stop at ±1 (coverage kept)."""
    import pandas as pd

    from pgdiag import stats
    from pgdiag.diagnostics.tables import _at, pairwise_curve

    assert _at([100, 1000], [0.2, 0.4], 10 ** 2.5) == pytest.approx(0.3)
    assert math.isnan(_at([100, 1000], [0.2, 0.4], 50)) and _at([100, 1000], [0.2, 0.4], 1000) == 0.4
    frame = pd.DataFrame({"g": 0, "i": [0, 0, 1], "j": [1, 2, 2], "cosine": [0.9, -0.8, 0.95]})
    raw = stats.pairwise_interval(frame.i, frame.j, frame.cosine)
    assert raw.low < -1 and raw.high > 1
    row = pairwise_curve(frame, "cosine", ["g"]).iloc[0]
    assert (row.low, row.high, row["mean"]) == (-1.0, 1.0, pytest.approx(raw.estimate))


def test_step_study_computes_the_algorithms_own_step_from_the_checkpoint(runs):
    """Each of the M steps equals the step stages.policy_step takes from the checkpoint's parameters,
    Adam state and annealed learning rate on a batch sampled by hand with the same key."""
    from pgdiag import load_checkpoint, load_run
    from pgdiag.optim import annealed_learning_rate

    study = step_study(runs["ppo"], agents=[0], iterations=[2], batches=2)
    run = load_run(runs["ppo"])
    cfg = run.config(0)
    state = jax.tree.map(lambda x: x[0], load_checkpoint(run, 2))
    knobs = cfg.knobs.as_arrays()
    env = make_train(cfg.static).env
    key = jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(0), 0), 2)
    k_batches, _ = jax.random.split(key)
    lr = annealed_learning_rate(knobs["lr_policy"], state.iteration, cfg.num_iterations, knobs)
    own = algorithm_sampling(cfg.static)

    @jax.jit
    def by_hand(state, m):
        k_start, k_roll, k_step = jax.random.split(jax.random.fold_in(k_batches, m), 3)
        carry = start_carry(env, own, state, knobs, k_start)
        data = stages.collect_batch(env, state.policy, state.value, carry, state.filters, knobs, k_roll,
                                    own.steps, frozen=True)
        step = stages.policy_step(cfg.static, state.policy, state.policy_opt, data.batch, lr, knobs, k_step)
        return ravel_pytree(step.params)[0] - ravel_pytree(state.policy)[0]

    deltas = [np.asarray(by_hand(state, m), np.float64) for m in range(2)]
    norms = [np.linalg.norm(d) for d in deltas]
    # the study's program against a step taken by hand: float32 rounding amplified by the step (compare.RTOL)
    np.testing.assert_allclose(study.steps.norm.to_numpy(), norms, rtol=1e-4)
    cos = deltas[0] @ deltas[1] / (norms[0] * norms[1])
    assert float(study.pairs.cosine.iloc[0]) == pytest.approx(cos, abs=1e-4)
    assert load_step_study(runs["ppo"]).pairs.equals(study.pairs)


def test_step_study_with_annealed_rate_zero_takes_no_step(runs):
    """After the last iteration PPO's annealed learning rate is 0: every step is exactly zero, so the
    pairwise KL is 0 and the cosine undefined (NaN)."""
    cfg = preset("ppo", "point_mass").replace(num_iterations=3, checkpoint_at=(3,))
    out = runs["bare"] + "-final"
    sweep(cfg, seeds=2, out=out, chunk_iterations=1)
    study = step_study(out, batches=2, save=False)
    assert np.all(study.steps.norm == 0) and np.all(study.pairs.kl_ij == 0)
    assert study.pairs.cosine.isna().all()


def test_streams_start_independently_in_the_runs_own_state_distribution(agent):
    """A run that never resets (point_mass at CPU scale, 4 × 256 steps per iteration) is sampled from
    independent resets burnt in to its state distribution: two streams' first states differ, and the
    states of 64 streams' first chunks have the mean of the run's own next 32 batches (the checkpoint's
    environments continued with the frozen policy), per observation dimension within 5 standard errors
    of the difference (the own batches' error from their batch means; false-failure rate ~6e-7 per
    dimension for normal means). The unit of the run's side is a batch of the one continuing chain: batches
    of 4 × 256 steps are far longer than the chain's memory, and their means' lag-1 autocorrelations are
    −0.09 to −0.02 here (standard error 0.18 at 32 batches), so the batch-means standard error holds."""
    from pgdiag.rollout import collect

    env, state, knobs = agent
    own = algorithm_sampling(make_train(preset("ppo", "point_mass").static).static)
    assert own.start == "independent" and own.burn_in == 400 and own.per_iteration == 256
    assert int(state.iteration) * own.per_iteration >= own.burn_in      # the whole burn-in applies

    @jax.jit
    def first_chunk(key):
        k_start, k_roll = jax.random.split(key)
        carry = start_carry(env, own, state, knobs, k_start)
        return carry.obs, collect(env, state.policy, carry, state.filters, k_roll, knobs, own.steps,
                                  frozen=True)[2].obs

    firsts, chunks = jax.vmap(first_chunk)(jax.random.split(jax.random.PRNGKey(0), 64))
    assert not np.allclose(firsts[0], firsts[1])
    stream_means = np.asarray(chunks, np.float64).mean(axis=(1, 2))                    # [64, obs]

    @jax.jit
    def own_batches(key):
        def one(carry, k):
            carry, _, tr = collect(env, state.policy, carry, state.filters, k, knobs, own.steps, frozen=True)
            return carry, tr.obs.mean(axis=(0, 1))
        return jax.lax.scan(one, state.envs, jax.random.split(key, 32))[1]

    batch_means = np.asarray(own_batches(jax.random.PRNGKey(1)), np.float64)        # [32, obs]
    se = np.hypot(stream_means.std(0, ddof=1) / 8, batch_means.std(0, ddof=1) / np.sqrt(32))
    np.testing.assert_array_less(np.abs(stream_means.mean(0) - batch_means.mean(0)), 5 * se)


# --- bad input, refused before compiling -------------------------------------------------------------

@pytest.mark.parametrize("kwargs,match", [
    (dict(estimates=1), "estimates .K. must be an integer ≥ 2"),
    (dict(sizes=(1, 100)), "every N must be ≥ 2"),
    (dict(sizes=(100, 2 ** 25)), "beyond the largest allowed"),
    (dict(true_pairs=10), "true_pairs must be 0"),
    (dict(advantages="exact"), "needs the task.s exact answers"),
    (dict(start="sideways"), "start must be one of"),
    (dict(iterations=[7]), r"no checkpoint after iteration\(s\) \[7\].*saved iterations: \[0, 2\]"),
    (dict(agents=[5]), "agents must be indices in 0 … 1"),
    (dict(windows=3), "gradient-study settings are"),
    (dict(envs=2.5), "envs must be an integer, got 2.5"),
    (dict(normalize="no"), "normalize must be True or False, got 'no'"),
    (dict(sizes=100), "sizes must be a list, got 100"),
    (dict(seed=2 ** 32), "seed must be in 0 … 2\\^32 − 1"),            # PRNGKey keeps 32 bits: 2^32 would be seed 0
    (dict(name=".."), "study name '..': a name is letters, digits"),   # a directory under RUN/diagnostics only
    (dict(name="a/b"), "study name 'a/b'"),
    (dict(iterations=[]), r"iterations must be an int or a non-empty list of ints .*got \[\]"),
    (dict(iterations=2.0), r"iterations must be an int or a non-empty list of ints .*got 2.0"),
    (dict(iterations=[2, 2]), r"iterations \[2, 2\] repeat a value; give each once"),
    (dict(agents=1.0), r"agents must be an int or a non-empty list of ints .*got 1.0"),
    (dict(agents=[0, 0]), r"agents \[0, 0\] repeat a value"),
    (dict(runs_twice=True), r"is given twice \(as .* too\); give each run once"),
])
def test_bad_gradient_study_input_is_refused_before_compiling(runs, kwargs, match):
    import pathlib

    kwargs = dict(kwargs)
    given = [runs["ppo"], pathlib.Path(runs["ppo"]) / "."] if kwargs.pop("runs_twice", False) else runs["ppo"]
    with CompileCounter() as cc, pytest.raises(DiagnosticError, match=match):
        gradient_study(given, **kwargs)
    assert cc.count == 0


def test_runs_without_checkpoints_or_of_other_tasks_are_refused(runs, tmp_path):
    with pytest.raises(DiagnosticError, match="has no checkpoints"):
        gradient_study(runs["bare"])
    with pytest.raises(DiagnosticError, match="is not a run directory"):
        gradient_study(str(tmp_path))
    other = tmp_path / "pendulum"  # a run directory whose manifest records another task
    shutil.copytree(runs["trpo"], other)
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["base_config"]["static"]["task"] = "pendulum"
    (other / "manifest.json").write_text(json.dumps(manifest))
    other = str(other)
    with pytest.raises(DiagnosticError, match="differ in task"):
        gradient_study([runs["ppo"], other])
    with pytest.raises(DiagnosticError, match=r"batches \(M\) must be an integer ≥ 2"):
        step_study(runs["ppo"], batches=1)


def test_runs_stepped_with_other_solver_settings_are_not_measured_together():
    """Subjects share one sampling program, so runs whose physics differ in any way are refused (read from
    the manifests: nothing is loaded or compiled)."""
    from pgdiag.diagnostics.subjects import check_compatible

    class Run:  # what check_compatible reads of a run: its path and its configuration
        def __init__(self, path, solver):
            self.path, self.cfg = path, preset("ppo", "hopper", physics="native", solver=solver)

        def config(self, agent):
            return self.cfg

    check_compatible([Run("a", "fast"), Run("b", "fast")])
    with pytest.raises(DiagnosticError, match="differ in solver \\('converged' vs 'fast'\\)"):
        check_compatible([Run("a", "converged"), Run("b", "fast")])


def test_an_mjx_study_widens_its_streams_and_native_physics_keeps_the_runs_width():
    """Worked by hand: runs of 1 environment × 64 steps, N = 100, 1000, 10000 and the batch (64), a true
    gradient from 20000 pairs, 3 subjects. Narrow: chunks of 64, N snapped to 64, 128, 1024, 9984 (156
    chunks), R = ⌈20000/9984⌉ = 3, so 3 × (10 + 3) = 39 streams, and ⌈2048/39⌉ = 53 environments per
    stream. Wide: chunks of 53 × 64 = 3392 pairs, N = 64, 100, 1000 as asked (below one chunk) and
    round(10000/3392) = 3 chunks = 10176, R = ⌈20000/10176⌉ = 2. Resolving touches no device."""
    from pgdiag.studies.gradients.measure import GradientSettings
    from pgdiag.studies.gradients.widening import widen

    settings = GradientSettings(sizes=(100, 1000, 10000), estimates=10, true_pairs=20000)

    def statics(physics):
        return [preset("ppo", "hopper", physics=physics, num_envs=1, steps_per_env=64).static]

    narrow = widen(settings, statics("native"), 3)
    assert (narrow.sampling.envs, narrow.grid.chunk, narrow.grid.sizes, narrow.truth_streams) == (
        1, 64, (64, 128, 1024, 9984), 3)
    wide = widen(settings, statics("mjx"), 3)
    assert (wide.sampling.envs, wide.sampling.steps, wide.sampling.start) == (53, 64, narrow.sampling.start)
    assert widen(settings, statics("warp"), 3) == wide       # Warp's batched step is as flat in its width
    assert (wide.grid.chunk, wide.grid.sizes, wide.truth_streams) == (3392, (64, 100, 1000, 10176), 2)
    # the memory check halves the width until it fits: 53 → 26 → 13
    assert widen(settings, statics("mjx"), 3, fits=lambda r: r.sampling.envs <= 20).sampling.envs == 13
    assert widen(settings, statics("mjx"), 3, fits=lambda r: False).sampling.envs == 1
    # asked for explicitly, or already wide enough (300 × 13 streams ≥ 2048), the width is kept
    assert widen(dataclasses.replace(settings, envs=2), statics("mjx"), 3).sampling.envs == 2
    assert widen(settings, statics("mjx"), 300).sampling.envs == 1
    # never wider than the narrow stream's chunk count: N ≤ 100 is 2 chunks of 64 (1 subject, 10 streams)
    short = dataclasses.replace(settings, sizes=(100,), true_pairs=0, with_batch_size=False)
    assert widen(short, statics("mjx"), 1).sampling.envs == 2


def test_a_widened_study_steps_the_batch_this_hosts_measurements_find_fullest(monkeypatch):
    """Recorded MJX steps of 1.6 ms at 1,024 and 4,096 environments and 3.4 ms at 8,192: 4,096 steps the most
    environments per millisecond (2,560 against 640 and 2,409), so the 39 streams of the widening test above get
    ⌈4096/39⌉ = 106 environments each; rows that stop below 2,048 say nothing of the wide batches, and the
    2,048 default stays (53 each)."""
    from pgdiag.studies.gradients.measure import GradientSettings
    from pgdiag.studies.gradients.widening import wide_batch, widen
    from pgdiag.envs import crossover

    settings = GradientSettings(sizes=(100, 1000, 10000), estimates=10, true_pairs=20000)
    static = preset("ppo", "hopper", physics="mjx", num_envs=1, steps_per_env=64).static
    rows = [{"task": "hopper", "solver": "converged", "batch": b, "native_ms": n, "mjx_ms": m}
            for b, n, m in ((1024, 6.0, 1.6), (4096, 24.0, 1.6), (8192, 48.0, 3.4))]
    monkeypatch.setattr(crossover, "load", lambda key: rows)
    assert wide_batch(static, "mjx") == 4096
    assert widen(settings, [static], 3).sampling.envs == 106
    assert wide_batch(static, "warp") == 2048                              # no Warp rows
    monkeypatch.setattr(crossover, "load", lambda key: rows[:1])
    assert wide_batch(static, "mjx") == 2048 and widen(settings, [static], 3).sampling.envs == 53
