"""Baseline diagnostics: the no-baseline estimator against returns worked out by a second method, the value
fit on a function it can represent, the study's tables, and bad input refused before compiling."""

import dataclasses
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from pgdiag import envs, load_checkpoint, load_run, make_train, networks, stages
from pgdiag.diagnostics import DiagnosticError
from pgdiag.studies.baselines import measure as bl
from pgdiag.studies.baselines import paired_t, value_fit
from pgdiag.studies.baselines.memory import baseline_bytes
from pgdiag.studies.baselines.diagnostic import baseline_study, load_baseline_study
from pgdiag.diagnostics.sampling import Sampling
from pgdiag.diagnostics.streaming import Grid, stream
from pgdiag.diagnostics.subjects import load_subjects, plan_subjects
from pgdiag.objectives import normalize_advantages, probability_ratio, surrogate
from pgdiag.rollout import reset_envs
from pgdiag.run import CompileCounter


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


KNOBS = {"orthogonal_init": jnp.bool_(True), "tanh_activations": jnp.bool_(True), "adam_eps": jnp.float32(1e-5),
         "value_clipping": jnp.bool_(False), "value_clip_eps": jnp.float32(0.2)}


def _affine_data(noise=0.0, C=28, B=1024):
    """Returns that are an affine function of the observation, f(o) = 2·o₀ − o₁ + 3 (observations uniform on
    [−1, 1]², so f lies in [0, 6]; E[f] = 3, Var f = 4/3 + 1/3 = 5/3, E[f²] = 9 + 5/3), plus N(0, noise²) noise
    per state: C chunks of B states, the last 20 held out."""
    obs = jax.random.uniform(jax.random.PRNGKey(0), (C, B, 2), minval=-1.0, maxval=1.0)
    eps = noise * jax.random.normal(jax.random.PRNGKey(3), (C, B))
    return value_fit.FitData(obs=obs, returns=2 * obs[..., 0] - obs[..., 1] + 3.0 + eps, complete=jnp.ones((C, B), bool))


def _fit(data, agent_value, fit_start="fresh", hidden=(64, 64), start=None, **settings):
    """fit_value on ``data`` with 20 held-out chunks, jitted; the agent's network is ``agent_value``."""
    C, B = data.returns.shape

    class Static:
        value_hidden = hidden

    class Agent:
        value = agent_value

    settings = bl.BaselineSettings(**{**dict(fit_epochs=30, fit_minibatch=256, fit_lr=1e-3, fit_start=fit_start),
                                      **settings})
    r = bl.Resolved(baselines=("fitted",), grid=Grid((2,), B), estimates=2,
                    own=Sampling(envs=4, steps=256, start="reset"), fit_chunks=C, heldout_chunks=20, tail=0,
                    fit_lanes=1, exact=False, batch_size=B)
    return jax.jit(lambda d, k, s: value_fit.fit_value(Static, settings, r, d, Agent, KNOBS, k, start=s))(
        data, jax.random.PRNGKey(2), start)


def _linear(w0, w1, b):
    """A linear value network (no hidden layer): v(o) = w0·o₀ + w1·o₁ + b."""
    return {"layers": [{"w": jnp.array([[w0], [w1]], jnp.float32), "b": jnp.array([b], jnp.float32)}]}


