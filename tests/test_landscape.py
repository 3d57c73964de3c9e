"""Reward landscapes: the plane's construction, the Monte-Carlo returns against the exact LQR J, the
episode lengths against their closed form, the surrogate surface, the sign agreement by hand, the saved
tables, and bad input refused before compiling.

The statistical tests compare Monte-Carlo means with closed forms within 4.5 standard errors (false-failure
rate 6.8e-6 per comparison for a normal mean): each of 9 grid points' mean return (about 2,000 complete
episodes each) with the exact LQR J; each point's mean episode length and L̂ with the LQR's
1/(1 − p) = 50 (its episodes end with probability 1 − p = 0.02 a step whatever the policy); and, on a
survival task with a known hazard, L̂ and the small-sample returns with (1 − (1−h)^T)/h. The number of
episodes is fixed before sampling, so the estimates are unbiased at every size.
"""

import dataclasses

import os

import jax
import jax.numpy as jnp

import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from compare import CANCELLING_ATOL
from pgdiag import load_checkpoint, load_run, make_train, stages
from pgdiag.diagnostics import DiagnosticError
from pgdiag.studies.landscape import geometry, measure as ls
from pgdiag.studies.landscape.memory import landscape_bytes
from pgdiag.studies.landscape.diagnostic import landscape_study, load_landscape_study, sign_agreement
from pgdiag.diagnostics.sampling import Sampling
from pgdiag.diagnostics.subjects import load_subjects, plan_subjects
from pgdiag.envs import lqr
from pgdiag.optim import annealed_learning_rate
from pgdiag.run import CompileCounter


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
    batch = geometry.step_batch(env, static, own, agent, knobs, jax.random.PRNGKey(1), static.num_envs)
    lr = annealed_learning_rate(knobs["lr_policy"], agent.iteration, static.num_iterations, knobs)
    delta = geometry.step_direction(static, agent, batch, lr, knobs, jax.random.PRNGKey(2))
    stepped = stages.policy_step(static, agent.policy, agent.policy_opt, batch, lr, knobs, jax.random.PRNGKey(2))
    theta = ravel_pytree(agent.policy)[0]
    d = geometry.random_direction(jax.random.PRNGKey(3), theta.shape[0], 0.7)
    assert float(jnp.linalg.norm(d)) == pytest.approx(0.7, rel=1e-5)
    grid = geometry.plane(theta, delta, d, (0.0, 1.0))   # (0,0), (0,1), (1,0), (1,1)
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


def test_lengths_and_pairs_used_match_the_lqr_geometric_length(study):
    """The LQR task ends an episode with probability 1 − p = 0.02 after every step whatever the policy (and
    at 10,000 steps, with probability 0.98^10000 ≈ 1e-88): L ~ Geometric(0.02), E[L] = 50, SD(L) = √p/(1−p)
    ≈ 49.5. L̂ (256 episodes) and every point's pairs per episode at both sizes equal 50 within 4.5 SE
    (19 comparisons: false-failure rate below 19 × 6.8e-6 ≈ 1.3e-4); L̂'s reported SE is SD(L)/√256 within
    40 %, the scale check a standard deviation from 256 draws allows (the geometric's kurtosis is 9, so
    the sample SD's relative SE is about √(8/(4·256)) ≈ 0.09 and 40 % is over 4 of them);
    each point ran round(N / L̂) episodes; the step's norm over the random direction's is recorded."""
    mean_l, sd_l = 50.0, np.sqrt(0.98) / 0.02
    p = study.planes.iloc[0]
    assert p.length_episodes == 256
    assert abs(p.mean_length - mean_l) < 4.5 * sd_l / 16
    assert p.mean_length_se == pytest.approx(sd_l / 16, rel=0.4)
    assert p.random_norm == 0.05 and p.step_norm_ratio == pytest.approx(p.step_norm / 0.05)
    r = study.returns
    assert (r.episodes == np.round(r.n / p.mean_length)).all()
    per_episode = r.pairs / r.episodes
    assert (np.abs(per_episode - mean_l) < 4.5 * sd_l / np.sqrt(r.episodes)).all(), r[["n", "episodes", "pairs"]]
    resolved = study.manifest["resolved"]
    assert resolved["random_norm"] == 0.05 and resolved["length_episodes"] == 256
    assert "from reset to its own end" in resolved["estimator"]


