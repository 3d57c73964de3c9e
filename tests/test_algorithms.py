"""The algorithm protocol and registry, and the three algorithms beyond the papers' (PPO-KL, NPG, VPG), each
step checked against a second computation: a closed form, an explicit matrix, or another algorithm's step
at the setting where the two coincide."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

import pgdiag
from pgdiag import algorithms, networks, preset, stages
from pgdiag.algorithms import ppo_kl
from pgdiag.config import Config, ConfigError, Option, stack_knobs, study_preset

from batches import fixed_batch, settings
from compare import CANCELLING_ATOL


def test_the_registry_lists_every_algorithm_and_refuses_bad_ones():
    assert algorithms.names()[:5] == ("ppo", "trpo", "ppo-kl", "npg", "vpg")
    with pytest.raises(algorithms.AlgorithmError, match="unknown algorithm 'a2c'; registered algorithms: ppo, trpo"):
        algorithms.get("a2c")
    with pytest.raises(ConfigError, match="unknown algorithm 'a2c'; registered algorithms: ppo, trpo, ppo-kl, npg"):
        preset("ppo", "point_mass").replace(algorithm="a2c")
    ppo = algorithms.get("ppo")
    with pytest.raises(algorithms.AlgorithmError, match="algorithm 'ppo' is already registered"):
        algorithms.register_algorithm(ppo)
    with pytest.raises(algorithms.AlgorithmError, match=r"knobs must map each of its own knobs' names to an Option"):
        algorithms.register_algorithm(dataclasses.replace(ppo, name="mine", knobs=("beta",)))
    with pytest.raises(algorithms.AlgorithmError, match="declares 'gamma', a setting every algorithm shares"):
        algorithms.register_algorithm(dataclasses.replace(ppo, name="mine", knobs={"gamma": Option(0.9, "γ")}))
    with pytest.raises(algorithms.AlgorithmError, match="declares 'kl_bound' as a int static setting; 'trpo'"):
        algorithms.register_algorithm(dataclasses.replace(ppo, name="mine", static={"kl_bound": Option(3, "n")}))
    with pytest.raises(algorithms.AlgorithmError, match="knob 'mode' is traced, so it must be a bool or a number"):
        algorithms.register_algorithm(dataclasses.replace(ppo, name="mine", knobs={"mode": Option("a", "m")}))
    with pytest.raises(algorithms.AlgorithmError, match="constraint's knob 'clip_eps' must be among its knobs"):
        algorithms.register_algorithm(dataclasses.replace(ppo, name="mine", knobs={}))
    with pytest.raises(algorithms.AlgorithmError, match="name must be letters"):
        algorithms.register_algorithm(dataclasses.replace(ppo, name="my algo"))
    assert "mine" not in algorithms.names()
    assert algorithms.owners("kl_bound") == ("trpo", "npg") and algorithms.owners("gamma") == ()


def test_a_knob_of_one_algorithm_given_to_another_is_refused_before_compiling():
    with pytest.raises(ConfigError, match=r"knob clip_eps=0.1 belongs to ppo; algorithm 'trpo' does not read it"):
        preset("trpo", "point_mass").replace(clip_eps=0.1)
    with pytest.raises(ConfigError, match=r"knob kl_bound=0.13 belongs to trpo, npg; algorithm 'vpg'"):
        preset("trpo", "hopper").replace(algorithm="vpg")
    with pytest.raises(ConfigError, match=r"knob kl_target=0.02 belongs to ppo-kl"):
        preset("ppo", "point_mass").replace(kl_target=0.02)
    assert preset("npg", "hopper").kl_bound == preset("trpo", "hopper").kl_bound == 0.13
    assert preset("ppo-kl", "walker2d").lr_policy == preset("ppo", "walker2d").lr_policy


def test_each_algorithm_keeps_its_own_settings_under_its_name_and_a_new_algorithm_declares_new_ones():
    """PPO's and TRPO's settings are two records, nested under their names in the saved configuration; a
    user's algorithm declares a knob and a static setting no other algorithm has: set, swept in a grid (its
    values reach the program's knobs), saved and read back, refused for PPO."""
    ppo, trpo = preset("ppo", "hopper"), preset("trpo", "hopper")
    assert dict(ppo.knobs.own) == {"clip_eps": 0.2} and dict(ppo.static.own) == {"ppo_epochs": 10}
    assert dict(trpo.knobs.own) == {"kl_bound": 0.13, "damping": 0.1, "accept_ratio": 0.1}
    assert trpo.get("clip_eps") is None and not hasattr(trpo.static, "ppo_epochs")
    saved = trpo.to_dict()
    assert saved["trpo"]["knobs"]["kl_bound"] == 0.13 and "kl_bound" not in saved["knobs"]
    assert Config.from_dict(saved) == trpo
    # an earlier manifest's flat record (every algorithm's settings side by side) reads as the same config
    flat = {"name": saved["name"], "static": {**saved["static"], **saved["trpo"]["static"], "ppo_epochs": 4},
            "knobs": {**saved["knobs"], **saved["trpo"]["knobs"], "clip_eps": 0.2, "kl_target": 0.01}}
    assert Config.from_dict(flat) == trpo

    mine = dataclasses.replace(algorithms.get("vpg"), name="vpg-tempered", knobs={
        "temper": Option(1.0, "scales the advantages", "a number > 0", lambda v: v > 0)},
        static={"warmup": Option(0, "iterations without updates", "an int >= 0", lambda v: v >= 0)})
    algorithms.register_algorithm(mine)
    try:
        cfg = preset("vpg", "point_mass").replace(algorithm="vpg-tempered", temper=0.5, warmup=3)
        assert (cfg.temper, cfg.static.warmup, cfg.knob_names()[-1]) == (0.5, 3, "temper")
        assert Config.from_dict(cfg.to_dict()) == cfg
        p = pgdiag.roster(cfg, {"temper": [0.25, 2.0]}, seeds=1)
        assert [c.temper for c in p.configs] == [0.25, 2.0]
        stacked = stack_knobs([c.knobs for c in p.configs])
        assert np.asarray(stacked["temper"]).tolist() == [0.25, 2.0]
        with pytest.raises(ConfigError, match=r"knob 'temper' must be a number > 0, got -1"):
            cfg.replace(temper=-1)
        with pytest.raises(ConfigError, match=r"static setting warmup=3 belongs to vpg-tempered; algorithm 'ppo'"):
            preset("ppo", "point_mass").replace(warmup=3)
        with pytest.raises(ConfigError, match=r"'warmup' is a static setting .* cannot be a grid axis"):
            pgdiag.roster(cfg, {"warmup": [1, 2]})
        with pytest.raises(ConfigError, match=r"unknown knob 'temper' in grid \(it belongs to vpg-tempered, not to"):
            pgdiag.roster(preset("ppo", "point_mass"), {"temper": [1.0]})
        # subjects of two algorithms stack the union of their own knobs; the other's are NaN
        both = stack_knobs([cfg.knobs, preset("ppo", "point_mass").knobs])
        assert np.isnan(np.asarray(both["temper"])[1]) and np.isnan(np.asarray(both["clip_eps"])[0])
    finally:
        algorithms.unregister_algorithm("vpg-tempered")
    # a grid axis is a column of the metrics table: an own knob named like one of its columns is not sweepable
    for column in ("seed", "iteration", "mean_return"):
        algorithms.register_algorithm(dataclasses.replace(algorithms.get("vpg"), name="vpg-col", knobs={
            column: Option(1.0, "a knob", "a number", lambda v: True)}))
        try:
            cfg = preset("vpg", "point_mass").replace(algorithm="vpg-col")
            with pytest.raises(ConfigError, match=rf"knob '{column}' of 'vpg-col' cannot be a grid axis: the "
                                                  rf"metrics table has a column '{column}' of its own"):
                pgdiag.roster(cfg, {column: [1.0, 2.0]})
        finally:
            algorithms.unregister_algorithm("vpg-col")