def test_the_paired_t_test_against_closed_forms():
    """t = mean/(sd/√n) by hand in float64, and the one-sided p-value against Student's t in closed form:
    1 degree of freedom (Cauchy) P(T > t) = 1/2 − atan(t)/π; 2 degrees, 1/2 − t/(2√(2 + t²)); 19 (the
    study's 20 chunks) against the table's quantiles t₀.₉₅ = 1.7291, t₀.₉₉ = 2.5395, t₀.₉₉₅ = 2.8609."""
    rng = np.random.default_rng(0)
    for n in (2, 3, 20, 37):
        d = rng.normal(0.3, 1.0, n)
        t = d.mean() / (d.std(ddof=1) / np.sqrt(n))
        got = paired_t.paired_t(jnp.asarray(d, jnp.float32))
        assert float(got.t) == pytest.approx(t, rel=1e-4) and int(got.n) == n
        assert float(got.mean) == pytest.approx(d.mean(), rel=1e-4, abs=1e-6)
        assert float(got.se) == pytest.approx(d.std(ddof=1) / np.sqrt(n), rel=1e-4)
        if n == 2:
            assert float(got.p) == pytest.approx(0.5 - np.arctan(t) / np.pi, abs=1e-5)
        if n == 3:
            assert float(got.p) == pytest.approx(0.5 - t / (2 * np.sqrt(2 + t * t)), abs=1e-5)
    for t, p in ((1.7291, 0.05), (2.5395, 0.01), (2.8609, 0.005), (0.0, 0.5), (-1.7291, 0.95)):
        assert float(paired_t.student_t_sf(jnp.float32(t), 19.0)) == pytest.approx(p, abs=2e-5), t
    # the differences left out: masked, non-finite; fewer than two: no test
    d = jnp.array([1.0, 2.0, jnp.nan, 4.0, 100.0])
    got = paired_t.paired_t(d, jnp.array([True, True, True, True, False]))
    assert int(got.n) == 3 and float(got.mean) == pytest.approx(7 / 3)
    assert np.isnan(float(paired_t.paired_t(jnp.array([1.0])).p))
    # equal non-zero differences: no spread, t = ±∞ and p = 0 or 1; all zero: no evidence either way
    assert float(paired_t.paired_t(jnp.full(20, 0.5)).p) == 0.0 and float(paired_t.paired_t(jnp.full(20, -0.5)).p) == 1.0
    assert np.isnan(float(paired_t.paired_t(jnp.zeros(20)).p))


def test_v_star_at_the_true_value_stops_after_one_round_on_squared_error_where_mre_would_prefer_zero():
    """Returns f(o) + N(0, 1) noise; the agent's network is zero, V* starts at f itself (a linear network).
    V*'s held-out MSE is the noise, 1; the zero network's is E[f²] + 1 = 11.67: V* is shown better at the
    first look (round 1, fit_epochs epochs) with a t in the hundreds. The mean relative error ranks them the
    other way (|0 − R|/|R| = 1 against E|ε|/|f + ε| ≈ 2, blown up by returns near 0): why the test and the
    stopping rule read squared errors. Same seed, same numbers."""
    data = _affine_data(noise=1.0)
    _, rep = _fit(data, _linear(0, 0, 0), hidden=(), start=_linear(2, -1, 3), fit_epochs=5, fit_rounds=3)
    assert bool(rep.fitted_better) and int(rep.fit_rounds_used) == 1 and int(rep.fit_epochs_used) == 5
    assert int(rep.heldout_chunks) == 20 and float(rep.fit_t) > 50 and float(rep.fit_p) < 1e-10
    assert float(rep.fitted_mse) == pytest.approx(1.0, rel=0.05)          # the noise: 20,480 states, SE ~1%
    assert float(rep.agent_mse) == pytest.approx(9 + 5 / 3 + 1, rel=0.03)   # E[f²] + 1
    assert float(rep.mse_improvement) == pytest.approx(float(rep.agent_mse - rep.fitted_mse), rel=1e-4)
    assert float(rep.fitted_mre) > float(rep.agent_mre) == pytest.approx(1.0)
    _, again = _fit(data, _linear(0, 0, 0), hidden=(), start=_linear(2, -1, 3), fit_epochs=5, fit_rounds=3)
    assert all(np.array_equal(np.asarray(getattr(rep, f.name)), np.asarray(getattr(again, f.name)), equal_nan=True)
               for f in dataclasses.fields(rep))


def test_v_star_that_cannot_beat_the_agent_runs_to_the_cap_and_says_so():
    """The agent's network is f itself; V* is a linear network far from it, held in place by a learning rate
    of 1e-9: its held-out MSE stays ≈ 10.5 against the agent's ≈ 1, so every round's t is about −150 and the fit
    runs all fit_rounds rounds, not shown better (the test would fail only if a t of −150 read as significant)."""
    _, rep = _fit(_affine_data(noise=1.0), _linear(2, -1, 3), hidden=(), start=_linear(0.7, -0.6, 0),
                  fit_epochs=5, fit_rounds=3, fit_lr=1e-9)
    assert not bool(rep.fitted_better) and int(rep.fit_rounds_used) == 3 and int(rep.fit_epochs_used) == 15
    assert float(rep.fit_t) < -50 and float(rep.fit_p) > 0.99 and float(rep.mse_improvement) < 0


