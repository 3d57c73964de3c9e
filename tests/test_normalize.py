"""Running statistics and the observation/reward filters against hand-computed sequences.

Reference semantics (ref §2.2, §2.3, §6): Welford moments with var = mean² at
n = 1; observations pushed before they are normalized; the reward scaler
divides by the std of the running discounted return, without centering.
"""

import math

import jax.numpy as jnp
import numpy as np
import pytest

from pg_diag.config import Knobs
from pg_diag.normalize import (RunningStat, clip_observation, clip_reward, normalize_observation,
                               observation_filter, push, scale_reward)


def knobs(**kw):
    return Knobs(**kw).as_arrays()


def test_running_stat_first_push_has_std_abs_x():
    s = push(RunningStat.zeros(), jnp.array([-3.0]))
    assert float(s.n) == 1 and float(s.mean) == -3.0
    assert float(s.std) == pytest.approx(3.0)  # var = mean² at n = 1


def test_running_stat_matches_unbiased_moments():
    xs = [2.0, 4.0, 9.0]
    s = RunningStat.zeros()
    for x in xs:
        s = push(s, jnp.array([x]))
    # mean 5; squared deviations 9 + 1 + 16 = 26; unbiased var 13
    assert float(s.mean) == pytest.approx(5.0)
    assert float(s.var) == pytest.approx(13.0)


def test_batch_push_equals_sequential_and_mask_skips_rows():
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(7, 3)).astype(np.float32)
    seq = RunningStat.zeros((3,))
    for x in xs:
        seq = push(seq, jnp.asarray(x)[None])
    batched = push(push(RunningStat.zeros((3,)), jnp.asarray(xs[:4])), jnp.asarray(xs[4:]))
    np.testing.assert_allclose(batched.mean, seq.mean, rtol=1e-5)
    np.testing.assert_allclose(batched.var, seq.var, rtol=1e-5)
    np.testing.assert_allclose(seq.var, xs.var(axis=0, ddof=1), rtol=1e-5)

    mask = jnp.array([True, False, True, False, False, True, True])
    masked = push(RunningStat.zeros((3,)), jnp.asarray(xs), mask)
    kept = xs[np.asarray(mask)]
    assert float(masked.n) == 4
    np.testing.assert_allclose(masked.mean, kept.mean(axis=0), rtol=1e-5)
    np.testing.assert_allclose(masked.var, kept.var(axis=0, ddof=1), rtol=1e-5)


def test_observation_normalization_pushes_first_then_normalizes_then_clips():
    k = knobs(obs_normalization=True, obs_clipping=True, obs_clip=1.0)
    s = RunningStat.zeros((1,))
    outs = []
    for x in [2.0, 4.0, 9.0]:
        s = push(s, jnp.array([[x]]))
        outs.append(float(observation_filter(s, jnp.array([x]), k)[0]))
    # (2−2)/2 = 0; (4−3)/√2 = 0.7071; (9−5)/√13 = 1.109 → clipped to 1.
    assert outs == pytest.approx([0.0, 1 / math.sqrt(2), 1.0], abs=1e-6)


def test_observation_filter_toggles():
    s = push(push(RunningStat.zeros((1,)), jnp.array([[2.0]])), jnp.array([[4.0]]))
    x = jnp.array([40.0])
    # normalization off: the raw observation, and clipping (part of the filter) does nothing
    assert float(observation_filter(s, x, knobs(obs_normalization=False, obs_clipping=True, obs_clip=1.0))[0]) == 40.0
    # normalization on, clipping off: (40 − 3)/√2
    assert float(normalize_observation(s, x, knobs(obs_normalization=True))[0]) == pytest.approx(37 / math.sqrt(2),
                                                                                                 rel=1e-6)
    assert float(clip_observation(x, knobs(obs_normalization=True, obs_clipping=False))[0]) == 40.0
    assert float(clip_observation(x, knobs(obs_normalization=True, obs_clipping=True, obs_clip=5.0))[0]) == 5.0


def test_reward_scaling_sequence_with_reset():
    """γ = 0.5, rewards 1, 2 | (episode ends) | 3 — worked by hand:
    ret 1 → std |1| = 1 → 1;   ret 2.5 → std of {1, 2.5} = 1.0607 → 2/1.0607 = 1.8856;
    reset; ret 3 → std of {1, 2.5, 3} = 1.0408 → 3/1.0408 = 2.8823."""
    k = knobs(reward_scaling=True, reward_clipping=False, gamma=0.5)
    stat, rew_stat, ret, outs = RunningStat.zeros(), RunningStat.zeros(), jnp.zeros(1), []
    for r, done in [(1.0, False), (2.0, True), (3.0, False)]:
        ret, stat, rew_stat, out = scale_reward(stat, rew_stat, ret, jnp.array([r]), k)
        outs.append(float(out[0]))
        ret = jnp.where(done, 0.0, ret)
    assert outs == pytest.approx([1.0, 2 / math.sqrt(1.125), 3 / math.sqrt(13 / 12)], rel=1e-5)


def test_reward_scaling_off_passes_raw_and_clipping_needs_scaling():
    stat = RunningStat.zeros()
    *_, out = scale_reward(stat, stat, jnp.zeros(1), jnp.array([7.0]), knobs(reward_scaling=False))
    assert float(out[0]) == 7.0
    r = jnp.array([-30.0, 4.0, 30.0])
    np.testing.assert_array_equal(clip_reward(r, knobs(reward_scaling=True, reward_clipping=True, reward_clip=10.0)),
                                  [-10.0, 4.0, 10.0])
    # ref §2.3: the clip acts on normalized rewards only
    np.testing.assert_array_equal(clip_reward(r, knobs(reward_scaling=False, reward_clipping=True)), r)
    np.testing.assert_array_equal(clip_reward(r, knobs(reward_scaling=True, reward_clipping=False)), r)


def test_rewards_filter_scales_deviations_and_adds_the_mean_back():
    """The original's norm_rewards='rewards' (ZFilter without centering): rewards 2, 4, 9 →
    2 → (2−2)/2 + 2 = 2;  4 → (4−3)/√2 + 3;  9 → (9−5)/√13 + 5."""
    k = knobs(reward_scaling=True, reward_scaling_uses_rewards=True, reward_clipping=False)
    ret_stat, rew_stat, ret, outs = RunningStat.zeros(), RunningStat.zeros(), jnp.zeros(1), []
    for r in (2.0, 4.0, 9.0):
        ret, ret_stat, rew_stat, out = scale_reward(ret_stat, rew_stat, ret, jnp.array([r]), k)
        outs.append(float(out[0]))
    assert outs == pytest.approx([2.0, 1 / math.sqrt(2) + 3, 4 / math.sqrt(13) + 5], rel=1e-6)
