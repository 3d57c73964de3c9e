"""Reward landscapes: the plane's construction, the Monte-Carlo returns against the exact LQR J, the
surrogate surface, the sign agreement by hand, the saved tables, and bad input refused before compiling.

The statistical test compares each of 9 grid points' Monte-Carlo mean (about 2,000 complete episodes
each) with the closed-form J within 4.5 standard errors: a false-failure rate below 9 × 7e-6 ≈ 6e-5
for normal means. The estimator (mean return of the episodes that end within the pairs) has a bias of
order (mean episode length)/(steps per environment) = 50/25,000 of the return's spread, far inside that.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from pg_diag import load_checkpoint, load_run, make_train, stages
from pg_diag.diagnostics import DiagnosticError
from pg_diag.diagnostics import landscape as ls
from pg_diag.diagnostics.landscape_study import landscape_study, load_landscape_study, sign_agreement
from pg_diag.diagnostics.sampling import Sampling
from pg_diag.diagnostics.subjects import load_subjects, plan_subjects
from pg_diag.envs import lqr
from pg_diag.optim import annealed_learning_rate
from pg_diag.run import CompileCounter


@pytest.fixture(scope="module")
def runs(lqr_runs):
    return lqr_runs


@pytest.fixture(scope="module")
def study(runs):
    """TRPO at iteration 5 on a small plane (every policy on it stable), 1e5 pairs per point."""
    return landscape_study([runs["trpo"]], iterations=[5], points=3, extent=0.5, random_norm=0.05,
                           sizes=(10_000, 100_000), envs=4)


@pytest.mark.parametrize("algorithm", ["ppo", "trpo"])
def test_x_equal_one_is_the_policy_the_step_produces(runs, algorithm):
    """θ(1, 0) of the plane equals stages.policy_step's parameters on the same batch and key, and
    θ(0, 0) the checkpoint's; y = 1 moves by the random direction, of the asked norm."""
    run = load_run(runs[algorithm])
    cfg = run.config(0)
    static, knobs = cfg.static, cfg.knobs.as_arrays()
    env = make_train(static).env
    agent = jax.tree.map(lambda x: x[0], load_checkpoint(run, 5))
    own = Sampling(envs=static.num_envs, steps=static.steps_per_env, start="checkpoint")
    batch = ls.step_batch(env, static, own, agent, knobs, jax.random.PRNGKey(1), static.num_envs)
    lr = annealed_learning_rate(knobs["lr_policy"], agent.iteration, static.num_iterations, knobs)
    delta = ls.step_direction(static, agent, batch, lr, knobs, jax.random.PRNGKey(2))
    stepped = stages.policy_step(static, agent.policy, agent.policy_opt, batch, lr, knobs, jax.random.PRNGKey(2))
    theta = ravel_pytree(agent.policy)[0]
    d = ls.random_direction(jax.random.PRNGKey(3), theta.shape[0], 0.7)
    assert float(jnp.linalg.norm(d)) == pytest.approx(0.7, rel=1e-5)
    grid = ls.plane(theta, delta, d, (0.0, 1.0))   # (0,0), (0,1), (1,0), (1,1)
    np.testing.assert_allclose(grid[0], theta, rtol=0, atol=0)
    np.testing.assert_allclose(grid[2], ravel_pytree(stepped.params)[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grid[1] - grid[0], d, rtol=1e-5, atol=1e-6)
    assert float(jnp.linalg.norm(delta)) > 0


def test_monte_carlo_landscape_matches_the_exact_j_within_its_ci(study, runs):
    r = study.returns[study.returns.n == 100_000].merge(study.surface, on=["run", "agent", "iteration",
                                                                         "step_pairs", "x", "y"])
    assert len(r) == 9 and (r.episodes > 1000).all()
    assert np.isfinite(r.exact).all()
    z = (r["mean"] - r["exact"]) / r["se"]
    assert (np.abs(z) < 4.5).all(), r[["x", "y", "mean", "se", "exact"]]
    # (0, 0) is the checkpoint's own policy: its exact J, computed here from the checkpoint directly
    run = load_run(runs["trpo"])
    agent = jax.tree.map(lambda x: x[0], load_checkpoint(run, 5))
    J = float(lqr.policy_return(lqr.default_spec(), agent.policy, agent.filters.obs, run.config(0).knobs.as_arrays()))
    origin = r[(r.x == 0) & (r.y == 0)].iloc[0]
    assert origin.exact == pytest.approx(J, rel=1e-5)


def test_surrogate_surface_at_the_origin_and_trpo_step_within_its_trust_region(study):
    s = study.surface
    origin = s[(s.x == 0) & (s.y == 0)].iloc[0]
    # at θ the ratio is 1, so the surrogate is the mean of the normalized advantages (0) and KL is 0
    assert abs(origin.unclipped) < 1e-6 and abs(origin.surrogate) < 1e-6 and abs(origin.kl) < 1e-9
    p = study.planes.iloc[0]
    assert p.step_norm > 0 and p.step_kl <= p.kl_bound * (1 + 1e-5)   # TRPO's line search keeps KL ≤ δ


def test_sign_agreement_by_hand():
    """True returns 0, 1, 3, 2 and surrogate 0, 1, 2, 3 along x: changes +,+,− vs +,+,+ agree 2 of 3.
    Without noise the CI is the point itself; with a huge standard error it spreads."""
    t = np.array([[0.0], [1.0], [3.0], [2.0]])
    s = np.array([[0.0], [1.0], [2.0], [3.0]])
    value, low, high = sign_agreement(t, np.zeros_like(t), s)
    assert (value, low, high) == (pytest.approx(2 / 3),) * 3
    _, low, high = sign_agreement(t, np.full_like(t, 100.0), s)
    assert low < 0.4 and high > 0.9
    nan = sign_agreement(np.full((3, 1), np.nan), np.zeros((3, 1)), s[:3])
    assert all(np.isnan(nan))


def test_tables_saved_and_loaded_and_agreement_per_plane(study, runs):
    again = load_landscape_study(runs["trpo"])
    for table in ("returns", "surface", "planes"):
        assert len(getattr(again, table)) == len(getattr(study, table))
    np.testing.assert_allclose(again.returns["mean"], study.returns["mean"])
    a = again.agreement()
    assert len(a) == 1 and 0 <= a.agreement[0] <= 1 and a.low[0] <= a.agreement[0] <= a.high[0]
    g = again.grid({"run": runs["trpo"], "agent": 0, "iteration": 5}, a.step_pairs[0])
    assert g.shape == (3, 3)
    assert a.true_step_change[0] == pytest.approx(g[2, 0] - g[0, 0])   # x = 0.5 is the grid point nearest 1


@pytest.mark.parametrize("change,match", [
    (dict(points=1), "points must be an integer ≥ 2"),
    (dict(extent=0.0), "zero length"),
    (dict(random_norm=0.0), "random direction of zero length"),
    (dict(sizes=(2 ** 25,)), "2\\^24"),
    (dict(envs=500, sizes=(100,)), "envs must be"),
    (dict(step_pairs=(-1,)), "step_pairs"),
    (dict(step_pairs=(1.5,)), "step_pairs"),
    (dict(points=10_000, sizes=(2000,)), "needs about"),
    (dict(iterations=[3]), "iteration"),
])
def test_bad_input_is_refused_before_compiling(runs, change, match):
    change = dict(change)
    iterations = change.pop("iterations", [5])
    # loading the subjects runs a few tiny array ops, compiled once per shape: load them first, so the
    # count below is that of the study's own programs
    load_subjects(plan_subjects([runs["ppo"]], [5]))
    with CompileCounter() as counter, pytest.raises(DiagnosticError, match=match):
        landscape_study([runs["ppo"]], iterations=iterations, save=False, **change)
    assert counter.count == 0


def test_settings_have_the_papers_defaults():
    s = ls.LandscapeSettings()
    assert (s.extent, s.points, tuple(s.sizes)) == (3.0, 7, (2_000, 20_000, 100_000))
    assert dataclasses.asdict(s)["step_pairs"] == (0,)


# --- the estimator of the true return: complete episodes, none cut by the sample size --------------------

def _survival_task():
    """A pure-JAX task whose episode length is set by the policy and whose return is that length: every step
    pays 1, and the episode ends with probability 0.02 + 0.08·sigmoid(a₀) (a₀ the first action component).
    Short episodes are the low-return ones, so an estimator that favours them is biased low."""
    from pg_diag.envs.base import Env, EnvState

    def reset(key):
        return EnvState(physics=key, obs=jnp.zeros(4, jnp.float32), reward=jnp.float32(0),
                        terminated=jnp.bool_(False), truncated=jnp.bool_(False), t=jnp.int32(0))

    def step(state, action):
        key, k = jax.random.split(state.physics)
        ends = jax.random.uniform(k) < 0.02 + 0.08 * jax.nn.sigmoid(action[0])
        t = state.t + 1
        return EnvState(physics=key, obs=state.obs, reward=jnp.float32(1), terminated=ends,
                        truncated=(t >= 1000) & ~ends, t=t)

    return Env(name="survival", obs_size=4, action_size=2, max_episode_steps=1000, reset=reset, step=step)


def test_small_sample_returns_are_unbiased_where_the_windowed_estimate_is_not():
    """2,000 independent streams on the survival task. Each stream's estimate at the small size is the mean of
    2 complete episodes; their average must equal the large-size value (200 episodes per stream, 400,000 in
    all) within 4.5 standard errors of the difference (false-failure rate 7e-6 for a normal difference; the
    two share their first episodes, which only shrinks the difference's variance, so the bound is
    conservative). The windowed estimate of the same pairs — the returns of the episodes that *end* within
    N / envs steps of each environment — keeps only short episodes and misses it by far more."""
    from pg_diag import make_train, preset, seed_key
    from pg_diag.rollout import collect, reset_envs

    env = _survival_task()
    cfg = preset("ppo", "point_mass")            # its networks fit the task's 4-d observation, 2-d action
    knobs = dict(cfg.knobs.as_arrays(), obs_normalization=jnp.bool_(False))
    agent = make_train(cfg.static).init(seed_key(0), knobs)
    r = ls.Resolved(coords=(0.0,), random_norm=1.0, envs=4, chunk_steps=32, sizes=(32, 3200), max_chunks=10_000,
                    step_envs=(1,), own=None, exact=False)
    counts = jnp.array([2, 200], jnp.int32)
    streams = jax.random.split(jax.random.PRNGKey(0), 2000)
    out = jax.jit(jax.vmap(lambda k: ls.return_stream(env, r, agent.policy, agent.filters, knobs, k, counts)))(streams)
    n, mean, m2, pairs = (np.asarray(x, np.float64) for x in (out.n, out.mean, out.m2, out.pairs))
    assert (n[:, 0] == 2).all() and (n[:, 1] == 200).all()
    assert np.all(pairs[:, 1] >= 200) and np.all(pairs[:, 0] <= pairs[:, 1])
    sd = np.sqrt(m2[:, 1].sum() / (n[:, 1].sum() - 1))
    large, large_se = np.sum(n[:, 1] * mean[:, 1]) / n[:, 1].sum(), sd / np.sqrt(n[:, 1].sum())
    small, small_se = mean[:, 0].mean(), sd / np.sqrt(n[:, 0].sum())
    bound = 4.5 * np.hypot(small_se, large_se)
    assert abs(small - large) < bound, (small, large, bound)
    assert 10 < large < 50 and np.mean(pairs[:, 0]) == pytest.approx(2 * large, rel=0.1)   # return = length

    def windowed(key, steps=int(np.mean(pairs[:, 0]) / 4)):
        k_reset, k_run = jax.random.split(key)
        carry, _ = reset_envs(env, k_reset, 4, agent.filters, knobs, frozen=True)
        _, _, tr = collect(env, agent.policy, carry, agent.filters, k_run, knobs, steps, frozen=True)
        return jnp.sum(tr.finished_return), jnp.sum(tr.done)

    total, ended = (np.asarray(x, np.float64) for x in jax.jit(jax.vmap(windowed))(streams))
    assert abs(total.sum() / ended.sum() - large) > 5 * bound


def test_a_plan_too_large_splits_itself_before_it_refuses():
    """The papers' surrogate landscape (1e6 pairs per point, 7 × 7 grid, steps from 2,048 and 1e6 pairs) for 6
    Humanoid subjects, against memory budgets set from its own estimates: what fits runs as asked; below the
    vmapped estimate the subjects go in turn; below that the chunks shorten (memory falls, the episodes run
    are the same); below every plan's floor (the 1e6-pair step batch) the study refuses. Nothing is compiled."""
    from pg_diag import preset

    static = preset("ppo", "humanoid").static
    r = ls.resolve(ls.LandscapeSettings(sizes=(1_000_000,), step_pairs=(0, 1_000_000)), [static])
    shapes = (276, 17, 30_000)
    vmapped = ls.memory_estimate(static, r, 6, *shapes, "vmap")
    in_turn = ls.memory_estimate(static, r, 6, *shapes, "map")
    assert in_turn * 6 == vmapped
    assert ls.fit(static, r, 6, *shapes, "vmap", vmapped) == (r, "vmap", vmapped, "")
    assert ls.fit(static, r, 6, *shapes, "vmap", vmapped - 1) == (r, "map", in_turn, "subjects in turn")
    fitted, batching, need, changed = ls.fit(static, r, 6, *shapes, "vmap", in_turn - 1)
    assert batching == "map" and fitted.chunk_steps < r.chunk_steps and need <= in_turn - 1
    assert fitted.chunk_steps * fitted.max_chunks >= r.chunk_steps * r.max_chunks   # still runs every episode
    assert changed == f"subjects in turn, chunks of {fitted.chunk_steps} steps instead of {r.chunk_steps}"
    floor = ls.fit(static, r, 6, *shapes, "vmap", 1)[2]
    assert floor > 1 and ls.fit(static, r, 6, *shapes, "map", floor)[2] == floor