def test_under_vmap_a_subject_shown_better_stops_while_the_others_go_on():
    """Two subjects in one vmapped fit against an agent's network 0.8·f (MSE 1 + 0.04·E[f²] ≈ 1.43): V* at f
    (shown better after round 1), and V* from zero, which at this learning rate has MSE ≈ 3.9, 1.6, 1.08 after
    rounds 1–3 (t ≈ −127, −29, +54: no round near the threshold). The first keeps its round-1 parameters (those
    of a fit capped at one round) while the second goes on; each reports its own rounds."""
    data = _affine_data(noise=1.0)

    class Static:
        value_hidden = ()

    settings = bl.BaselineSettings(fit_epochs=2, fit_minibatch=256, fit_lr=3e-2, fit_rounds=4, fit_start="fresh")
    r = bl.Resolved(baselines=("fitted",), grid=Grid((2,), 1024), estimates=2,
                    own=Sampling(envs=4, steps=256, start="reset"), fit_chunks=28, heldout_chunks=20, tail=0,
                    fit_lanes=1, exact=False, batch_size=1024)
    agent = type("Agent", (), {"value": _linear(1.6, -0.8, 2.4)})   # MSE 1 + E[(0.2·f)²] ≈ 1.43

    def fit(start, s=settings):
        return value_fit.fit_value(Static, s, r, data, agent, KNOBS, jax.random.PRNGKey(2), start=start)

    starts = jax.tree.map(lambda a, b: jnp.stack([a, b]), _linear(2, -1, 3), _linear(0, 0, 0))
    params, rep = jax.jit(jax.vmap(fit))(starts)
    assert np.asarray(rep.fitted_better).tolist() == [True, True]
    rounds = np.asarray(rep.fit_rounds_used)
    assert rounds.tolist() == [1, 3]
    one, _ = jax.jit(lambda s: fit(s, dataclasses.replace(settings, fit_rounds=1)))(_linear(2, -1, 3))
    # a vmapped program against one alone: the same fit's float32 arithmetic, fused differently
    np.testing.assert_allclose(params["layers"][0]["w"][0], one["layers"][0]["w"], rtol=1e-5, atol=1e-6)
    alone = jax.jit(fit)(_linear(0, 0, 0))[1]
    assert int(alone.fit_rounds_used) == rounds[1]


def test_the_value_fit_recovers_a_function_it_can_represent():
    """From a fresh network: the fitted network's held-out explained variance is near 1 and its MSE near 0;
    the agent's (a zero network) explained variance is 0 — 1 − Var(R)/Var(R) with a constant — its MSE
    E[f²] = 9 + 5/3 and its MRE 1 (|0 − R|/|R|); V* is shown better at the first look."""
    zero = jax.tree.map(jnp.zeros_like, networks.init_value(jax.random.PRNGKey(1), 2, (64, 64), KNOBS))
    _, report = _fit(_affine_data(), zero)
    assert float(report.fitted_ev) > 0.98 and float(report.fitted_mre) < 0.1 and float(report.fitted_mse) < 0.05
    assert abs(float(report.agent_ev)) < 1e-6 and float(report.agent_mre) == pytest.approx(1.0)
    assert float(report.agent_mse) == pytest.approx(9 + 5 / 3, rel=0.02)   # 20,480 held-out states, SE ~0.5%
    assert bool(report.fitted_better) and int(report.fit_rounds_used) == 1
    # 20 held-out chunks of 1,024 states each: the mean of the per-chunk differences is the pooled one
    assert float(report.improvement) == pytest.approx(float(report.agent_mre - report.fitted_mre), rel=1e-5)
    assert float(report.improvement) - 1.96 * float(report.improvement_se) > 0


def test_the_value_fit_starts_from_the_agents_network_by_default():
    """``fit_start="agent"`` (the default) refines the agent's own network: from a random network that does not
    fit the returns it reaches the same quality as a fresh fit; from a zero network, whose hidden units get no
    gradient, only the output bias moves (which is how the start is seen to be the agent's): V* stays a
    constant, explained variance exactly 0, yet closer to the returns than zero and so shown better."""
    assert bl.BaselineSettings().fit_start == "agent"
    random_net = networks.init_value(jax.random.PRNGKey(1), 2, (64, 64), KNOBS)
    _, report = _fit(_affine_data(), random_net, "agent")
    assert float(report.fitted_ev) > 0.98 and float(report.fitted_mre) < 0.1 < float(report.agent_mre)
    zero = jax.tree.map(jnp.zeros_like, random_net)
    _, stuck = _fit(_affine_data(), zero, "agent")
    assert abs(float(stuck.fitted_ev)) < 1e-5 and float(stuck.fitted_mse) < float(stuck.agent_mse)
    assert bool(stuck.fitted_better) and int(stuck.fit_rounds_used) == 1


