"""physics='warp': MuJoCo Warp (MJX's Warp implementation) against native MuJoCo, on the CPU (Warp compiles its
kernels for the CPU with LLVM: slow, but the same kernels' arithmetic as on a GPU, in float32).

Parity horizon and tolerance as for MJX (tests/test_physics.py): Warp integrates in float32 and MuJoCo's C
library in float64, so from the same states and actions observations agree to ~1e-6 after a step and drift
slowly through contacts; 30 steps at 2e-4 (absolute, on observations of order 1–10) for Hopper on both models
(measured here: ≤ 2.2e-6 on Brax's, ≤ 1.3e-5 on Gym's RK4 model), identical terminations off steps within the
tolerance of a healthy-range edge. Gym's Humanoid (PGS solver) is the one model Warp cannot run. Every other
model is also stepped once from shared states at a width whose contacts outgrow one environment's buffer."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from compare import assert_terminations_match
from pgdiag import ConfigError, envs, preset, sweep
from pgdiag.envs import crossover, mujoco_physics


def _rollout(env, batch=3, steps=30):
    states = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), batch))
    actions = jax.random.uniform(jax.random.PRNGKey(1), (steps, batch, env.action_size), minval=-1, maxval=1)

    def body(s, a):
        s = jax.vmap(env.step)(s, a)
        return s, (s.obs, s.reward, s.terminated)

    return [np.asarray(x) for x in jax.jit(lambda s: jax.lax.scan(body, s, actions)[1])(states)]


@pytest.mark.parametrize("model", ["brax", "gym"])
def test_warp_agrees_with_native_mujoco(model):
    warp = _rollout(envs.make("hopper", "warp", model=model))
    native = _rollout(envs.make("hopper", "native", 1, model=model))
    np.testing.assert_allclose(warp[0], native[0], atol=2e-4)
    np.testing.assert_allclose(warp[1], native[1], atol=2e-4)
    assert_terminations_match("hopper", native[0], warp[2], native[2], 2e-4)
    assert "MuJoCo Warp" in envs.make("hopper", "warp", model=model).description


#: every model MuJoCo Warp runs (Gym's Humanoid, solved by PGS, it cannot)
WARP_MODELS = [("hopper", "brax"), ("hopper", "gym"), ("walker2d", "brax"), ("walker2d", "gym"), ("humanoid", "brax")]


def _capped(task, model, states, actions) -> np.ndarray:
    """Whether MuJoCo's own Newton solver, stepping each state as native physics does (zero warm start, the
    task's substeps), stops at the model's iteration cap in some substep rather than at its tolerance. On the
    RK4 (Gym) models a substep solves four times and solver_niter keeps the last solve's count, so a cap in
    an earlier stage goes unseen: that can only fail the comparison, never excuse a state wrongly (and those
    models allow 100 iterations)."""
    import mujoco

    from pgdiag.envs.mujoco_models import mujoco_task
    from pgdiag.envs.mujoco_tasks import _model_info, load_model

    spec = mujoco_task(task, model)
    m = load_model(spec)
    d = mujoco.MjData(m)
    ctrl = np.asarray(jax.vmap(jax.vmap(lambda a: spec.ctrl_from_action(a, _model_info(spec, m))))(actions))
    qpos, qvel = (np.asarray(states.physics[k], np.float64) for k in ("qpos", "qvel"))
    capped = np.zeros(ctrl.shape[:2], bool)
    for i in np.ndindex(capped.shape):
        d.qpos[:], d.qvel[:], d.ctrl[:], d.qacc_warmstart[:] = qpos[i], qvel[i], ctrl[i], 0.0
        for _ in range(spec.n_frames):
            mujoco.mj_step(m, d)
            capped[i] |= d.solver_niter[0] >= m.opt.iterations
    return capped


@pytest.mark.parametrize("task, model", WARP_MODELS)
def test_a_warp_step_from_native_states_agrees_with_native_mujoco(task, model):
    """One step of each backend from the same states: 30 states of a native trajectory × 3 environments,
    stepped as 90 worlds at once, more than one world's contact buffer holds (Warp's buffers are sized for
    all of them, or contacts would be lost). Observations and rewards agree to float32 physics' precision
    (5e-4 + 1e-4 relative; measured ≤ 1.5e-4 on observations up to 10) with the same terminations, at every
    state where MuJoCo's own Newton solver converges; where it stops at the model's iteration cap (a few of
    Brax Walker2d's states, whose model allows 4 iterations) the two solvers' unconverged remainders differ
    (by up to 1.4e-2 there), so those are counted, not compared: at most a tenth of the states."""
    native, warp = envs.make(task, "native", 1, model=model), envs.make(task, "warp", model=model)
    starts = jax.vmap(native.reset)(jax.random.split(jax.random.PRNGKey(0), 3))
    actions = jax.random.uniform(jax.random.PRNGKey(1), (30, 3, native.action_size), minval=-1, maxval=1)
    _, states = jax.jit(lambda s: jax.lax.scan(lambda s, a: (jax.vmap(native.step)(s, a), s), s, actions))(starts)
    nat = jax.jit(jax.vmap(jax.vmap(native.step)))(states, actions)
    war = jax.jit(jax.vmap(jax.vmap(warp.step)))(states, actions)
    ok = ~_capped(task, model, states, actions)
    assert ok.mean() >= 0.9, f"{(~ok).sum()} of {ok.size} states stop at the solver's iteration cap"
    obs, obs_w = np.asarray(nat.obs)[ok], np.asarray(war.obs)[ok]
    np.testing.assert_allclose(obs_w, obs, atol=5e-4, rtol=1e-4)
    np.testing.assert_allclose(np.asarray(war.reward)[ok], np.asarray(nat.reward)[ok], atol=5e-4, rtol=1e-4)
    # the edges excused within the observations' tolerance at the largest edge, z = 2: 5e-4 + 1e-4 · 2
    assert_terminations_match(task, obs, np.asarray(war.terminated)[ok], np.asarray(nat.terminated)[ok], 7e-4)
    assert np.abs(np.asarray(nat.obs) - np.asarray(states.obs)).max() > 0.1   # the states do change


def test_a_warp_step_is_built_for_every_world_it_is_vmapped_over():
    """The count the step's data is sized by: 1 alone, the axis under one vmap, the product under nested ones
    (agents × environments), an unbatched argument broadcast; inside jit and scan as training runs it."""
    built = []

    def for_worlds(n):
        built.append(n)
        return lambda x, y: (x + n, y * 0 + n)

    step = mujoco_physics._world_counting(for_worlds)
    x = jnp.zeros((4, 3, 2))
    assert float(step(x[0, 0], 1.0)[0][0]) == 1.0
    assert np.all(np.asarray(jax.vmap(step, in_axes=(0, None))(x[0], 1.0)[0]) == 3.0)
    out = jax.jit(jax.vmap(jax.vmap(step)))(x, jnp.ones((4, 3)))
    assert np.all(np.asarray(out[0]) == 12.0) and np.all(np.asarray(out[1]) == 12.0) and out[0].shape == x.shape
    scanned = jax.lax.scan(lambda c, _: (jax.vmap(jax.vmap(step))(c, jnp.ones((4, 3)))[0], None), x, None, length=2)[0]
    assert np.all(np.asarray(scanned) == 24.0)
    assert set(built) == {1, 3, 12}
    with pytest.raises(TypeError, match="not differentiable"):
        jax.jvp(lambda a: step(a, 1.0)[0], (x[0, 0],), (jnp.ones(2),))


def test_a_training_sweep_runs_on_warp():
    cfg = preset("ppo", "hopper", physics="warp", num_envs=2, steps_per_env=16, num_iterations=1,
                 num_minibatches=2, ppo_epochs=1, value_epochs=1)
    run = sweep(cfg, seeds=[0, 1], progress=False)
    assert run.manifest["physics"]["backend"] == "warp"
    assert np.isfinite(run.metrics["value_loss"]).all()


def test_what_warp_cannot_run_is_named_before_compiling(monkeypatch, capsys):
    with pytest.raises(ValueError, match="MuJoCo Warp cannot run 'humanoid' on the 'gym' model: it lacks the PGS"):
        envs.make("humanoid", "warp", model="gym")
    with pytest.raises(ValueError, match="no physics backend; physics must be 'auto', got 'warp'"):
        envs.resolve_physics("point_mass", "warp")
    with pytest.raises(ConfigError, match="unknown physics backend 'cuda'; choose one of: auto, mjx, native, warp"):
        preset("ppo", "hopper", physics="cuda")
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "warp" else real(name, *a))
    with pytest.raises(ValueError, match=r"needs the warp-lang package, which is not installed: pip install "
                                         r"'pgdiag-rl\[warp\]'"):
        envs.resolve_physics("hopper", "warp")
    assert mujoco_physics.warp_unavailable()
    # from the command line: one line naming the missing package, before anything compiles
    from pgdiag.cli import main

    assert main(["train", "--preset", "ppo", "--task", "hopper", "--set", "physics=warp"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("pgdiag: error: physics='warp' needs the warp-lang package")


def test_auto_times_warp_only_where_an_accelerator_runs_it():
    """On a CPU host physics=auto compares native MuJoCo and MJX; a row with Warp's time decides by all three."""
    on_cpu = jax.default_backend() == "cpu"
    assert crossover.backends_here() == (("native", "mjx") if on_cpu else crossover.BACKENDS)
    row = {"native_ms": 2.0, "mjx_ms": 1.5, "warp_ms": 0.4}
    assert crossover.faster(row) == "warp"
    assert crossover.faster({"native_ms": 2.0, "mjx_ms": 1.5}) == "mjx"
    assert crossover.faster({"native_ms": 1.0, "mjx_ms": 1.0}) == "mjx"   # a tie: MJX, as before Warp