def test_npg_takes_the_natural_step_of_the_explicit_fisher_matrix_in_full():
    """Δ = √(2δ / sᵀ(F + λI)s)·s with s = (F + λI)⁻¹g: F built explicitly (the Hessian of the mean KL on
    the whole batch, fisher_fraction 1), g the gradient of mean(r·Â) at θ_old, solved directly in float64.
    CG with more iterations than parameters is exact up to float32 rounding (relative 1e-6 per
    operation, amplified by cond(F + λI) ≤ 1e3 here): 1e-3 relative."""
    params, batch = fixed_batch(hidden=())   # a linear policy: 3·2 + 2 + 2 = 10 parameters
    static, knobs = settings("npg", kl_bound=0.02, damping=0.1, num_envs=1, steps_per_env=64, cg_iterations=30,
                             fisher_fraction=1.0)
    out = stages.policy_step(static, params, None, batch, 0.0, knobs, jax.random.PRNGKey(0))
    flat, unravel = ravel_pytree(params)
    adv = (batch.advantages - batch.advantages.mean()) / (batch.advantages.std(ddof=1) + 1e-8)
    old_mean, old_log_std = networks.policy_apply(params, batch.obs, knobs)

    def surrogate(theta):
        mean, log_std = networks.policy_apply(unravel(theta), batch.obs, knobs)
        return jnp.mean(jnp.exp(networks.gaussian_log_prob(mean, log_std, batch.action) - batch.old_log_prob) * adv)

    def mean_kl(theta):
        mean, log_std = networks.policy_apply(unravel(theta), batch.obs, knobs)
        return jnp.mean(networks.gaussian_kl(old_mean, old_log_std, mean, log_std))

    g = np.asarray(jax.grad(surrogate)(flat), np.float64)
    a = np.asarray(jax.hessian(mean_kl)(flat), np.float64) + 0.1 * np.eye(flat.size)
    s = np.linalg.solve(a, g)
    delta = np.sqrt(2 * 0.02 / (s @ a @ s)) * s
    got = np.asarray(ravel_pytree(out.params)[0] - flat, np.float64)
    np.testing.assert_allclose(got, delta, rtol=1e-3, atol=1e-3 * np.abs(delta).max())
    assert float(out.info.step_scale) == 1.0 and out.opt_state is None
    assert float(out.info.policy_loss) == pytest.approx(-float(surrogate(flat + jnp.asarray(got, jnp.float32))),
                                                        rel=1e-4)