def test_v_star_against_the_exact_value_on_lqr(agent, lqr_runs):
    """On the linear-quadratic task V^π is exact (pgdiag.stages.exact_value). V* fit fresh on 2^16 pairs of the
    agent's policy, 20 held-out batches (independent streams of 4 × 256 steps):

    * the complete Monte-Carlo returns are unbiased for V^π: the per-batch mean of R − V^π(s) is 0 within
      4 standard errors (t with 19 degrees of freedom: a false failure once in ~1,300);
    * MSE against the returns = MSE against V^π + the noise floor E[(R − V^π)²], per batch, up to a cross term
      of mean 0 (again |t| < 4): what makes the returns-MSE t-test a test of closeness to V^π;
    * V* explains ≥ 65% of V^π's variance over the held-out states (its MSE against V^π below 0.35·Var V^π,
      the best constant's MSE; seeds 0–4 gave 0.02–0.16), an untrained network next to none (≥ 0.9·Var:
      it is nearly constant; seeds gave 1.2–3.4);
    * the t-test's decision agrees with the exact ordering both ways: V* against the agent's network (shown
      better, and closer to V^π), and an untrained network held still against V* (not shown, farther)."""
    env, state, knobs = agent
    from pgdiag.diagnostics.sampling import frozen_filters

    static = load_run(lqr_runs["ppo"]).config(0).static
    settings = bl.BaselineSettings(fit_pairs=65536, fit_epochs=10, fit_minibatch=512, fit_start="fresh",
                                   fit_rounds=3, baselines=("value", "fitted"))
    r = bl.resolve(settings, [static])
    assert r.exact and r.heldout_apart and r.heldout_chunks == 20 and r.own.chunk == 1024
    assert r.floor_chunks == 20 and r.kept_out == 40
    train = r.fit_chunks - r.kept_out
    test_end = train + r.heldout_chunks      # the t-test's batches; the floor's after them

    @jax.jit
    def measure(state, key):
        a = state.replace(filters=frozen_filters(env, r.own, state, knobs, key))
        data = value_fit.fit_data(env, r, a, knobs, jax.random.fold_in(key, 1), stages.exact_value(envs.EXACT["lqr"], a.policy, a.filters, knobs))
        params, rep = value_fit.fit_value(static, settings, r, data, a, knobs, jax.random.fold_in(key, 2))
        fresh = networks.init_value(jax.random.fold_in(key, 3), env.obs_size, static.value_hidden, knobs)
        held = dataclasses.replace(settings, fit_lr=1e-12, fit_epochs=1, fit_rounds=2)
        _, back = value_fit.fit_value(static, held, r, data, a.replace(value=params), knobs, jax.random.fold_in(key, 4),
                               start=fresh)
        return data, params, fresh, rep, back

    data, params, fresh, rep, back = measure(state, jax.random.PRNGKey(0))
    assert bool(jnp.all(data.complete))
    R, ex = (np.asarray(x[train:test_end], np.float64) for x in (data.returns, data.exact))

    def t(per_batch):
        return per_batch.mean() / (per_batch.std(ddof=1) / np.sqrt(len(per_batch)))

    assert abs(t((R - ex).mean(1))) < 4
    floor = ((R - ex) ** 2).mean(1)
    for p in (params, fresh, state.value):
        v = np.asarray(networks.value_apply(p, data.obs[train:test_end], knobs), np.float64)
        assert abs(t(((v - R) ** 2).mean(1) - ((v - ex) ** 2).mean(1) - floor)) < 4
    assert float(rep.exact_mse) == pytest.approx(floor.mean(), rel=1e-4)
    var = ex.var()
    v_fresh = np.asarray(networks.value_apply(fresh, data.obs[train:test_end], knobs), np.float64)
    assert float(rep.fitted_mse_exact) < 0.35 * var and ((v_fresh - ex) ** 2).mean() > 0.9 * var
    assert bool(rep.fitted_better) and float(rep.fitted_mse_exact) < float(rep.agent_mse_exact)
    assert not bool(back.fitted_better) and int(back.fit_rounds_used) == 2
    assert float(back.fitted_mse_exact) > float(back.agent_mse_exact)
    # the floor: on the 20 batches after the t-test's, which no look read — numpy's MREs of V^π (what a perfect
    # value function reads from the returns' noise), of V* and of the agent's network over their non-terminal
    # states, against the complete returns and against the returns cut at the batch end (each segment's first
    # 256 steps per environment)
    assert int(rep.floor_chunks) == 20
    fl = slice(test_end, None)
    R_f, cut_f, ex_f = (np.asarray(x[fl], np.float64).ravel() for x in (data.returns, data.truncated, data.exact))
    nt = np.asarray(data.nonterminal[fl]).ravel()
    assert nt.mean() < 1 and not np.allclose(cut_f, R_f)    # done steps and episodes outliving the batch end

    def mre(v, target):
        keep = nt & (target != 0)
        return np.mean(np.abs(v - target)[keep] / np.abs(target[keep]))

    v_star, v_agent = (np.asarray(networks.value_apply(p, data.obs[fl], knobs), np.float64).ravel()
                       for p in (params, state.value))
    for got, want in ((rep.floor_exact_mre, mre(ex_f, R_f)), (rep.floor_exact_mre_truncated, mre(ex_f, cut_f)),
                      (rep.floor_fitted_mre, mre(v_star, R_f)), (rep.floor_agent_mre, mre(v_agent, R_f)),
                      (rep.floor_fitted_mre_truncated, mre(v_star, cut_f)),
                      (rep.floor_agent_mre_truncated, mre(v_agent, cut_f))):
        assert float(got) == pytest.approx(want, rel=1e-4)
    assert float(rep.floor_fitted_mse) == pytest.approx(np.mean(((v_star - R_f) ** 2)[nt]), rel=1e-4)
    assert float(rep.floor_agent_mse) == pytest.approx(np.mean(((v_agent - R_f) ** 2)[nt]), rel=1e-4)


