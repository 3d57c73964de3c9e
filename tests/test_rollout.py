"""GAE and returns on a hand-worked example; the rollout's filter ordering on a scripted task."""

import math

import jax
import jax.numpy as jnp
import numpy as np

from pgdiag import networks
from pgdiag.config import Knobs
from pgdiag.envs.base import Env, EnvState, time_limit
from pgdiag.rollout import Filters, collect, discounted_returns, gae_advantages, reset_envs

# T = 4, one environment, an episode boundary after step 1.
REWARDS = jnp.array([[1.0], [2.0], [3.0], [4.0]])
VALUES = jnp.array([[0.5], [1.0], [1.5], [2.0]])
DONES = jnp.array([[False], [True], [False], [False]])


def test_gae_hand_worked_with_episode_boundary():
    """γ = λ = 0.5, V(s_T) = 2.5.
    δ = [1 + .5·1 − .5, 2 − 1 (done: no bootstrap), 3 + .5·2 − 1.5, 4 + .5·2.5 − 2] = [1, 1, 2.5, 3.25]
    Â_3 = 3.25; Â_2 = 2.5 + .25·3.25 = 3.3125; Â_1 = 1 (trace cut); Â_0 = 1 + .25·1 = 1.25."""
    adv = gae_advantages(REWARDS, VALUES, jnp.array([2.5]), DONES, 0.5, 0.5)
    np.testing.assert_allclose(adv[:, 0], [1.25, 1.0, 3.3125, 3.25], rtol=1e-6)


def test_gae_reference_batch_end_repeats_last_value():
    """ref §2.1: the original bootstraps the last step with V(s_{T−1}) = 2:
    δ_3 = 4 + 1 − 2 = 3, Â_2 = 2.5 + .25·3 = 3.25."""
    adv = gae_advantages(REWARDS, VALUES, VALUES[-1], DONES, 0.5, 0.5)
    np.testing.assert_allclose(adv[:, 0], [1.25, 1.0, 3.25, 3.0], rtol=1e-6)


def test_gae_lambda_one_is_discounted_return_minus_value():
    adv = gae_advantages(REWARDS, VALUES, jnp.array([0.0]), DONES, 0.9, 1.0)
    ret = discounted_returns(REWARDS, DONES, 0.9)
    np.testing.assert_allclose(adv, ret - VALUES, rtol=1e-6)


def test_discounted_returns_no_bootstrap_at_batch_end():
    # R_3 = 4, R_2 = 3 + .5·4 = 5, R_1 = 2 (done), R_0 = 1 + .5·2 = 2
    np.testing.assert_allclose(discounted_returns(REWARDS, DONES, 0.5)[:, 0], [2.0, 2.0, 5.0, 4.0])


# --- the rollout's per-step order of operations ------------------------------

def scripted_env(terminate_at=2):
    """Reset observation 1; the k-th step of an episode observes 2k and pays k;
    the episode terminates after ``terminate_at`` steps. Actions are ignored."""

    def reset(key):
        return EnvState(physics=jnp.int32(0), obs=jnp.array([1.0]), reward=jnp.float32(0),
                        terminated=jnp.bool_(False), truncated=jnp.bool_(False), t=jnp.int32(0))

    def step(state, action):
        t = state.t + 1
        terminated = t >= terminate_at
        return EnvState(physics=t, obs=jnp.array([2.0 * t]), reward=t.astype(jnp.float32), terminated=terminated,
                        truncated=time_limit(t, terminated, 1000), t=t)

    return Env(name="scripted", obs_size=1, action_size=1, max_episode_steps=1000, reset=reset, step=step)


def _collect(num_steps=4, **kw):
    env = scripted_env()
    k = Knobs(**kw).as_arrays()
    params = networks.init_policy(jax.random.PRNGKey(0), 1, 1, (4,), k)
    filters = Filters.zeros(1)
    carry, filters = reset_envs(env, jax.random.PRNGKey(1), 1, filters, k)
    return collect(env, params, carry, filters, jax.random.PRNGKey(2), k, num_steps)


def test_rollout_observation_order_pushes_terminal_then_reset():
    """Raw observations pushed, in order: 1 (reset), 2, 4 (terminal), 1 (reset), 2.
    The policy sees each observation normalized with the statistics right after
    its push: 1 → 0 (n = 1); 2 → (2 − 1.5)/√.5; reset 1 after {1,2,4,1} → (1 − 2)/√2;
    2 after {1,2,4,1,2} → (2 − 2)/√1.5 = 0."""
    _, filters, tr = _collect(obs_normalization=True, obs_clipping=False)
    np.testing.assert_allclose(tr.obs[:, 0, 0], [0.0, 0.5 / math.sqrt(0.5), -1 / math.sqrt(2), 0.0], atol=1e-6)
    # after the last step: its terminal observation 4 and the reset observation 1
    assert float(filters.obs.n) == 7
    np.testing.assert_allclose(filters.obs.mean, [15 / 7], rtol=1e-6)
    np.testing.assert_array_equal(tr.done[:, 0], [False, True, False, True])
    np.testing.assert_array_equal(tr.terminated[:, 0], [False, True, False, True])
    np.testing.assert_array_equal(tr.truncated[:, 0], [False, False, False, False])


def test_rollout_observation_normalization_off_shows_raw():
    _, _, tr = _collect(obs_normalization=False)
    np.testing.assert_array_equal(tr.obs[:, 0, 0], [1.0, 2.0, 1.0, 2.0])


