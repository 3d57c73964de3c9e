"""The linear-quadratic task: its closed forms against Monte Carlo, finite differences and the Riccati optimum.

Statistical tests fix their seeds; each compares a Monte-Carlo mean with the
closed form within 4.5 standard errors, a false-failure rate below 1e-5 per
comparison for a normal mean (episode returns are sums of many steps, and
20,000 episodes make their mean close to normal).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from pgdiag import make_train, networks, preset, seed_key, sweep
from pgdiag.config import Knobs
from pgdiag.envs import lqr, make
from pgdiag.normalize import RunningStat, observation_filter, push

SPEC = lqr.default_spec()
EPISODES, HORIZON = 20_000, 1_000   # P(an episode outlives the horizon) = 0.98^1000 ≈ 2e-9
K_TEST = jnp.array([[-2.0, -0.5]])
k_TEST = jnp.array([0.3])
VAR_TEST = jnp.array([0.25])


def monte_carlo(start=None, gamma=1.0, seed=0):
    """Discounted returns of EPISODES episodes of a = K s + k + N(0, VAR) from the task's own
    reset (or from the fixed state ``start``), simulated with the task's step."""
    env = make("lqr")

    def episode(key):
        k_reset, k_act = jax.random.split(key)
        state = env.reset(k_reset)
        if start is not None:
            state = state.replace(obs=start, physics={**state.physics, "s": start})

        def step(carry, k):
            st, alive, discount, total = carry
            a = K_TEST @ st.obs + k_TEST + jnp.sqrt(VAR_TEST) * jax.random.normal(k, (1,))
            nxt = env.step(st, a)
            total = total + jnp.where(alive, discount * nxt.reward, 0.0)
            return (nxt, alive & ~nxt.terminated, discount * gamma, total), None

        init = (state, jnp.bool_(True), jnp.float32(1.0), jnp.float32(0.0))
        (_, alive, _, total), _ = jax.lax.scan(step, init, jax.random.split(k_act, HORIZON))
        return total, alive

    totals, alive = jax.jit(jax.vmap(episode))(jax.random.split(jax.random.PRNGKey(seed), EPISODES))
    assert not bool(jnp.any(alive))
    totals = np.asarray(totals, np.float64)
    return totals.mean(), totals.std(ddof=1) / math.sqrt(EPISODES)


def test_monte_carlo_returns_agree_with_the_closed_form_expected_return():
    mean, se = monte_carlo()
    exact = float(lqr.expected_return(SPEC, K_TEST, k_TEST, VAR_TEST))
    assert abs(mean - exact) < 4.5 * se, (mean, exact, se)


@pytest.mark.parametrize("gamma", [1.0, 0.9])
def test_monte_carlo_value_from_a_fixed_state_agrees_with_v_pi(gamma):
    s = jnp.array([0.8, -0.5])
    mean, se = monte_carlo(start=s, gamma=gamma, seed=1)
    U, u, c = lqr.value_function(SPEC, K_TEST, k_TEST, VAR_TEST, gamma)
    exact = float(s @ U @ s + u @ s + c)
    assert abs(mean - exact) < 4.5 * se, (mean, exact, se)


def test_one_step_of_the_task_by_hand():
    env = make("lqr")
    state = env.reset(jax.random.PRNGKey(3))
    a = jnp.array([0.7])
    nxt = env.step(state, a)
    s = np.asarray(state.obs, np.float64)
    reward = -(s @ np.asarray(SPEC.Q) @ s + 0.01 * 0.7 ** 2)
    assert float(nxt.reward) == pytest.approx(reward, rel=1e-5)
    # the next state is A s + B a plus noise of covariance W (std 0.01 and 0.032): within 6 std
    mean = np.asarray(SPEC.A) @ s + np.asarray(SPEC.B) @ np.array([0.7])
    assert np.all(np.abs(np.asarray(nxt.obs) - mean) < 6 * np.sqrt(np.diag(np.asarray(SPEC.W))))


def test_episodes_end_with_probability_one_minus_p():
    env = make("lqr")
    states = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(4), 100_000))
    ended = np.asarray(jax.vmap(env.step)(states, jnp.zeros((100_000, 1))).terminated)
    # binomial(1e5, 0.02): std 44; 5 std either side
    assert abs(ended.sum() - 2_000) < 5 * math.sqrt(100_000 * 0.02 * 0.98)