def test_npg_steps_a_mean_kl_of_delta_under_the_quadratic_model():
    """With the whole batch as the Fisher subset and no damping, ½ΔᵀFΔ = δ exactly, and the actual mean KL
    of the step differs from its quadratic model by a third-order term, O(|Δ|³) ~ δ^{3/2}: at δ = 1e-4 the
    ratio KL/δ is 1 ± 5% with a wide margin (the cubic term is ~1% here). A linear policy keeps F well
    conditioned (10 parameters, 64 states), so CG without damping converges in float32."""
    params, batch = fixed_batch(seed=1, hidden=())
    static, knobs = settings("npg", kl_bound=1e-4, damping=0.0, num_envs=1, steps_per_env=64, cg_iterations=30,
                             fisher_fraction=1.0)
    new = stages.policy_step(static, params, None, batch, 0.0, knobs, jax.random.PRNGKey(0)).params
    tr = stages.trust_region(params, new, batch.obs, batch.action, batch.old_log_prob, knobs)
    assert float(tr.mean_kl) / 1e-4 == pytest.approx(1.0, abs=0.05)


def test_vpg_is_one_adam_step_along_the_reinforce_gradient():
    """ĝ = mean_i ∇log π(a_i|s_i)·Â_i (Â normalized over the batch): per-sample score functions, summed by
    hand. Adam's first step from zero moments is θ + lr·ĝ/(|ĝ| + ε) elementwise (bias-corrected m̂ = ĝ,
    v̂ = ĝ²). Float32 sums of 64 terms: 1e-5 relative."""
    params, batch = fixed_batch(seed=2)
    static, knobs = settings("vpg", grad_clipping=False, entropy_coef=0.0, num_envs=1, steps_per_env=64)
    vpg = algorithms.get("vpg")
    out = stages.policy_step(static, params, vpg.init_state(params, knobs), batch, 0.01, knobs, None)
    flat, unravel = ravel_pytree(params)
    adv = np.asarray(batch.advantages, np.float64)
    adv = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)
    score = jax.vmap(jax.grad(lambda th, o, a: networks.gaussian_log_prob(
        *networks.policy_apply(unravel(th), o[None], knobs), a[None])[0]), in_axes=(None, 0, 0))(
        flat, batch.obs, batch.action)
    g = (np.asarray(score, np.float64) * adv[:, None]).mean(axis=0)
    expected = np.asarray(flat, np.float64) + 0.01 * g / (np.abs(g) + 1e-5)
    np.testing.assert_allclose(np.asarray(ravel_pytree(out.params)[0]), expected, rtol=1e-5, atol=1e-6)
    assert float(out.info.grad_norm) == pytest.approx(np.linalg.norm(g), rel=1e-4)