def test_surrogate_surface_at_the_origin_and_trpo_step_within_its_trust_region(study):
    s = study.surface
    origin = s[(s.x == 0) & (s.y == 0)].iloc[0]
    # at θ the ratio is 1, so the surrogate is the mean of the normalized advantages (0) and KL is 0
    # (a mean of terms of order 1 that cancel: held to their float32 rounding, tests/compare.py)
    assert abs(origin.unclipped) < CANCELLING_ATOL and abs(origin.surrogate) < CANCELLING_ATOL and abs(origin.kl) < 1e-9
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
    # the grid 0, 0.25, 0.5 has no x = 1, the step itself: its effect is not read off another point
    assert np.isnan(a.true_step_change[0]) and np.isnan(a.surrogate_step_change[0])
    with pytest.raises(DiagnosticError, match=r"n=100 was not measured; the study.s sizes are \[10000, 100000\]"):
        again.agreement(n=100)


def test_both_figures_and_summaries_draw_with_the_pairs_used_and_the_step_over_random_norm(study, tmp_path):
    """The two targets' summaries carry the pairs each point used, L̂ and ‖Δ‖ / random_norm (worked out here
    from the tables), and both figures draw from the study's tables alone."""
    from pgdiag.studies.landscape import targets as lf

    p = study.planes.iloc[0]
    c = lf.summary(True, {"lqr": study})
    assert list(c.n) == [10_000, 100_000]
    for _, row in c.iterrows():
        r = study.returns[study.returns.n == row.n]
        assert row.pairs_per_point == pytest.approx(r.pairs.mean()) and row.episodes_per_point == r.episodes.mean()
    np.testing.assert_allclose(c.step_norm_ratio, p.step_norm / p.random_norm, rtol=1e-6)
    np.testing.assert_allclose(c.mean_length, p.mean_length, rtol=1e-6)
    assert (c.mean_length_se > 0).all()
    s = lf.summary(False, {"lqr": study})
    assert s.pairs_per_point[0] == pytest.approx(study.returns[study.returns.n == 100_000].pairs.mean())
    assert s.step_norm_ratio[0] == pytest.approx(p.step_norm / 0.05)
    for concentration in (True, False):
        paths = lf.plot(concentration, {"lqr": study}, str(tmp_path / f"{concentration}.png"), "t")
        assert paths == [str(tmp_path / f"{concentration}.png")] and os.path.isfile(paths[0])


def test_a_figure_too_tall_is_one_file_per_task_and_algorithm(study, tmp_path, monkeypatch):
    """Rows of panels within MAX_ROWS: one file; more: one file per task, and per algorithm (label) where a task
    alone has more. The study has one row (one TRPO agent at one iteration): MAX_ROWS = 1 keeps it whole,
    MAX_ROWS = 0 makes the task alone too tall, so it is cut by label."""
    from pgdiag.studies.landscape import targets as lf

    (label,) = set(lf._subjects(study).label)
    assert len(lf._subjects(study)) == 1
    monkeypatch.setattr(lf, "MAX_ROWS", 1)
    assert lf.plot(False, {"lqr": study}, str(tmp_path / "s.png"), "t") == [str(tmp_path / "s.png")]
    monkeypatch.setattr(lf, "MAX_ROWS", 0)
    paths = lf.plot(False, {"lqr": study}, str(tmp_path / "cut.png"), "t")
    assert paths == [str(tmp_path / f"cut-lqr-{label}.png")]
    assert all(os.path.isfile(p) for p in paths + [str(tmp_path / "s.png")])