@pytest.fixture(scope="module")
def study(lqr_runs):
    return baseline_study([lqr_runs["ppo"], lqr_runs["trpo"]], iterations=[5], sizes=(100, 1000, 2048),
                          estimates=4, fit_pairs=8192, fit_epochs=5, fit_minibatch=512,
                          baselines=("value", "fitted", "zero", "zero_raw"))


def test_study_measures_every_baseline_on_the_same_grid_and_saves_it(study, lqr_runs):
    assert study.baselines == ["value", "fitted", "zero", "zero_raw", "exact"]   # exact added on the LQR task
    assert sorted(study.pairs.n.unique()) == [100, 1024, 2048]   # the batch size (1,024) in place of 1,000
    assert len(study.pairs) == 2 * 5 * 3 * 6 and np.all(np.abs(study.pairs.cosine) <= 1 + 1e-5)
    # the two readings of "no baseline" are different estimators (with and without the normalization's mean
    # subtraction) on the same trajectories: their cosines differ
    c = study.pairs[study.pairs.n == 2048].groupby(["run", "baseline"]).cosine.mean().unstack()
    assert (c["zero_raw"] != c["zero"]).all()
    f = study.fits
    # 8 batches of 1,024 pairs: 7 train V* (its 10% share, 1 batch, held out), but at least 20 are held out for
    # the t-test, and 20 more for the floor
    assert len(f) == 2 and (f.fit_pairs == 47 * 1024).all() and (f.heldout_pairs == 20 * 1024).all()
    assert (f.heldout_chunks == 20).all() and (f.floor_chunks == 20).all() and f.fitted_better.dtype == bool
    cols = ["fitted_mre", "agent_mre", "fitted_ev", "agent_ev", "improvement", "improvement_se", "fitted_mse",
            "agent_mse", "mse_improvement", "mse_improvement_se", "fit_t", "fit_p", "fitted_mse_exact",
            "agent_mse_exact", "exact_mse", "floor_fitted_mre", "floor_agent_mre", "floor_fitted_mre_truncated",
            "floor_agent_mre_truncated", "floor_fitted_mse", "floor_agent_mse", "floor_exact_mre",
            "floor_exact_mre_truncated"]
    assert np.isfinite(f[cols].to_numpy(float)).all()
    # the rounds stop at the first look that shows V* better, else at the cap (4): the last look decides
    assert ((f.fit_rounds_used >= 1) & (f.fit_rounds_used <= 4)).all() and (f.fit_epochs_used == 5 * f.fit_rounds_used).all()
    assert (f.fitted_better == (f.fit_p < 0.05 / 4)).all() and (f.fit_look_level == 0.05 / 4).all()
    assert (f.fitted_better | (f.fit_rounds_used == 4)).all()
    # the noise floor is below every network's MSE against the returns (a V* shown better closer to V^π here)
    assert (f.exact_mse < f.fitted_mse).all() and (f.exact_mse < f.agent_mse).all()
    again = load_baseline_study([lqr_runs["ppo"], lqr_runs["trpo"]])
    np.testing.assert_allclose(again.pairs.cosine, study.pairs.cosine)
    s = again.summary()
    assert set(s.baseline) == {"value", "fitted", "zero", "zero_raw", "exact"} and np.isfinite(s.at_batch_size).all()
    # the figure's summary carries the floor's means over agents beside the t-test batches' errors
    from pgdiag.studies.baselines import targets as target
    table = target.summary({"lqr": again})
    floor = table[list(target.FLOOR_MEANS)].to_numpy(float)
    assert np.isfinite(floor).all()
    row = table.iloc[0]
    one = f[(f.label == row.label) & (f.iteration == row.iteration)]
    assert row.floor_fitted_mre == pytest.approx(one.floor_fitted_mre.mean())