def test_ppo_kl_without_a_penalty_takes_unclipped_ppo_steps_and_adapts_beta_by_the_rule():
    """At β = 0 the penalized loss is −mean(r·Â) − c·H, PPO's loss with its clip disabled (ε = 1e32 makes
    min(r·Â, clip(r)·Â) = r·Â): the same minibatches from the same key, the same Adam steps. The two
    differentiate different expressions of the same function (min of two equal terms), so they agree
    to float32 rounding over 3 × 4 Adam steps: 1e-5 relative. β then follows the paper's rule on the
    step's mean KL d, computed here by the closed form of the Gaussian KL."""
    params, batch = fixed_batch(seed=3)
    static, knobs = settings("ppo-kl", kl_beta_init=0.0, kl_target=0.01, num_envs=1, steps_per_env=64, ppo_epochs=3,
                             num_minibatches=4)
    key = jax.random.PRNGKey(7)
    state = algorithms.get("ppo-kl").init_state(params, knobs)
    out = stages.policy_step(static, params, state, batch, 3e-3, knobs, key)
    ppo_static, ppo_knobs = settings("ppo", clip_eps=1e32, num_envs=1, steps_per_env=64, ppo_epochs=3,
                                     num_minibatches=4)
    ppo = stages.policy_step(ppo_static, params,
                             algorithms.get("ppo").init_state(params, ppo_knobs), batch, 3e-3, ppo_knobs, key)
    np.testing.assert_allclose(ravel_pytree(out.params)[0], ravel_pytree(ppo.params)[0], rtol=1e-5, atol=1e-7)
    assert float(out.opt_state.beta) == 0.0          # 0 halves and doubles to 0

    # β = 1: the KL after the step decides β' ∈ {0.5, 1, 2} by the thresholds d_targ / 1.5 and 1.5 d_targ
    _, knobs = settings("ppo-kl", kl_beta_init=1.0, kl_target=0.01)
    out = stages.policy_step(static, params, algorithms.get("ppo-kl").init_state(params, knobs), batch, 3e-3,
                             knobs, key)
    m0, s0 = (np.asarray(x, np.float64) for x in networks.policy_apply(params, batch.obs, knobs))
    m1, s1 = (np.asarray(x, np.float64) for x in networks.policy_apply(out.params, batch.obs, knobs))
    d = np.mean(np.sum(s1 - s0 + (np.exp(2 * s0) + (m0 - m1) ** 2) / (2 * np.exp(2 * s1)) - 0.5, axis=1))
    expected = 0.5 if d < 0.01 / 1.5 else 2.0 if d > 0.015 else 1.0
    assert float(out.opt_state.beta) == expected
    assert float(out.info.penalty) == 1.0            # the β the step optimized with, recorded as `penalty`
    for kl, beta in ((0.001, 0.5), (0.0066, 0.5), (0.0067, 1.0), (0.015, 1.0), (0.0151, 2.0)):
        assert float(ppo_kl.adapt_beta(jnp.float32(1.0), jnp.float32(kl), 0.01)) == beta