def test_colour_scales_clip_to_the_robust_range_and_blank_cells_are_explained(tmp_path):
    """By hand: 1 … 100 plus one diverged value −5e34 and a NaN. The 1st and 99th percentiles of the 101
    finite values are 1 and 99; −5e34 lies more than their range (98) below, so the scale is [1, 99] and two
    cells (−5e34 and 100) lie beyond it. Without the outlier the full range stands."""
    from pgdiag.experiments import figures
    from pgdiag.studies.landscape import targets as lf

    values = np.append(np.arange(1.0, 101.0), [-5e34, np.nan])
    assert figures.robust_range(values) == (1.0, 99.0, 2)
    assert figures.robust_range(np.arange(1.0, 101.0)) == (1.0, 100.0, 0)
    plt = figures.pyplot()
    fig, ax = plt.subplots()
    im = lf._heat(ax, values.reshape(6, 17), np.linspace(-1, 1, 6), "plane")
    assert (im.norm.vmin, im.norm.vmax) == (1.0, 99.0) and "grey: 1 cell not finite" in ax.get_title()
    assert "cells beyond" in fig.axes[-1].get_ylabel()
    plt.close(fig)


def test_a_suptitle_never_covers_the_first_panels_title(tmp_path):
    from pgdiag.experiments import figures

    plt = figures.pyplot()
    for rows in (1, 4, 12):
        fig, axes = plt.subplots(rows, 3, figsize=(12, 3.2 * rows), squeeze=False)
        for ax in axes.ravel():
            ax.set_title("panel\ntwo lines", fontsize=7)
        figures.save(fig, str(tmp_path / f"{rows}.png"), "A title\n(second line)", title_size=10)
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        canvas = FigureCanvasAgg(fig)          # (save closed the figure's own)
        canvas.draw()
        renderer = canvas.get_renderer()
        top_title = max(ax.title.get_window_extent(renderer).y1 for ax in axes[0])
        assert top_title < fig._suptitle.get_window_extent(renderer).y0


