"""Baseline diagnostics: the no-baseline estimator against returns worked out by a second method, the value
fit on a function it can represent, the study's tables, and bad input refused before compiling."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from pg_diag import load_checkpoint, load_run, make_train, networks, stages
from pg_diag.diagnostics import DiagnosticError
from pg_diag.diagnostics import baselines as bl
from pg_diag.diagnostics.baseline_study import baseline_study, load_baseline_study
from pg_diag.diagnostics.sampling import Sampling
from pg_diag.diagnostics.streaming import Grid, stream
from pg_diag.diagnostics.subjects import load_subjects, plan_subjects
from pg_diag.objectives import normalize_advantages, probability_ratio, surrogate
from pg_diag.rollout import reset_envs
from pg_diag.run import CompileCounter


@pytest.fixture(scope="module")
def agent(lqr_runs):
    run = load_run(lqr_runs["ppo"])
    cfg = run.config(0)
    return make_train(cfg.static).env, jax.tree.map(lambda x: x[0], load_checkpoint(run, 5)), cfg.knobs.as_arrays()


def _returns_by_hand(reward, done, gamma):
    """Discounted returns inside episodes, by an explicit backward loop in float64 ([T, E])."""
    reward, done = np.asarray(reward, np.float64), np.asarray(done)
    out, acc = np.zeros_like(reward), np.zeros(reward.shape[1])
    for t in range(reward.shape[0] - 1, -1, -1):
        acc = reward[t] + gamma * (~done[t]) * acc
        out[t] = acc
    return out


def test_the_zero_baseline_estimate_is_the_returns_estimator(agent):
    """The 'zero' baseline stream (advantages='returns') equals ∇ of the surrogate whose advantages are
    the discounted returns — computed here by a second method, a float64 loop over the rewards of the
    same trajectories — normalized over the N pairs, at every N."""
    env, state, knobs = agent
    sampling = Sampling(envs=4, steps=32, start="reset", advantages="returns")
    grid = Grid(sizes=(50, 128, 384), chunk=sampling.chunk)
    key = jax.random.PRNGKey(7)
    est, _ = jax.jit(lambda s, k: stream(env, sampling, grid, s, knobs, k, True))(state, key)

    @jax.jit
    def trajectories(state, key):
        _, k_chunks = jax.random.split(key)
        out = []
        for c in range(grid.num_chunks):
            k_reset, k_roll = jax.random.split(jax.random.fold_in(k_chunks, c))
            carry, _ = reset_envs(env, k_reset, sampling.envs, state.filters, knobs, frozen=True)
            out.append(stages.collect_batch(env, state.policy, state.value, carry, state.filters, knobs, k_roll,
                                            sampling.steps, frozen=True).transitions)
        return out

    obs, action, adv = [], [], []
    for tr in trajectories(state, key):
        ret = _returns_by_hand(tr.reward, tr.done, float(knobs["gamma"]))
        env_major = lambda x: np.swapaxes(np.asarray(x), 0, 1).reshape((-1,) + x.shape[2:])  # noqa: E731
        obs.append(env_major(tr.obs))
        action.append(env_major(tr.action))
        adv.append(env_major(ret))
    obs, action, adv = (jnp.asarray(np.concatenate(x), jnp.float32) for x in (obs, action, adv))
    flat, unravel = ravel_pytree(state.policy)
    for i, n in enumerate(grid.sizes):
        def objective(theta, n=n):
            mean, log_std = networks.policy_apply(unravel(theta), obs[:n], knobs)
            log_prob = networks.gaussian_log_prob(mean, log_std, action[:n])
            return surrogate(probability_ratio(log_prob, jax.lax.stop_gradient(log_prob)),
                             normalize_advantages(adv[:n]))
        g = jax.grad(objective)(flat)
        assert float(jnp.linalg.norm(est[i] - g) / jnp.linalg.norm(g)) < 1e-4, n


def test_baselines_as_heads_of_one_stream_equal_streams_of_their_own(agent):
    """The study samples each stream once and computes every baseline's estimate on it (``heads``): each head
    equals the stream that samples with that advantage estimator alone, from the same key (the same
    trajectories). Two compiled programs: agreement to float32 rounding of sums over ≤ 384 pairs (a relative
    error of a few 1e-6, held to 1e-4 as above)."""
    env, state, knobs = agent
    grid = Grid(sizes=(50, 128, 384), chunk=128)
    key = jax.random.PRNGKey(11)
    heads = (("gae", state.value, True), ("returns", None, True), ("returns", None, False))
    base = Sampling(envs=4, steps=32, start="reset")
    together, sums = jax.jit(lambda s, k: stream(env, base, grid, s, knobs, k, heads=heads))(state, key)
    assert together.shape[:2] == (3, 3) and sums.adv_score.shape[0] == 3
    for h, (kind, _, normalize) in enumerate(heads):
        sampling = Sampling(envs=4, steps=32, start="reset", advantages=kind)
        alone, _ = jax.jit(lambda s, k: stream(env, sampling, grid, s, knobs, k, normalize))(state, key)
        err = jnp.linalg.norm(together[h] - alone, axis=-1) / jnp.linalg.norm(alone, axis=-1)
        assert float(jnp.max(err)) < 1e-4, (kind, normalize, err)
    # and the heads are different estimators of the same pairs
    assert float(jnp.linalg.norm(together[1] - together[2])) > 1e-3 * float(jnp.linalg.norm(together[1]))


def _affine_fit(fit_start, agent_value, knobs):
    """Returns that are an affine function of the observation, 2·o₀ − o₁ + 3 (observations uniform on
    [−1, 1]², so the targets lie in [0, 6]), 10 chunks of 1,024 states, 2 held out."""
    C, B = 10, 1024
    obs = jax.random.uniform(jax.random.PRNGKey(0), (C, B, 2), minval=-1.0, maxval=1.0)
    data = bl.FitData(obs=obs, returns=2 * obs[..., 0] - obs[..., 1] + 3.0, complete=jnp.ones((C, B), bool))

    class Static:
        value_hidden = (64, 64)

    class Agent:
        value = agent_value

    settings = bl.BaselineSettings(fit_epochs=30, fit_minibatch=256, fit_lr=1e-3, fit_start=fit_start)
    r = bl.Resolved(baselines=("fitted",), grid=Grid((2,), B), estimates=2,
                    own=Sampling(envs=4, steps=256, start="reset"), fit_chunks=C, heldout_chunks=2, tail=0, fit_lanes=1,
                    exact=False, batch_size=B)
    return jax.jit(lambda d, k: bl.fit_value(Static, settings, r, d, Agent, knobs, k))(data, jax.random.PRNGKey(2))[1]


KNOBS = {"orthogonal_init": jnp.bool_(True), "tanh_activations": jnp.bool_(True), "adam_eps": jnp.float32(1e-5),
         "value_clipping": jnp.bool_(False), "value_clip_eps": jnp.float32(0.2)}


def test_the_value_fit_recovers_a_function_it_can_represent():
    """From a fresh network: the fitted network's held-out explained variance is near 1, the agent's (a zero
    network) near 0 — 1 − Var(R)/Var(R) with a constant — and its MRE is 1 (|0 − R|/|R|); the improvement
    over the agent's network is then 1 − fitted MRE, far beyond its standard error."""
    zero = jax.tree.map(jnp.zeros_like, networks.init_value(jax.random.PRNGKey(1), 2, (64, 64), KNOBS))
    report = _affine_fit("fresh", zero, KNOBS)
    assert float(report.fitted_ev) > 0.98 and float(report.fitted_mre) < 0.1
    assert abs(float(report.agent_ev)) < 1e-6 and float(report.agent_mre) == pytest.approx(1.0)
    # two held-out chunks of 1,024 states each: the mean of the per-chunk differences is the pooled one
    assert float(report.improvement) == pytest.approx(float(report.agent_mre - report.fitted_mre), rel=1e-5)
    assert float(report.improvement) - 1.96 * float(report.improvement_se) > 0


