"""Each code-level optimization changes what it should and nothing else.

One training iteration of one agent, with a toggle on and off from the same
key. The first iteration collects its batch with the initial policy, and the
value update runs before the policy update with advantages from the
pre-update value network, so e.g. value clipping must leave the policy
bit-for-bit unchanged, and gradient clipping must leave the value network
unchanged.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pgdiag import make_train, preset, seed_key

SMALL = dict(num_envs=2, steps_per_env=32, num_iterations=10, num_minibatches=4, ppo_epochs=2, value_epochs=2)


@pytest.fixture(scope="module")
def fns():
    base = preset("ppo", "point_mass", **SMALL)
    trainer = make_train(base.static)
    init = jax.jit(trainer.init)
    step = jax.jit(trainer.iteration)

    def run(iterations=1, **knobs):
        k = base.replace(**knobs).knobs.as_arrays()
        state = init(seed_key(0), k)
        metrics = []
        for _ in range(iterations):
            state, m = step(state, k)
            metrics.append(m)
        return state, metrics

    return base, init, run


def same(a, b):
    return all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def test_value_clipping_changes_only_the_value_network(fns):
    _, _, run = fns
    on, _ = run(value_clipping=True, value_clip_eps=1e-3)
    off, _ = run(value_clipping=False, value_clip_eps=1e-3)
    assert not same(on.value, off.value)
    assert same(on.policy, off.policy) and same(on.filters, off.filters) and same(on.envs, off.envs)


def test_grad_clipping_changes_only_the_policy(fns):
    _, _, run = fns
    on, m_on = run(grad_clipping=True, max_grad_norm=1e-3)
    off, m_off = run(grad_clipping=False, max_grad_norm=1e-3)
    assert not same(on.policy, off.policy)
    assert same(on.value, off.value) and same(on.filters, off.filters)
    # the gradient norm is measured before clipping, so the first minibatches agree
    assert float(m_on[0]["grad_norm"]) > 1e-3


def test_ratio_clip_and_entropy_change_only_the_policy(fns):
    _, _, run = fns
    clip, _ = run(clip_eps=1e-3)  # small enough to bind in the first update
    noclip, _ = run(clip_eps=float("inf"))
    ent, _ = run(clip_eps=1e-3, entropy_coef=0.5)
    assert same(clip.value, noclip.value) and same(clip.value, ent.value)
    assert not same(clip.policy, noclip.policy)
    assert not np.array_equal(clip.policy["log_std"], ent.policy["log_std"])
    # an entropy bonus raises the log-std relative to no bonus
    assert float(jnp.mean(ent.policy["log_std"])) > float(jnp.mean(clip.policy["log_std"]))


def test_lr_annealing_acts_from_the_second_iteration(fns):
    base, _, run = fns
    on, m_on = run(iterations=2, lr_annealing=True)
    off, m_off = run(iterations=2, lr_annealing=False)
    one_on, _ = run(iterations=1, lr_annealing=True)
    one_off, _ = run(iterations=1, lr_annealing=False)
    assert same(one_on, one_off)  # iteration 0 uses the full rate: lr0·(1 − 0/K)
    assert not same(on.policy, off.policy) and not same(on.value, off.value)
    k = SMALL["num_iterations"]
    assert float(m_on[1]["lr_policy_used"]) == pytest.approx(base.lr_policy * (1 - 1 / k), rel=1e-6)
    assert float(m_on[1]["lr_value_used"]) == pytest.approx(base.lr_value * (1 - 1 / k), rel=1e-6)
    assert float(m_off[1]["lr_policy_used"]) == pytest.approx(base.lr_policy)


def test_reward_scaling_and_clipping_change_the_learner_not_the_data(fns):
    _, _, run = fns
    scaled, _ = run(reward_scaling=True, reward_clipping=False)
    raw, _ = run(reward_scaling=False, reward_clipping=False)
    clipped, _ = run(reward_scaling=True, reward_clipping=True, reward_clip=0.05)
    # same data collected (same initial policy), same running statistics kept either way
    assert same(scaled.envs, raw.envs) and same(scaled.filters, raw.filters) and same(scaled.envs, clipped.envs)
    assert not same(scaled.value, raw.value) and not same(scaled.policy, raw.policy)
    assert not same(scaled.value, clipped.value)
    # reward clipping acts only on scaled rewards (ref §2.3)
    raw_clip, _ = run(reward_scaling=False, reward_clipping=True, reward_clip=0.05)
    assert same(raw, raw_clip)


def test_observation_normalization_and_clipping(fns):
    _, _, run = fns
    norm, _ = run(obs_normalization=True, obs_clipping=False)
    raw, _ = run(obs_normalization=False, obs_clipping=False)
    clipped, _ = run(obs_normalization=True, obs_clipping=True, obs_clip=0.1)
    # the policy sees the raw observation when normalization is off
    np.testing.assert_array_equal(raw.envs.obs, raw.envs.state.obs)
    stat = norm.filters.obs
    expected = (norm.envs.state.obs - stat.mean) / (jnp.sqrt(stat.m2 / (stat.n - 1)) + 1e-8)
    np.testing.assert_allclose(norm.envs.obs, expected, rtol=1e-5, atol=1e-6)
    assert float(jnp.max(jnp.abs(clipped.envs.obs))) <= 0.1 + 1e-7
    assert float(jnp.max(jnp.abs(norm.envs.obs))) > 0.1
    # clipping is part of the normalizing filter: without normalization it does nothing
    raw_clip, _ = run(obs_normalization=False, obs_clipping=True, obs_clip=0.1)
    assert same(raw, raw_clip)


def test_init_and_activation_toggles(fns):
    base, init, _ = fns
    k = lambda **kw: base.replace(**kw).knobs.as_arrays()
    ortho, xavier = init(seed_key(0), k(orthogonal_init=True)), init(seed_key(0), k(orthogonal_init=False))
    assert not same(ortho.policy["layers"], xavier.policy["layers"])
    assert not same(ortho.value, xavier.value)
    assert same(ortho.policy["log_std"], xavier.policy["log_std"])
    assert same(ortho.envs, xavier.envs) and same(ortho.filters, xavier.filters)
    relu = init(seed_key(0), k(tanh_activations=False))
    assert same(relu.policy, ortho.policy)  # activation does not touch the weights


def test_activation_changes_training(fns):
    _, _, run = fns
    tanh, _ = run(tanh_activations=True)
    relu, _ = run(tanh_activations=False)
    assert not same(tanh.value, relu.value) and not same(tanh.policy, relu.policy)