def test_a_subject_measured_with_others_is_the_subject_measured_alone(study, lqr_runs):
    """Vmapped over its subjects, the study still fits V* one subject after another (a fit stops at its own
    round, not the slowest subject's): the PPO run's agent measured alone gives the rounds, verdict and errors it
    was given beside the TRPO run's (float32 programs of another batch: within 1e-5), and its cosines."""
    alone = baseline_study([lqr_runs["ppo"]], iterations=[5], sizes=(100, 1000, 2048), estimates=4,
                           fit_pairs=8192, fit_epochs=5, fit_minibatch=512,
                           baselines=("value", "fitted", "zero", "zero_raw"), save=False)
    together = study.fits[study.fits.run == alone.fits.run.iloc[0]].reset_index(drop=True)
    for col in ("fit_rounds_used", "fitted_better", "heldout_chunks"):
        assert together[col].tolist() == alone.fits[col].tolist()
    for col in ("fitted_mre", "agent_mre", "fitted_mse", "mse_improvement", "floor_fitted_mre"):
        np.testing.assert_allclose(alone.fits[col], together[col], rtol=1e-5)
    pairs = study.pairs[study.pairs.run == alone.fits.run.iloc[0]].reset_index(drop=True)
    np.testing.assert_allclose(alone.pairs.cosine, pairs.cosine, rtol=1e-5, atol=1e-6)


def test_the_baseline_memory_counts_the_floor_by_hand():
    """Policy (4,), value (5,), 3 observations, 1 action, 10 parameters; K = 2 streams of 2 × 4-pair chunks, 2
    sizes, baselines value and fitted (2 heads): a pair differentiated costs 2·3 + 2·1 + 12 + 2 + 3·4 + 3·5 = 49
    words, the streams 2·8·49 + 2·2·(2 + 4)·10 = 1,024. The fit: 10 chunks of 8 pairs, each pair kept as its
    observation and 6 words (80·9 = 720), and — the held-out batches streams of their own (not from reset) —
    1 training lane + 3 t-test + 2 floor batches sampled side by side, each 2 × (4 + 6 tail) steps of 20 stored
    words: 6·2·10·20 = 2,400; the fit's 3,120 words is the larger, 12,480 bytes per subject. Without the floor's
    2 batches: 8·8·9 + 4·2·10·20 = 2,176 words."""
    static = type("S", (), {"policy_hidden": (4,), "value_hidden": (5,)})
    r = bl.Resolved(baselines=("value", "fitted"), grid=Grid((2, 8), 8), estimates=2,
                    own=Sampling(envs=2, steps=4, start="checkpoint"), fit_chunks=10, heldout_chunks=3, tail=6,
                    fit_lanes=1, exact=False, batch_size=8, floor_chunks=2)
    assert r.heldout_apart and r.kept_out == 5
    assert baseline_bytes(static, r, 2, 3, 1, 10, "vmap") == 2 * 4 * 3120
    assert baseline_bytes(static, r, 2, 3, 1, 10, "map") == 4 * 3120
    no_floor = dataclasses.replace(r, fit_chunks=8, floor_chunks=0)
    assert baseline_bytes(static, no_floor, 1, 3, 1, 10, "map") == 4 * 2176