def test_the_value_fit_starts_from_the_agents_network_by_default():
    """``fit_start="agent"`` (the default) refines the agent's own network: from a random network that does not
    fit the returns it reaches the same quality as a fresh fit; from a zero network, whose hidden units get no
    gradient, it cannot move (which is how the start is seen to be the agent's)."""
    assert bl.BaselineSettings().fit_start == "agent"
    random_net = networks.init_value(jax.random.PRNGKey(1), 2, (64, 64), KNOBS)
    report = _affine_fit("agent", random_net, KNOBS)
    assert float(report.fitted_ev) > 0.98 and float(report.fitted_mre) < 0.1 < float(report.agent_mre)
    zero = jax.tree.map(jnp.zeros_like, random_net)
    stuck = _affine_fit("agent", zero, KNOBS)
    assert float(stuck.fitted_ev) < 0.5 < float(report.fitted_ev)


@pytest.fixture(scope="module")
def study(lqr_runs):
    return baseline_study([lqr_runs["ppo"], lqr_runs["trpo"]], iterations=[5], sizes=(100, 1000, 2048),
                          estimates=4, fit_pairs=8192, fit_epochs=5, fit_minibatch=512,
                          baselines=("value", "fitted", "zero", "zero_raw"))


def test_study_measures_every_baseline_on_the_same_grid_and_saves_it(study, lqr_runs):
    assert study.baselines == ["value", "fitted", "zero", "zero_raw", "exact"]   # exact added on the LQR task
    assert sorted(study.pairs.n.unique()) == [100, 1000, 1024, 2048]      # the batch size (1,024) added
    assert len(study.pairs) == 2 * 5 * 4 * 6 and np.all(np.abs(study.pairs.cosine) <= 1 + 1e-5)
    # the two readings of "no baseline" are different estimators (with and without the normalization's mean
    # subtraction) on the same trajectories: their cosines differ
    c = study.pairs[study.pairs.n == 2048].groupby(["run", "baseline"]).cosine.mean().unstack()
    assert (c["zero_raw"] != c["zero"]).all()
    f = study.fits
    # 8 batches of 1,024 pairs, 10% held out but at least 2 batches (the comparison's error is taken across them)
    assert len(f) == 2 and (f.fit_pairs == 8192).all() and (f.heldout_pairs == 2048).all()
    assert np.isfinite(f[["fitted_mre", "agent_mre", "fitted_ev", "agent_ev", "improvement",
                          "improvement_se"]].to_numpy()).all()
    again = load_baseline_study([lqr_runs["ppo"], lqr_runs["trpo"]])
    np.testing.assert_allclose(again.pairs.cosine, study.pairs.cosine)
    s = again.summary()
    assert set(s.baseline) == {"value", "fitted", "zero", "zero_raw", "exact"} and np.isfinite(s.at_batch_size).all()


