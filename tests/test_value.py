"""Value diagnostics (CL §5.2): the relative error, its targets, and the exact V^π in the learner's units.

The Monte-Carlo test compares a mean over 20,000 episodes with the closed form
within 4.5 standard errors: a false-failure rate below 1e-5 for a normal mean
(discounted returns are sums of many steps, so their mean is close to normal).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from compare import ILL_CONDITIONED_RTOL, assert_frames_close, assert_trees_close
from pgdiag import envs, make_train, networks, preset, seed_key, stages
from pgdiag.config import Knobs
from pgdiag.envs import make
from pgdiag.normalize import RunningStat, push, reward_affine, scale_reward
from pgdiag.objectives import mean_relative_error
from pgdiag.rollout import EnvCarry, Filters, collect, discounted_returns, episode_completes


def test_mean_relative_error_by_hand():
    """|1−2|/2 = 0.5, |3−2|/2 = 0.5, |−2−(−4)|/4 = 0.5, |6−8|/8 = 0.25 (masked out), target 0 left out."""
    pred = jnp.array([1.0, 3.0, -2.0, 6.0, 5.0])
    target = jnp.array([2.0, 2.0, -4.0, 8.0, 0.0])
    assert float(mean_relative_error(pred, target, jnp.array([True, True, True, False, True]))) == 0.5
    assert float(mean_relative_error(pred, target, jnp.ones(5, bool))) == pytest.approx((0.5 * 3 + 0.25) / 4)
    assert math.isnan(float(mean_relative_error(pred, target, jnp.zeros(5, bool))))


def test_complete_returns_are_those_whose_episode_ends_in_the_batch():
    done = jnp.array([[False, False], [True, False], [False, True], [False, False]])
    np.testing.assert_array_equal(episode_completes(done), [[True, True], [True, True], [False, True],
                                                            [False, False]])


def test_value_errors_by_hand():
    """A value network that outputs a constant c (zero weights, bias c): its errors against hand-made
    targets. Returns of rewards (1, 1, 1) with γ = 0.5 and a done at t = 1 in a 3-step batch:
    (1.5, 1, 1); only t = 0 is non-terminal and complete, t = 2 is cut at the batch end."""
    knobs = Knobs(gamma=0.5).as_arrays()
    value = networks.init_value(jax.random.PRNGKey(0), 1, (4,), knobs)
    value = jax.tree.map(jnp.zeros_like, value)
    value["layers"][-1]["b"] = jnp.array([3.0])
    reward = jnp.ones((3, 1))
    done = jnp.array([[False], [True], [False]])
    returns = discounted_returns(reward, done, 0.5)
    np.testing.assert_allclose(returns[:, 0], [1.5, 1.0, 1.0])
    t = stages.ValueTargets(obs=jnp.zeros((3, 1)), gae=jnp.array([2.0, 6.0, 4.0]), returns=returns[:, 0],
                            mask=~done[:, 0], complete=episode_completes(done)[:, 0], exact=jnp.full(3, 6.0))
    e = stages.value_errors(value, t, knobs)
    assert float(e.gae) == pytest.approx((0.5 + 0.25) / 2)          # t = 0: |3−2|/2, t = 2: |3−4|/4
    # the original's GAE "MRE": squared errors over |target|, (3−2)²/2 and (3−4)²/4 (no V_old given: unclipped)
    assert float(e.gae_original) == pytest.approx((0.5 + 0.25) / 2)
    assert float(e.returns) == pytest.approx(1.0)                   # t = 0 only: |3−1.5|/1.5
    assert float(e.returns_truncated) == pytest.approx((1.0 + 2.0) / 2)   # t = 0 and t = 2 (cut): |3−1|/1
    assert float(e.exact) == pytest.approx(0.5)
    # squared errors on the complete-return state t = 0: (3 − 1.5)² and, against V^π = 6, (3 − 6)²; the noise
    # floor (6 − 1.5)²; one state has no variance to explain
    assert float(e.returns_mse) == pytest.approx(2.25) and float(e.exact_mse) == pytest.approx(9.0)
    assert float(e.floor_mse) == pytest.approx(20.25) and math.isnan(float(e.returns_ev))
    # V^π's own relative errors, the floor: |6 − 1.5|/1.5 on t = 0; cut, also |6 − 1|/1 on t = 2
    assert float(e.floor_mre) == pytest.approx(3.0) and float(e.floor_mre_truncated) == pytest.approx(4.0)
    # with V_old (4, ·, 1) and value clipping at 0.2 the original's loss takes the clipped terms:
    # t = 0: (4 − 0.2 − 2)² = 3.24 > 1 → 3.24/2; t = 2: (1 + 0.2 − 4)² = 7.84 > 1 → 7.84/4
    clip = Knobs(gamma=0.5, value_clipping=True, value_clip_eps=0.2).as_arrays()
    e = stages.value_errors(value, t.replace(old_values=jnp.array([4.0, 0.0, 1.0])), clip)
    assert float(e.gae_original) == pytest.approx((1.62 + 1.96) / 2) and float(e.gae) == pytest.approx(0.375)
    # with the segment run on past the batch end (full_returns, every state complete): returns, returns_mse and
    # returns_ev read the full returns on every non-terminal state (t = 0, 2); returns_truncated the cut ones
    full = stages.ValueTargets(obs=t.obs, gae=t.gae, returns=t.returns, mask=t.mask, complete=jnp.ones(3, bool),
                               exact=t.exact, full_returns=jnp.array([1.5, 1.0, 2.0]))
    e = stages.value_errors(value, full, knobs)
    assert float(e.returns) == pytest.approx((1.0 + 0.5) / 2)          # |3−1.5|/1.5, |3−2|/2
    assert float(e.returns_truncated) == pytest.approx((1.0 + 2.0) / 2)
    assert float(e.returns_mse) == pytest.approx((2.25 + 1.0) / 2)
    assert float(e.floor_mre) == pytest.approx((3.0 + 2.0) / 2)        # |6−1.5|/1.5, |6−2|/2
    # a constant V explains none of the variance: 1 − Var(R − 3)/Var(R) = 0
    assert float(e.returns_ev) == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("uses_rewards", [False, True])
def test_reward_affine_is_the_scaler_frozen(uses_rewards):
    knobs = Knobs(reward_scaling=True, reward_scaling_uses_rewards=uses_rewards, reward_clipping=False).as_arrays()
    ret = push(RunningStat.zeros(), jnp.array([3.0, -1.0, 7.0, 2.0]))
    rew = push(RunningStat.zeros(), jnp.array([-0.5, 1.5, 0.25]))
    r = jnp.array([-2.0, 0.3, 5.0])
    _, _, _, scaled = scale_reward(ret, rew, jnp.zeros(3), r, knobs, update=False)
    a, b = reward_affine(ret, rew, knobs)
    np.testing.assert_allclose(a * r + b, scaled, rtol=1e-6)


@pytest.mark.parametrize("uses_rewards", [False, True])
def test_exact_value_in_learner_units_agrees_with_monte_carlo(uses_rewards):
    """From a fixed state, the mean discounted return (γ = 0.99) of the scaled rewards a frozen
    filter produces, over 20,000 episodes, against stages.exact_value. Episodes are cut after 600
    steps: the part left out is below (γp)^600 ≈ 1e-8 of the value."""
    knobs = Knobs(gamma=0.99, obs_normalization=True, obs_clipping=False, reward_scaling=True,
                  reward_scaling_uses_rewards=uses_rewards, reward_clipping=False).as_arrays()
    policy = networks.init_policy(jax.random.PRNGKey(1), 2, 1, (), knobs)
    policy["layers"][0]["w"] = jnp.array([[-1.5], [-0.8]])
    policy["layers"][0]["b"] = jnp.array([0.2])
    policy["log_std"] = jnp.array([math.log(0.6)])
    filters = Filters(obs=push(RunningStat.zeros((2,)), jax.random.normal(jax.random.PRNGKey(2), (40, 2)) + 0.3),
                      ret=push(RunningStat.zeros(), jnp.array([-30.0, -5.0, -60.0, -12.0])),
                      rew=push(RunningStat.zeros(), jnp.array([-3.0, -0.4, -1.1])))
    env, n = make("lqr"), 20_000
    s0 = jnp.array([0.7, -0.4])
    state = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(3), n))
    state = state.replace(obs=jnp.tile(s0, (n, 1)), physics={**state.physics, "s": jnp.tile(s0, (n, 1))})
    from pgdiag.normalize import observation_filter
    carry = EnvCarry(state=state, obs=observation_filter(filters.obs, state.obs, knobs), ret=jnp.zeros(n),
                     ep_return=jnp.zeros(n), ep_length=jnp.zeros(n, jnp.int32))
    run = jax.jit(lambda: collect(env, policy, carry, filters, jax.random.PRNGKey(4), knobs, 600, frozen=True)[2])
    tr = run()
    first = np.asarray(discounted_returns(tr.reward, tr.done, 0.99)[0], np.float64)  # the first episode's return
    exact = float(stages.exact_value(envs.EXACT["lqr"], policy, filters, knobs)(s0))
    se = first.std(ddof=1) / math.sqrt(n)
    assert abs(first.mean() - exact) < 4.5 * se, (first.mean(), exact, se)


def test_training_records_value_errors_and_the_exact_one_only_on_lqr():
    """Two PPO iterations on the LQR task with a held-out batch at iteration 0: every value error is
    finite where measured, the held-out ones NaN where not; on point_mass the exact one is NaN."""
    cfg = preset("ppo", "lqr", num_iterations=2, heldout_every=2, num_envs=2, steps_per_env=64,
                 num_minibatches=4, value_epochs=2, ppo_epochs=2)
    tr = make_train(cfg.static)
    _, m = jax.jit(tr.train)(seed_key(0), cfg.knobs.as_arrays())
    for name in ("value_mre_gae", "value_mre_gae_original", "value_mre_returns", "value_mre_returns_truncated",
                 "value_mre_exact"):
        assert np.all(np.isfinite(m[name])), name
        assert np.isfinite(m["heldout_" + name][0]) and np.isnan(m["heldout_" + name][1]), name
    for name in ("heldout_value_mre_floor", "heldout_value_mre_floor_truncated"):
        assert np.isfinite(m[name][0]) and np.isnan(m[name][1]), name
    other = preset("ppo", "point_mass", num_iterations=1, num_envs=2, steps_per_env=64, num_minibatches=4,
                   value_epochs=1, ppo_epochs=1)
    _, m = jax.jit(make_train(other.static).train)(seed_key(0), other.knobs.as_arrays())
    assert np.isnan(m["value_mre_exact"][0]) and np.isfinite(m["value_mre_gae"][0])
    assert np.isnan(m["heldout_value_mre_floor"][0]) and np.isfinite(m["value_mre_gae_original"][0])


@pytest.fixture(scope="module")
def lqr_agent(lqr_runs):
    from pgdiag import load_checkpoint, load_run

    run = load_run(lqr_runs["ppo"])
    cfg = run.config(0)
    return make_train(cfg.static).env, jax.tree.map(lambda x: x[0], load_checkpoint(run, 5)), cfg.knobs.as_arrays()


def test_heldout_returns_are_complete_without_selecting_on_the_outcome(lqr_agent):
    """A held-out batch of 256 environments × 256 steps of a PPO agent's linear policy on the LQR task
    (episodes end with probability 0.02 a step: about 5 per segment). Run on past the batch end (1,000 steps),
    every non-terminal state has a complete return — the chance that some state's episode outlives the tail
    is below 256·256·0.98^1000 ≈ 1e-4 — and those returns are unbiased for V^π: the mean of R − V^π(s) per
    environment (256 independent units) is within 4 standard errors of 0 (t, 255 degrees of freedom: a false
    failure about once in 10⁴). Keeping instead only the states whose episode ends inside the batch selects
    short remaining episodes, so fewer costs: the same mean is then positive by more than 4 standard errors
    (about 9 expected here; below 4 about once in 10⁸). The batch itself — states, actions, returns cut at the
    batch end — is the one without the tail."""
    env, state, knobs = lqr_agent
    E, T = 256, 256

    @jax.jit
    def held(key):
        return tuple(stages.heldout_batch(env, state.policy, state.value, state.filters, knobs, key, E, T,
                                          exact=envs.EXACT["lqr"], tail=tail) for tail in (None, 0))

    h, h0 = held(jax.random.PRNGKey(5))
    np.testing.assert_allclose(h.obs, h0.obs, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(h.targets.returns, h0.targets.returns, rtol=1e-6, atol=1e-6)
    t, t0 = h.targets, h0.targets
    mask = np.asarray(t.mask)
    assert np.asarray(t.complete)[mask].all() and not np.asarray(t0.complete)[mask].all()
    ex = np.asarray(t.exact, np.float64).reshape(T, E)

    def per_env(target, keep):
        keep = keep.reshape(T, E)
        return np.where(keep, np.asarray(target, np.float64).reshape(T, E) - ex, 0.0).sum(0) / keep.sum(0)

    def t_stat(u):
        u = u[np.isfinite(u)]
        return u.mean() / (u.std(ddof=1) / np.sqrt(len(u)))

    assert abs(t_stat(per_env(t.full_returns, mask))) < 4
    assert t_stat(per_env(t0.returns, mask & np.asarray(t0.complete))) > 4
    # the noise floor is V^π's own relative error against these very returns on these very states: numpy's
    # mean of |V^π − R|/|R| over the non-terminal states, complete returns and cut ones
    e = jax.jit(stages.value_errors)(state.value, t, knobs)
    exact, full, cut = (np.asarray(x, np.float64) for x in (t.exact, t.full_returns, t.returns))
    for got, target in ((e.floor_mre, full), (e.floor_mre_truncated, cut)):
        keep = mask & (target != 0)
        assert float(got) == pytest.approx(np.mean(np.abs(exact - target)[keep] / np.abs(target[keep])), rel=1e-4)


def test_the_heldout_tail_leaves_training_unchanged(monkeypatch):
    """Three PPO and two TRPO iterations on the LQR task with a held-out batch every iteration, with the tail
    (complete held-out returns) and without it (stages.HELDOUT_TAIL = 0, the batch's own complete returns):
    the agents' parameters, optimizer states, statistics and environments are the same, and so is every metric
    but those read against the held-out complete returns, while those differ. The two settings compile two
    programs, which XLA may fuse differently (on another CPU differently again), so the same values are held
    to float32 rounding (tests/compare.py); a tail that fed training would move them by far more within a few
    iterations."""
    changed = {"heldout_value_mre_returns", "heldout_value_mse_returns", "heldout_value_ev_returns",
               "heldout_value_mse_exact", "heldout_value_mse_floor", "heldout_value_mre_floor"}
    default = stages.HELDOUT_TAIL
    for algo, n in (("ppo", 3), ("trpo", 2)):
        cfg = preset(algo, "lqr", num_iterations=n, heldout_every=1)
        runs = []
        for tail in (default, 0):
            monkeypatch.setattr(stages, "HELDOUT_TAIL", tail)
            runs.append(jax.jit(make_train(cfg.static).train)(seed_key(1), cfg.knobs.as_arrays()))
        (a, ma), (b, mb) = runs
        assert_trees_close(a, b)
        same = sorted(set(ma) - changed)
        assert_frames_close(pd.DataFrame({k: np.ravel(ma[k]) for k in same}),
                            pd.DataFrame({k: np.ravel(mb[k]) for k in same}))
        mre_a, mre_b = np.asarray(ma["heldout_value_mre_returns"]), np.asarray(mb["heldout_value_mre_returns"])
        assert np.max(np.abs(mre_a - mre_b)) > ILL_CONDITIONED_RTOL * np.max(np.abs(mre_b))
        assert np.isfinite(ma["heldout_value_mse_exact"]).all() and np.isfinite(ma["heldout_value_mse_floor"]).all()
        assert np.isfinite(ma["heldout_value_mre_floor"]).all()