def test_resolve_keeps_the_floor_apart_from_the_t_test():
    """LQR PPO's batch (4 × 256 = 1,024 pairs, its chains not reset): 2e5 fit pairs are 196 batches, 20 of them
    (its 10% share) held out for the t-test, 176 train; 7 more for the floor: 203 in all."""
    static = types.SimpleNamespace(task="lqr", policy_hidden=(), network="mlp", num_envs=4, steps_per_env=256,
                                   reset_every_iteration=False, algorithm="ppo")
    r = bl.resolve(bl.BaselineSettings(fit_pairs=200_000, floor_chunks=7), [static])
    assert (r.heldout_chunks, r.floor_chunks, r.kept_out) == (20, 7, 27)
    assert r.fit_chunks - r.kept_out == 176 and r.fit_chunks == 203


@pytest.mark.parametrize("change,match", [
    (dict(baselines=("none",)), "baselines must be"),
    (dict(baselines=()), "baselines must be"),
    (dict(estimates=1), "estimates"),
    (dict(sizes=(1,)), "every N"),
    (dict(sizes=(100, False)), "sizes must be a list whose elements are each an integer, got False"),
    (dict(baselines=("value", 1)), "baselines must be a list whose elements are each a string, got 1"),
    (dict(fit_pairs=100), "fit_pairs"),
    (dict(heldout_fraction=1.0), "heldout_fraction"),
    (dict(heldout_chunks=19), "heldout_chunks must be an integer ≥ 20"),
    (dict(floor_chunks=1), "floor_chunks must be an integer ≥ 2"),
    (dict(fit_rounds=0), "fit_rounds must be an integer ≥ 1"),
    (dict(fit_level=1.5), "fit_level must be in"),
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
    from pgdiag import preset, sweep
    sweep(preset("ppo", "point_mass").replace(num_iterations=1, checkpoint_at=(1,)), seeds=1, out=str(tmp_path))
    with CompileCounter() as counter, pytest.raises(DiagnosticError, match="linear-quadratic"):
        baseline_study([str(tmp_path)], baselines=("exact",), save=False)
    assert counter.count == 0


def test_a_fit_segments_tail_idles_once_the_episode_at_its_last_kept_state_ends():
    """V*'s fit segments from reset run past their kept states only to complete those states' returns: with a
    quota of one episode counted from the last kept step, each environment steps exactly as it would without
    one until the first episode ending at or after that step, and after it is idle (native MuJoCo does not
    step it: no done, no reward). The kept steps' observations, complete returns and completeness are the
    same, bit for bit, as those of a segment that stepped every environment to its end."""
    from pgdiag import preset
    from pgdiag.rollout import collect, discounted_returns, episode_completes

    env = envs.make("hopper", "native", 1)
    assert env.skips_idle
    cfg = preset("ppo", "hopper")
    knobs = cfg.knobs.as_arrays()
    agent = make_train(cfg.static).init(jax.random.PRNGKey(3), knobs)   # untrained: it falls within tens of steps
    kept, total, width = 40, 400, 3
    k_reset, k_run = jax.random.split(jax.random.PRNGKey(7))
    carry, _ = reset_envs(env, k_reset, width, agent.filters, knobs, frozen=True)

    @jax.jit
    def both():
        run = lambda **q: collect(env, agent.policy, carry, agent.filters, k_run, knobs, total,  # noqa: E731
                                  frozen=True, **q)[2]
        return run(), run(quota=jnp.ones(width, jnp.int32), quota_from=kept - 1)

    every, idling = both()
    done = np.asarray(every.done)
    for e in range(width):
        ends = np.flatnonzero(done[kept - 1:, e])
        assert ends.size, "an untrained Hopper agent ends an episode within 360 steps"
        last = kept - 1 + ends[0]   # the step the episode running at the last kept state ends
        for field in ("obs", "action", "reward", "raw_reward", "done"):
            np.testing.assert_array_equal(np.asarray(getattr(idling, field))[:last + 1, e],
                                          np.asarray(getattr(every, field))[:last + 1, e])
        assert not np.asarray(idling.done)[last + 1:, e].any()
        assert not np.asarray(idling.raw_reward)[last + 1:, e].any()
    gamma = knobs["gamma"]
    for fn in (lambda tr: discounted_returns(tr.reward, tr.done, gamma), lambda tr: episode_completes(tr.done)):
        np.testing.assert_array_equal(np.asarray(fn(idling))[:kept], np.asarray(fn(every))[:kept])