def test_rollout_reward_scaling_resets_return_at_episode_end():
    """γ = .5, raw rewards 1, 2 | 1, 2: returns 1, 2.5 | 1, 2.5.
    std {1} = 1 → 1; std {1, 2.5} = √1.125 → 2/√1.125;
    std {1, 2.5, 1} = √.75 → 1/√.75; std {1, 2.5, 1, 2.5} = √.75 → 2/√.75."""
    _, _, tr = _collect(reward_scaling=True, reward_clipping=False, gamma=0.5)
    expected = [1.0, 2 / math.sqrt(1.125), 1 / math.sqrt(0.75), 2 / math.sqrt(0.75)]
    np.testing.assert_allclose(tr.reward[:, 0], expected, rtol=1e-5)
    np.testing.assert_array_equal(tr.raw_reward[:, 0], [1.0, 2.0, 1.0, 2.0])
    # episode accounting: the raw return 1 + 2 = 3 is reported when each episode ends
    np.testing.assert_array_equal(tr.finished_return[:, 0], [0.0, 3.0, 0.0, 3.0])
    np.testing.assert_array_equal(tr.finished_length[:, 0], [0, 2, 0, 2])


def test_rollout_reward_clipping_applies_to_scaled_rewards():
    _, _, tr = _collect(reward_scaling=True, reward_clipping=True, reward_clip=1.5, gamma=0.5)
    expected = [1.0, 1.5, 1 / math.sqrt(0.75), 1.5]
    np.testing.assert_allclose(tr.reward[:, 0], expected, rtol=1e-5)


def test_rollout_log_prob_matches_policy_density():
    _, _, tr = _collect()
    k = Knobs().as_arrays()
    params = networks.init_policy(jax.random.PRNGKey(0), 1, 1, (4,), k)
    mean, log_std = networks.policy_apply(params, tr.obs, k)
    # independent evaluation of the Gaussian density with σ = exp(log_std)
    sigma = np.exp(np.asarray(log_std))
    dens = np.exp(-0.5 * ((np.asarray(tr.action) - np.asarray(mean)) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))
    np.testing.assert_allclose(np.exp(tr.log_prob), dens[..., 0], rtol=1e-5)


def test_frozen_collection_keeps_the_statistics_and_filters_with_them():
    """With ``frozen`` the filters come back unchanged, every observation is normalized
    with the given statistics, and rewards are divided by the given return std.
    Statistics: observations {1, 2, 4} (mean 7/3, unbiased var 7/3), discounted
    returns {1, 3} (std √2). The scripted episode observes 1, 2, 4 (terminal), 1, ...
    and pays 1, 2 | 1, 2."""
    from pgdiag.normalize import RunningStat, push

    env = scripted_env()
    k = Knobs(obs_normalization=True, obs_clipping=False, reward_scaling=True, reward_clipping=False).as_arrays()
    params = networks.init_policy(jax.random.PRNGKey(0), 1, 1, (4,), k)
    filters = Filters(obs=push(RunningStat.zeros((1,)), jnp.array([[1.0], [2.0], [4.0]])),
                      ret=push(RunningStat.zeros(), jnp.array([1.0, 3.0])), rew=RunningStat.zeros())
    carry, same = reset_envs(env, jax.random.PRNGKey(1), 1, filters, k, frozen=True)
    _, after, tr = collect(env, params, carry, filters, jax.random.PRNGKey(2), k, 4, frozen=True)
    for a, b, c in zip(jax.tree.leaves(filters), jax.tree.leaves(after), jax.tree.leaves(same)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        np.testing.assert_array_equal(np.asarray(a), np.asarray(c))
    mean, std = 7 / 3, math.sqrt(7 / 3)
    np.testing.assert_allclose(tr.obs[:, 0, 0], [(x - mean) / std for x in (1.0, 2.0, 1.0, 2.0)], rtol=1e-5)
    np.testing.assert_allclose(tr.reward[:, 0], [r / math.sqrt(2) for r in (1.0, 2.0, 1.0, 2.0)], rtol=1e-5)


def test_without_a_baseline_the_policy_reads_the_returns_and_the_value_keeps_its_target():
    """value_baseline off (CL §5.2): the batch's advantages are the discounted returns worked by hand above
    (γ = 0.5: [2, 2, 5, 4]), not GAE; the value network's targets V_old + Â(GAE) are the same either way."""
    from pgdiag.rollout import Transitions, build_batch

    k_on = Knobs(gamma=0.5, gae_lambda=0.5).as_arrays()
    k_off = Knobs(gamma=0.5, gae_lambda=0.5, value_baseline=False).as_arrays()
    params = networks.init_value(jax.random.PRNGKey(0), 1, (4,), k_on)
    obs = jnp.arange(4.0).reshape(4, 1, 1)
    zeros = jnp.zeros((4, 1))
    tr = Transitions(obs=obs, action=obs, log_prob=zeros, reward=REWARDS, raw_reward=REWARDS, done=DONES,
                     terminated=DONES, truncated=jnp.zeros_like(DONES), finished_return=zeros, finished_length=zeros)
    on, off = (build_batch(params, tr, jnp.array([[4.0]]), k) for k in (k_on, k_off))
    np.testing.assert_allclose(off.advantages, [2.0, 2.0, 5.0, 4.0], rtol=1e-6)
    values = networks.value_apply(params, obs, k_on)[:, 0]
    last = networks.value_apply(params, jnp.array([[4.0]]), k_on)
    gae = gae_advantages(REWARDS, values[:, None], last, DONES, 0.5, 0.5)[:, 0]
    np.testing.assert_allclose(on.advantages, gae, rtol=1e-5)
    np.testing.assert_allclose(off.value_targets, on.value_targets, rtol=1e-6)