@pytest.mark.parametrize("algo", ["ppo", "ppo-kl"])
def test_the_own_objectives_gradient_adds_the_entropy_term_and_nothing_from_clip_or_penalty(algo):
    """At θ_old the ratio is 1 (inside PPO's clip) and ∇KL(π_old ‖ π_θ) = 0, so the own objective's gradient
    exceeds the surrogate's by c·∇H only, and H = Σ(log σ + ½ log 2πe) makes ∇H 1 on each log σ and 0
    elsewhere: objective_extra = c on the log-std entries. Its other entries are the difference of two
    float32 gradients of equal terms (|g| ≲ 10 here): 1e-5 absolute."""
    from pgdiag import make_train
    from pgdiag.studies.gradients import measure as gradients
    from pgdiag.diagnostics.sampling import algorithm_sampling

    cfg = preset(algo, "lqr", entropy_coef=0.05, **({"kl_beta_init": 5.0} if algo == "ppo-kl" else {}))
    trainer = make_train(cfg.static)
    knobs = cfg.knobs.as_arrays()
    agent = trainer.init(jax.random.PRNGKey(0), knobs)
    agent, _ = trainer.iteration(agent, knobs)        # statistics and a policy away from their start
    extra = gradients.objective_extra(trainer.env, cfg.static, algorithm_sampling(cfg.static), agent, knobs,
                                      jax.random.PRNGKey(1))
    expected = ravel_pytree(jax.tree.map(jnp.zeros_like, agent.policy) | {
        "log_std": jnp.full_like(agent.policy["log_std"], 0.05)})[0]
    np.testing.assert_allclose(np.asarray(extra), np.asarray(expected), atol=1e-5)


@pytest.fixture(scope="module")
def new_runs(tmp_path_factory):
    """PPO-KL, NPG and VPG on the linear-quadratic task (one agent each, tiny batches), checkpointed after
    iterations 0 and 2: the subjects of every diagnostic below."""
    from pgdiag import sweep

    root = tmp_path_factory.mktemp("new-algorithms")
    out = {}
    for algo in ("ppo-kl", "npg", "vpg"):
        cfg = study_preset(algo, "lqr", num_envs=2, steps_per_env=32, num_minibatches=4, ppo_epochs=2, value_epochs=2,
                     num_iterations=2, checkpoint_at=(0, 2))
        out[algo] = sweep(cfg, seeds=1, out=str(root / algo)).path
    return out


def test_each_new_algorithm_trains_from_its_preset_and_records_its_metrics(new_runs):
    """Finite losses, a policy that moves, the metrics each step defines (NPG: scale 1; no line search
    elsewhere: NaN)."""
    import pgdiag

    for algo, path in new_runs.items():
        m = pgdiag.load_run(path).metrics
        assert len(m) == 2 and not m.diverged.any()
        assert np.isfinite(m[["policy_loss", "value_loss", "grad_norm", "mean_kl"]].to_numpy()).all()
        assert (m.mean_kl > 0).all()
        assert (m.step_scale == 1.0).all() if algo == "npg" else m.step_scale.isna().all()
        if algo == "ppo-kl":  # β from the preset's kl_beta_init, then halved, kept or doubled each iteration
            beta = m.sort_values("iteration").penalty.to_numpy()
            assert beta[0] == pgdiag.load_run(path).manifest["base_config"]["ppo-kl"]["knobs"]["kl_beta_init"]
            assert all(b in (a / 2, a, 2 * a) for a, b in zip(beta[:-1], beta[1:]))
        else:
            assert m.penalty.isna().all()