@pytest.mark.parametrize("change,match", [
    (dict(baselines=("none",)), "baselines must be"),
    (dict(baselines=()), "baselines must be"),
    (dict(estimates=1), "estimates"),
    (dict(sizes=(1,)), "every N"),
    (dict(fit_pairs=100), "fit_pairs"),
    (dict(heldout_fraction=1.0), "heldout_fraction"),
    (dict(estimates=200_000), "needs about"),
])
def test_bad_input_is_refused_before_compiling(lqr_runs, change, match):
    # loading the subjects runs a few tiny array ops, compiled once per shape: load them first, so the
    # count below is that of the study's own programs
    load_subjects(plan_subjects([lqr_runs["ppo"]], [5]), optimizer=False)
    with CompileCounter() as counter, pytest.raises(DiagnosticError, match=match):
        baseline_study([lqr_runs["ppo"]], iterations=[5], save=False, **change)
    assert counter.count == 0


def test_exact_baseline_only_on_lqr(tmp_path):
    from pg_diag import preset, sweep
    sweep(preset("ppo", "point_mass").replace(num_iterations=1, checkpoint_at=(1,)), seeds=1, out=str(tmp_path))
    with CompileCounter() as counter, pytest.raises(DiagnosticError, match="linear-quadratic"):
        baseline_study([str(tmp_path)], baselines=("exact",), save=False)
    assert counter.count == 0