def test_exact_gradient_agrees_with_finite_differences_of_j():
    """∇J by autodiff through the closed forms, against central differences of J, in float64,
    with a frozen observation normalizer in front of the linear policy."""
    with jax.enable_x64(True):
        spec = lqr.default_spec(jnp.float64)
        knobs = {k: (v.astype(jnp.float64) if v.dtype == jnp.float32 else v)
                 for k, v in Knobs(obs_normalization=True, obs_clipping=False).as_arrays().items()}
        params = networks.init_policy(jax.random.PRNGKey(0), 2, 1, (), knobs)
        params = jax.tree.map(lambda x: x.astype(jnp.float64), params)
        params["layers"][0]["w"] = jnp.array([[-1.5], [-0.4]])
        params["layers"][0]["b"] = jnp.array([0.2])
        params["log_std"] = jnp.array([-0.5])
        stat = push(RunningStat.zeros((2,)), jnp.array([[0.5, 1.0], [-0.3, 0.2], [0.9, -0.6]]))
        stat = jax.tree.map(lambda x: x.astype(jnp.float64) if x.dtype == jnp.float32 else x, stat)
        grad = lqr.exact_gradient(spec, params, stat, knobs)
        J = lambda p: float(lqr.policy_return(spec, p, stat, knobs))  # noqa: E731
        flat, unravel = ravel_pytree(params)
        g_flat = np.asarray(ravel_pytree(grad)[0])
        h = 1e-6
        for i in range(flat.size):
            e = jnp.zeros_like(flat).at[i].set(h)
            fd = (J(unravel(flat + e)) - J(unravel(flat - e))) / (2 * h)
            assert g_flat[i] == pytest.approx(fd, rel=1e-5, abs=1e-6), i


def test_affine_policy_is_what_the_network_computes():
    knobs = Knobs(obs_normalization=True, obs_clipping=False).as_arrays()
    params = networks.init_policy(jax.random.PRNGKey(1), 2, 1, (), knobs)
    params["layers"][0]["b"] = jnp.array([0.4])
    stat = push(RunningStat.zeros((2,)), jax.random.normal(jax.random.PRNGKey(2), (50, 2)) * 2.0 + 1.0)
    s = jax.random.normal(jax.random.PRNGKey(3), (7, 2))
    K, k, var = lqr.affine_policy(params, stat, knobs)
    mean, log_std = networks.policy_apply(params, observation_filter(stat, s, knobs), knobs)
    np.testing.assert_allclose(s @ K.T + k, mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, np.exp(2 * np.asarray(log_std[0])), rtol=1e-6)


def test_the_riccati_controller_is_optimal():
    """J(K*) ≥ J(K) for perturbed gains, and ∂J/∂K vanishes at K* (σ = 0, k = 0)."""
    with jax.enable_x64(True):
        spec = lqr.default_spec(jnp.float64)
        K_star, J_star = lqr.optimal_controller(spec)
        zero = jnp.zeros(1, jnp.float64)
        J = lambda K: lqr.expected_return(spec, K, zero, zero)  # noqa: E731
        assert float(J_star) == pytest.approx(float(J(K_star)), rel=1e-12)
        for d in jax.random.normal(jax.random.PRNGKey(0), (8, 1, 2), jnp.float64):
            assert float(J(K_star + 0.05 * d)) < float(J_star)
        g_star = jnp.linalg.norm(jax.grad(J)(K_star))
        g_half = jnp.linalg.norm(jax.grad(J)(0.5 * K_star))
        assert float(g_star) < 1e-6 * float(g_half)
        # a diverging closed loop has return −∞, not NaN
        assert float(J(jnp.array([[5.0, 5.0]]))) == -math.inf


@pytest.mark.parametrize("algorithm", ["ppo", "trpo"])
def test_ppo_and_trpo_learn_toward_the_optimal_controller(algorithm):
    """A CPU-scale run (60 iterations × 1,024 steps): each agent's exact final return beats its initial
    policy's (which may diverge: TRPO's xavier-initialized gain can be destabilizing, J = −∞) and lies
    more than halfway from the zero-gain policy with σ = 1 (J ≈ −585) to the Riccati optimum (J* ≈ −4.2)."""
    cfg = preset(algorithm, "lqr")
    run = sweep(cfg, seeds=[0, 1])
    _, J_star = lqr.optimal_controller(SPEC)
    knobs = cfg.knobs.as_arrays()
    for agent in range(2):
        initial = make_train(cfg.static).init(seed_key(agent), knobs)
        J_initial = float(lqr.policy_return(SPEC, initial.policy, initial.filters.obs, knobs))
        final = jax.tree.map(lambda x: x[agent], run.final_state)
        J_final = float(lqr.policy_return(SPEC, final.policy, final.filters.obs, knobs))
        J_zero = float(lqr.expected_return(SPEC, jnp.zeros((1, 2)), jnp.zeros(1), jnp.ones(1)))
        assert J_final > J_initial and J_final > J_zero + 0.5 * (float(J_star) - J_zero), (J_initial, J_final)