def test_every_diagnostic_runs_on_the_new_algorithms(new_runs):
    """The step study and the surrogate landscape call each algorithm's own step and objective; the gradient,
    baseline and landscape-concentration studies sample its frozen policy. At the plane's origin (θ_old)
    every objective is mean(Â_normalized) − β·0 + c·H with c = 0 here: 0 up to float32 rounding of a
    normalized mean (tests/compare.py's CANCELLING_ATOL). With c = 0 PPO-KL's own objective's gradient at
    θ_old is the surrogate's (the
    KL penalty's gradient vanishes there), so the two gradient studies, on the same streams (a subject's
    keys do not depend on the others measured beside it), give the same cosines up to the rounding of
    adding an all-but-zero vector (1e-4)."""
    from pgdiag.diagnostics import baseline_study, gradient_study, landscape_study, step_study

    paths = list(new_runs.values())
    steps = step_study(paths, iterations=[0], batches=2, save=False)   # at iteration 2 PPO-KL's annealed rate is 0
    assert set(steps.steps.algorithm) == {"ppo-kl", "npg", "vpg"} and (steps.steps.norm > 0).all()
    assert np.isfinite(steps.pairs.cosine).all()
    land = landscape_study(paths, iterations=[2], points=3, sizes=(256,), envs=4, save=False)
    kinds = dict(zip(land.planes.algorithm, land.planes.constraint))
    assert kinds == {"ppo-kl": "kl", "npg": "kl", "vpg": ""}
    origin = land.surface[(land.surface.x == 0) & (land.surface.y == 0)]
    assert len(origin) == 3 and np.allclose(origin.surrogate, 0.0, atol=CANCELLING_ATOL)
    kw = dict(iterations=[2], sizes=(64, 256), estimates=2, save=False)
    plain = gradient_study(paths, **kw)
    own = gradient_study(new_runs["ppo-kl"], objective="own", **kw)   # the penalty's term; one program
    assert set(plain.subjects.algorithm) == {"ppo-kl", "npg", "vpg"} and np.isfinite(plain.pairs.cosine).all()
    assert own.manifest["resolved"]["objective"] == "own" and plain.manifest["resolved"]["objective"] == "surrogate"
    key = ["n", "i", "j"]
    same = plain.pairs[plain.pairs.algorithm == "ppo-kl"].sort_values(key)
    np.testing.assert_allclose(own.pairs.sort_values(key).cosine, same.cosine, atol=1e-4)
    with pytest.raises(Exception, match="objective must be one of surrogate, own, got 'mine'"):
        gradient_study(paths, objective="mine", **kw)
    base = baseline_study(paths, iterations=[2], sizes=(64, 256), estimates=2, fit_pairs=2048, fit_epochs=1,
                          fit_minibatch=256, save=False)
    # ("exact" is NaN where the policy's closed loop is unstable and V^π does not exist, as VPG's can be here)
    assert np.isfinite(base.pairs[base.pairs.baseline != "exact"].cosine).all()
    # the baseline study of PPO-KL's own objective: the same streams, the same cosines up to the same rounding
    # (the agent's value network and no baseline; the fitted network is trained in another program)
    own_base = baseline_study(new_runs["ppo-kl"], iterations=[2], sizes=(64, 256), estimates=2, fit_pairs=2048,
                              fit_epochs=1, fit_minibatch=256, save=False, objective="own")
    assert own_base.manifest["resolved"]["objective"] == "own" and base.manifest["resolved"]["objective"] == "surrogate"
    key = ["baseline", "n", "i", "j"]
    mine = own_base.pairs[own_base.pairs.baseline.isin(["value", "zero"])].sort_values(key)
    same = base.pairs[(base.pairs.algorithm == "ppo-kl") & base.pairs.baseline.isin(["value", "zero"])].sort_values(key)
    assert len(mine) == len(same) > 0
    np.testing.assert_allclose(mine.cosine, same.cosine, atol=1e-4)
    with pytest.raises(Exception, match="objective must be one of surrogate, own, got 'mine'"):
        baseline_study(paths, objective="mine", iterations=[2], save=False)


def test_the_trust_region_target_draws_each_algorithms_own_constraint(tmp_path):
    """fig-trust-region on presets of its caller's choice: each agent's reference line comes from its
    algorithm's registered constraint (PPO-KL's d_targ 0.01, NPG's δ 0.13 from the Hopper preset; no ratio
    band, since neither clips the ratio), and the summary labels them."""
    from pgdiag.experiments import targets

    tiny = dict(num_envs=2, steps_per_env=32, num_iterations=3, num_minibatches=4, ppo_epochs=2, value_epochs=2)
    out = targets.get("fig-trust-region").train("smoke", out=str(tmp_path), tasks=("point_mass",), seeds=1,
                           presets=("ppo-kl", "npg"), heldout_every=2, **tiny)
    assert out["references"] == {"point_mass": {"ratio": (), "kl_bound": (0.01, 0.13)}}
    assert list(out["summary"].algorithm) == ["NPG", "PPO-KL"]
    with pytest.raises(ConfigError, match="unknown preset 'a2c'; presets: npg, ppo"):
        targets.get("fig-trust-region").train("smoke", out=str(tmp_path / "x"), presets=("a2c",))