@pytest.mark.parametrize("change,match", [
    (dict(points=1), "points must be an integer ≥ 2"),
    (dict(extent=0.0), "zero length"),
    (dict(random_norm=0.0), "random direction of zero length"),
    (dict(random_norm=float("inf")), "random_norm must be a finite number"),
    (dict(random_norm="2"), "random_norm must be a number, got '2'"),   # its kind, before its value
    (dict(length_episodes=1), "length_episodes must be an integer in 2"),
    (dict(length_episodes=10.0), "length_episodes must be an integer, got 10.0"),
    (dict(sizes=(2 ** 25,)), "2\\^24"),
    (dict(envs=500, sizes=(100,)), "envs must be"),
    (dict(step_pairs=(-1,)), "step_pairs"),
    (dict(step_pairs=(1.5,)), "step_pairs"),
    (dict(sizes=(True,)), "sizes must be a list whose elements are each an integer, got True in \\(True,\\)"),
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
    """CL §5.3, Fig 6: axes 0 … 3, 2K/20K/100K pairs, and a random direction "rescaled to norm 2"."""
    s = ls.LandscapeSettings()
    assert (s.extent, s.points, tuple(s.sizes), s.random_norm) == (3.0, 7, (2_000, 20_000, 100_000), 2.0)
    assert dataclasses.asdict(s)["step_pairs"] == (0,)


# --- the estimators: L̂ and the true return against a closed form --------------------------------------------

H, T = 0.01, 200   # the survival task's hazard and time limit: E[L] ≈ 86.6, truncation matters ((1−h)^T ≈ 0.13)


def _survival_task(h: float = H, limit: int = T):
    """A pure-JAX task whose episode ends each step with probability ``h`` whatever the action, truncated at
    ``limit`` steps, paying 1 per step (the return is the length). Its 4-d observation and 2-d action fit
    the point-mass preset's networks."""
    from pgdiag.envs.base import Env, EnvState, time_limit

    def reset(key):
        return EnvState(physics=key, obs=jnp.zeros(4, jnp.float32), reward=jnp.float32(0),
                        terminated=jnp.bool_(False), truncated=jnp.bool_(False), t=jnp.int32(0))

    def step(state, action):
        key, k = jax.random.split(state.physics)
        ends = jax.random.uniform(k) < h
        t = state.t + 1
        return EnvState(physics=key, obs=state.obs, reward=jnp.float32(1), terminated=ends,
                        truncated=time_limit(t, ends, limit), t=t)

    return Env(name="survival", obs_size=4, action_size=2, max_episode_steps=limit, reset=reset, step=step)


def _survival_moments(h: float = H, limit: int = T):
    """E[L] and Var(L) of L = min(G, T), G ~ Geometric(h) on {1, 2, …}.

    P(L ≥ k) = P(no end in the first k − 1 steps) = (1−h)^(k−1) for 1 ≤ k ≤ T, and 0 beyond T. So
    E[L] = Σ_{k=1}^{T} P(L ≥ k) = Σ_{k=1}^{T} (1−h)^(k−1) = (1 − (1−h)^T) / h (a geometric series), and, with
    L² = Σ_{k=1}^{L} (2k − 1), E[L²] = Σ_{k=1}^{T} (2k − 1)(1−h)^(k−1)."""
    q = 1.0 - h
    mean = (1.0 - q ** limit) / h
    k = np.arange(1, limit + 1, dtype=np.float64)
    second = np.sum((2 * k - 1) * q ** (k - 1))
    assert mean == pytest.approx(np.sum(q ** (k - 1)), rel=1e-12)   # the closed form is the series' sum
    return mean, second - mean ** 2


def _censored_limit(batch: int, h: float = H):
    """The in-batch mean length over many batches of ``batch`` < T steps from reset: total length of the
    episodes that ended inside, over their number. Every step ends an episode with probability h
    independently (no time limit inside the batch), so E[ended] = B·h; the ended episodes tile the steps up
    to the last end, B minus the trailing steps without an end, whose expected number is
    Σ_{j=1}^{B} P(the last j steps have no end) = Σ_{j=1}^{B} (1−h)^j = (1−h)(1 − (1−h)^B) / h."""
    q = 1.0 - h
    return (batch - q * (1 - q ** batch) / h) / (batch * h)


def test_length_estimate_and_returns_are_unbiased_where_the_in_batch_mean_is_short():
    """On the survival task (hazard h = 0.01, time limit T = 200), against E[L] = (1 − (1−h)^T)/h ≈ 86.6
    and Var(L) from :func:`_survival_moments`:

    * L̂ (:func:`landscape.episode_length`) from m = 8 episodes per stream, averaged over 1,000 independent
      streams, equals E[L] within 4.5 standard errors, SE = SD(L)/√8,000: an unbiased estimate at small m,
      not only a consistent one;
    * the true-return estimate from 2 episodes per stream (the return is the length here), averaged over
      the same 1,000 streams, equals E[L] within 4.5 SE, SE = SD(L)/√2,000;
    * the mean length of the episodes that ended inside a batch of B = 100 steps from reset (4,000
      batches, pooled) falls short of E[L] by more than 20 of its standard errors, and equals the censored
      limit (B − (1−h)(1 − (1−h)^B)/h)/(B·h) ≈ 37.2 of :func:`_censored_limit` within 4.5 SE (delta method
      over the batches).

    Each 4.5-SE comparison fails falsely with probability 6.8e-6 for a normal mean (the means are over
    2,000–8,000 i.i.d. lengths, far into the CLT's range): below 3e-5 for the test at its fixed seed."""
    from pgdiag import make_train, preset, seed_key
    from pgdiag.rollout import collect, reset_envs

    env = _survival_task()
    mean_l, var_l = _survival_moments()
    assert mean_l == pytest.approx(86.60, abs=0.01)
    cfg = preset("ppo", "point_mass")            # its networks fit the task's 4-d observation, 2-d action
    knobs = dict(cfg.knobs.as_arrays(), obs_normalization=jnp.bool_(False))
    agent = make_train(cfg.static).init(seed_key(0), knobs)
    E, m, S, B = 4, 8, 1000, 100
    r = ls.Resolved(coords=(0.0,), random_norm=1.0, envs=E, chunk_steps=50, sizes=(2,), max_chunks=100,
                    step_envs=(1,), own=None, exact=False, length_episodes=m)

    def one(key):
        k_len, k_ret, k_batch = jax.random.split(key, 3)
        length = ls.episode_length(env, r, agent.policy, agent.filters, knobs, k_len)
        ret = ls.return_stream(env, r, agent.policy, agent.filters, knobs, k_ret, jnp.array([2], jnp.int32))
        carry, _ = reset_envs(env, jax.random.fold_in(k_batch, 0), E, agent.filters, knobs, frozen=True)
        _, _, tr = collect(env, agent.policy, carry, agent.filters, jax.random.fold_in(k_batch, 1), knobs, B,
                           frozen=True)
        return length, ret, jnp.sum(tr.finished_length, axis=0), jnp.sum(tr.done, axis=0)

    length, ret, in_total, in_ended = jax.jit(jax.vmap(one))(jax.random.split(jax.random.PRNGKey(0), S))
    assert (np.asarray(length.n) == m).all() and (np.asarray(ret.n) == 2).all()

    l_hat = np.asarray(length.mean, np.float64)
    np.testing.assert_allclose(l_hat, np.asarray(length.pairs) / m, rtol=1e-5)   # L̂ is the episodes' mean length
    assert abs(l_hat.mean() - mean_l) < 4.5 * np.sqrt(var_l / (S * m)), (l_hat.mean(), mean_l)
    returns = np.asarray(ret.mean, np.float64)[:, 0]
    assert abs(returns.mean() - mean_l) < 4.5 * np.sqrt(var_l / (S * 2)), (returns.mean(), mean_l)

    total, ended = (np.asarray(x, np.float64).ravel() for x in (in_total, in_ended))   # one unit per batch
    in_batch = total.sum() / ended.sum()
    z = total - in_batch * ended                                                        # linearized ratio
    se = np.sqrt(np.sum(z ** 2) / (len(z) * (len(z) - 1))) / ended.mean()
    assert mean_l - in_batch > 20 * se, (in_batch, mean_l, se)
    assert abs(in_batch - _censored_limit(B)) < 4.5 * se, (in_batch, _censored_limit(B), se)


def test_environments_idle_once_their_episodes_have_ended_and_the_estimates_do_not_move():
    """A return stream's environments idle once their own quota of episodes has ended (native MuJoCo does not
    step them). Against a second method — the same stream with every environment stepping to the end, its
    episodes counted by the same rule (written out here) — the counted episodes, their pairs, mean return and
    M2 agree: idling changes what the physics costs, not which episodes are drawn. A quota with filters that
    update is refused (an idle environment's observations must not reach them)."""
    from pgdiag import make_train, preset, seed_key
    from pgdiag.envs import make
    from pgdiag.studies.landscape.return_streams import ReturnSums
    from pgdiag.rollout import collect, reset_envs

    env = make("hopper", "native", 2)
    assert env.skips_idle
    cfg = preset("ppo", "hopper")
    knobs = cfg.knobs.as_arrays()
    agent = make_train(cfg.static).init(seed_key(3), knobs)
    r = ls.Resolved(coords=(0.0,), random_norm=1.0, envs=4, chunk_steps=40, sizes=(3, 9), max_chunks=300,
                    step_envs=(1,), own=None, exact=False, length_episodes=4)
    counts = jnp.array([3, 9], jnp.int32)

    def everyone_steps(key):   # the stream as it ran before idling, every environment stepping to the end
        E = r.envs
        quota = counts[:, None] // E + (jnp.arange(E)[None, :] < counts[:, None] % E)
        k_reset, k_run = jax.random.split(key)
        carry, _ = reset_envs(env, k_reset, E, agent.filters, knobs, frozen=True)
        zero = jax.tree.map(lambda x: jnp.zeros(counts.shape, jnp.float32), ReturnSums(n=0, pairs=0, mean=0, m2=0))

        def body(state):
            carry, ended, acc, c = state
            carry, _, tr = collect(env, agent.policy, carry, agent.filters, jax.random.fold_in(k_run, c), knobs,
                                   r.chunk_steps, frozen=True)
            index = ended[None, :] + jnp.cumsum(tr.done, axis=0) - 1
            counted = tr.done[None] & (index[None] < quota[:, None, :])
            part = jax.vmap(lambda w: ReturnSums.of(tr.finished_return, w, tr.finished_length))(counted)
            return carry, ended + jnp.sum(tr.done, axis=0), acc.merge(part), c + 1

        state = (carry, jnp.zeros(E, jnp.int32), zero, jnp.int32(0))
        return jax.lax.while_loop(lambda s: (s[3] < r.max_chunks) & jnp.any(s[1] < quota[-1]), body, state)[2]

    keys = jax.random.split(jax.random.PRNGKey(5), 3)
    idling = jax.jit(jax.vmap(lambda k: ls.return_stream(env, r, agent.policy, agent.filters, knobs, k, counts)))(keys)
    reference = jax.jit(jax.vmap(everyone_steps))(keys)
    np.testing.assert_array_equal(np.asarray(idling.n), [[3, 9]] * 3)
    np.testing.assert_array_equal(np.asarray(idling.pairs), np.asarray(reference.pairs))
    np.testing.assert_allclose(np.asarray(idling.mean), np.asarray(reference.mean), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(idling.m2), np.asarray(reference.m2), rtol=1e-5)
    carry, _ = reset_envs(env, keys[0], 2, agent.filters, knobs, frozen=True)
    with pytest.raises(ValueError, match="needs frozen filters"):
        collect(env, agent.policy, carry, agent.filters, keys[1], knobs, 4, quota=jnp.ones(2, jnp.int32))


def test_the_stream_bound_covers_the_length_episodes():
    """The streams' chunk bound lets the length stream's episodes (one per environment) reach the time limit
    (LQR: 10,000 steps, 40 chunks of 250), however few pairs a point asks for; the memory estimate counts
    the length stream's environments where they outnumber the grid's (and the streams, not the step batch,
    set the peak)."""
    from pgdiag import preset

    static = preset("ppo", "lqr").static
    r = ls.resolve(ls.LandscapeSettings(points=2, sizes=(4,), envs=4, length_episodes=1000, chunk_steps=250),
                   [static])
    assert r.length_episodes == 1000 and r.max_chunks * r.chunk_steps >= 10_000
    # 4 points × 4 environments: 2 or 16 length episodes cost nothing more (the step batch sets the peak),
    # 258, 516 and 1000 (258 × 250 steps × 13 words over the step batch's 2,048 pairs × 146) linearly more
    wide, mid, low, grid, narrow = (landscape_bytes(static, dataclasses.replace(r, length_episodes=m), 1, 2, 1, 4,
                                                       "vmap") for m in (1000, 516, 258, 16, 2))
    assert narrow == grid < low < mid < wide and (wide - mid) * (516 - 258) == (mid - low) * (1000 - 516)


def test_a_plan_too_large_splits_itself_before_it_refuses():
    """The papers' surrogate landscape (1e6 pairs per point, 7 × 7 grid) for 6 Humanoid subjects, 64
    environments per point, against memory budgets set from its own estimates: what fits runs as asked;
    below the vmapped estimate the subjects go in turn; below that the chunks shorten (memory falls, the
    episodes run are the same) until the step batch sets the peak; below that floor the study refuses.
    Nothing is compiled."""
    from pgdiag import preset

    static = preset("ppo", "humanoid").static
    r = ls.resolve(ls.LandscapeSettings(sizes=(1_000_000,), envs=64), [static])
    shapes = (276, 17, 30_000)
    vmapped = landscape_bytes(static, r, 6, *shapes, "vmap")
    in_turn = landscape_bytes(static, r, 6, *shapes, "map")
    assert in_turn * 6 == vmapped
    assert ls.fit(static, r, 6, *shapes, "vmap", vmapped) == (r, "vmap", vmapped, "")
    assert ls.fit(static, r, 6, *shapes, "vmap", vmapped - 1) == (r, "map", in_turn, "subjects in turn")
    fitted, batching, need, changed = ls.fit(static, r, 6, *shapes, "vmap", in_turn - 1)
    assert batching == "map" and fitted.chunk_steps < r.chunk_steps and need <= in_turn - 1
    assert fitted.chunk_steps * fitted.max_chunks >= r.chunk_steps * r.max_chunks   # still runs every episode
    assert changed == f"subjects in turn, chunks of {fitted.chunk_steps} steps instead of {r.chunk_steps}"
    floor = ls.fit(static, r, 6, *shapes, "vmap", 1)
    assert floor[2] > 1 and ls.fit(static, r, 6, *shapes, "map", floor[2])[2] == floor[2]
    assert floor[0].chunk_steps > 1   # shorter chunks would not lower the step batch's peak
