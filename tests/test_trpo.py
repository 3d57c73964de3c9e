"""TRPO: Fisher-vector product, conjugate gradient, the trust-region step and its line search."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from pgdiag import networks
from pgdiag.config import Knobs
from pgdiag.algorithms.trpo import conjugate_gradient, fisher_vector_product, mean_kl, trpo_step

from batches import fixed_batch, settings

OBS, ACT, HIDDEN = 3, 2, (5,)


def test_fisher_vector_product_equals_the_explicit_fisher_matrix():
    """F = mean_s J_sᵀ G J_s with J_s the Jacobian of the Gaussian's (μ, log σ) with
    respect to the parameters and G = diag(1/σ², 2) the Fisher information of a
    normal in those coordinates: built explicitly in float64, independent of the
    Hessian-of-KL route the step uses."""
    with jax.enable_x64(True):
        knobs = {k: (v.astype(jnp.float64) if v.dtype == jnp.float32 else v)
                 for k, v in Knobs(orthogonal_init=False).as_arrays().items()}
        params = networks.init_policy(jax.random.PRNGKey(0), OBS, ACT, HIDDEN, knobs)
        params = jax.tree.map(lambda x: x.astype(jnp.float64), params)
        params["log_std"] = jnp.array([-0.3, 0.4])
        obs = jax.random.normal(jax.random.PRNGKey(1), (7, OBS), jnp.float64)
        flat, unravel = ravel_pytree(params)

        def outputs(theta, o):
            mean, log_std = networks.policy_apply(unravel(theta), o[None], knobs)
            return jnp.concatenate([mean[0], log_std[0]])

        fisher = np.zeros((flat.size, flat.size))
        for o in obs:
            jac = np.asarray(jax.jacobian(outputs)(flat, o))               # [2A, P]
            sigma2 = np.exp(2 * np.asarray(params["log_std"]))
            g = np.diag(np.concatenate([1 / sigma2, 2 * np.ones(ACT)]))
            fisher += jac.T @ g @ jac / len(obs)

        fvp = fisher_vector_product(params, obs, knobs, damping=0.1)
        for seed in range(3):
            v = np.asarray(jax.random.normal(jax.random.PRNGKey(10 + seed), flat.shape, jnp.float64))
            np.testing.assert_allclose(np.asarray(fvp(jnp.asarray(v))), fisher @ v + 0.1 * v, rtol=1e-9, atol=1e-12)


def test_conjugate_gradient_solves_an_spd_system():
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    a = q @ np.diag(np.linspace(1.0, 6.0, 8)) @ q.T
    b = rng.normal(size=8)
    x = conjugate_gradient(lambda v: jnp.asarray(a, jnp.float32) @ v, jnp.asarray(b, jnp.float32), 8)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, b), rtol=1e-4, atol=1e-5)
    # a converged residual does not turn into NaN on further iterations
    x_more = conjugate_gradient(lambda v: jnp.asarray(a, jnp.float32) @ v, jnp.asarray(b, jnp.float32), 30)
    np.testing.assert_allclose(np.asarray(x_more), np.linalg.solve(a, b), rtol=1e-4, atol=1e-5)


def step(params, batch, **knobs):
    _, k = settings("trpo", **knobs)
    return trpo_step(params, batch, k, jax.random.PRNGKey(5), cg_iterations=10, line_search_steps=10,
                     fisher_size=16)


def surrogate_np(params, batch):
    """mean(r·Â) with batch-normalized advantages, recomputed outside the step."""
    k = Knobs().as_arrays()
    mean, log_std = networks.policy_apply(params, batch.obs, k)
    ratio = np.exp(np.asarray(networks.gaussian_log_prob(mean, log_std, batch.action) - batch.old_log_prob))
    adv = np.asarray(batch.advantages)
    adv = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)
    return float(np.mean(ratio * adv))


def kl_np(p_old, p_new, obs):
    k = Knobs().as_arrays()
    m0, s0 = (np.asarray(x, np.float64) for x in networks.policy_apply(p_old, obs, k))
    m1, s1 = (np.asarray(x, np.float64) for x in networks.policy_apply(p_new, obs, k))
    per = np.sum(s1 - s0 + (np.exp(2 * s0) + (m0 - m1) ** 2) / (2 * np.exp(2 * s1)) - 0.5, axis=-1)
    return per.mean()


@pytest.mark.parametrize("delta", [0.001, 0.01, 0.05])
def test_accepted_step_improves_the_surrogate_within_the_kl_bound(delta):
    params, batch = fixed_batch()
    new, info = step(params, batch, kl_bound=delta)
    assert float(info.step_scale) > 0
    kl = kl_np(params, new, batch.obs)
    assert 0 < kl <= delta * (1 + 1e-4)
    before, after = surrogate_np(params, batch), surrogate_np(new, batch)
    assert after > before
    assert float(info.surrogate_after) == pytest.approx(after, rel=1e-4, abs=1e-7)


def test_full_step_is_scaled_to_the_kl_bound():
    """β makes ½Δᵀ(F + λI)Δ = δ exactly, whatever CG returned; with the Fisher taken on
    the whole batch and tiny damping, the mean KL of the accepted step is ≈ scale²·δ
    (second order in the step)."""
    params, batch = fixed_batch()
    delta = 1e-3
    _, k = settings("trpo", kl_bound=delta, damping=1e-6)
    new, info = trpo_step(params, batch, k, jax.random.PRNGKey(5), cg_iterations=10, line_search_steps=10,
                          fisher_size=batch.obs.shape[0])
    assert float(info.step_scale) > 0
    assert kl_np(params, new, batch.obs) == pytest.approx(float(info.step_scale) ** 2 * delta, rel=0.05)


def test_no_acceptable_step_leaves_the_policy_unchanged():
    params, batch = fixed_batch()
    # an unreachable acceptance ratio: every candidate is refused
    new, info = step(params, batch, kl_bound=0.01, accept_ratio=1e9)
    assert float(info.step_scale) == 0.0
    for a, b in zip(jax.tree.leaves(new), jax.tree.leaves(params)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # zero advantages: no direction improves the surrogate
    params, batch = fixed_batch(adv_scale=0.0)
    new, info = step(params, batch)
    assert float(info.step_scale) == 0.0
    for a, b in zip(jax.tree.leaves(new), jax.tree.leaves(params)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _line_search_margin(params, batch, knobs, accepted_scale, steps=10):
    """The smallest distance of a line-search test from its threshold, over the candidates up to the accepted
    one (trpo.trpo_step's three tests: improvement > 0, mean KL ≤ δ, improvement > ratio · scale · expected):
    at each rejected candidate the failing test's, at the accepted one every test's."""
    from pgdiag.algorithms.trpo import natural_step, surrogate_objective

    objective = surrogate_objective(params, batch, knobs)
    nat = natural_step(params, batch, knobs, jax.random.PRNGKey(5), cg_iterations=10, fisher_size=16,
                       objective=objective)
    _, unravel = ravel_pytree(params)
    old_mean, old_log_std = networks.policy_apply(params, batch.obs, knobs)
    margins = []
    for j in range(steps):
        scale = 0.5 ** j
        theta = nat.flat + scale * nat.full_step
        improvement = float(objective(theta) - nat.loss0)
        kl = float(mean_kl(unravel(theta), batch.obs, old_mean, old_log_std, knobs))
        tests = np.array([improvement, float(knobs["kl_bound"]) - kl,
                          improvement - float(knobs["accept_ratio"]) * scale * float(nat.expected)])
        if scale == float(accepted_scale):
            return min(margins + [np.abs(tests).min()])
        failing = tests[tests <= 0]   # none: this recomputation accepts what trpo_step rejected, a tie
        margins.append(np.abs(failing).min() if failing.size else 0.0)
    return min(margins)   # none accepted: every candidate's failing test


def test_vmapped_trpo_equals_each_agent_alone():
    agents = [fixed_batch(seed) for seed in range(3)]
    deltas = jnp.array([0.003, 0.01, 0.03])
    stacked_params = jax.tree.map(lambda *x: jnp.stack(x), *[a[0] for a in agents])
    stacked_batch = jax.tree.map(lambda *x: jnp.stack(x), *[a[1] for a in agents])
    _, base = settings("trpo")
    knobs = {k: jnp.stack([v] * 3) for k, v in base.items()}
    knobs["kl_bound"] = deltas

    def one(p, b, k):
        return trpo_step(p, b, k, jax.random.PRNGKey(5), cg_iterations=10, line_search_steps=10, fisher_size=16)

    new, info = jax.jit(jax.vmap(one))(stacked_params, stacked_batch, knobs)
    for i, (p, b) in enumerate(agents):
        alone, alone_info = jax.jit(one)(p, b, jax.tree.map(lambda x: x[i], knobs))
        # the accepted step is a discrete outcome: equal in both programs because no line-search test up to
        # it lies within float32 rounding of its threshold (checked first, so a tie would be named as such)
        assert _line_search_margin(p, b, jax.tree.map(lambda x: x[i], knobs), alone_info.step_scale) > 1e-5
        assert float(info.step_scale[i]) == float(alone_info.step_scale)
        for a, c in zip(jax.tree.leaves(jax.tree.map(lambda x: x[i], new)), jax.tree.leaves(alone)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(c), rtol=1e-4, atol=1e-7)


def test_mean_kl_is_zero_at_the_old_policy():
    params, batch = fixed_batch()
    k = Knobs().as_arrays()
    mean, log_std = networks.policy_apply(params, batch.obs, k)
    assert float(mean_kl(params, batch.obs, mean, log_std, k)) == pytest.approx(0.0, abs=1e-7)


@pytest.mark.parametrize("steps, expected", [(2048, 204), (256, 25)])
def test_fisher_subset_has_the_originals_size(steps, expected, monkeypatch):
    """ref §2.7: the original takes int(0.1·T) states, truncating (204.8 → 204, 25.6 → 25);
    the step's Fisher-vector product runs on exactly that many."""
    import pgdiag.algorithms.trpo
    from pgdiag import preset, stages

    cfg = preset("trpo", "hopper", num_envs=1, steps_per_env=steps, num_minibatches=32)
    assert pgdiag.algorithms.trpo.fisher_size(cfg.static) == expected
    seen = []

    def spy(p, obs, knobs, damping):
        seen.append(obs.shape[0])
        return fisher_vector_product(p, obs, knobs, damping)

    monkeypatch.setattr(pgdiag.algorithms.trpo, "fisher_vector_product", spy)
    params, batch = fixed_batch(n=steps)
    stages.policy_step(cfg.static, params, None, batch, 0.0, cfg.knobs.as_arrays(), jax.random.PRNGKey(0))
    assert seen == [expected]
