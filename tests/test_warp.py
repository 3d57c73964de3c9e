"""physics='warp': MuJoCo Warp (MJX's Warp implementation) against native MuJoCo, on the CPU (Warp compiles its
kernels for the CPU with LLVM: slow, but the same kernels' arithmetic as on a GPU, in float32).

Parity horizon and tolerance as for MJX (tests/test_physics.py): Warp integrates in float32 and MuJoCo's C
library in float64, so from the same states and actions observations agree to ~1e-6 after a step and drift
slowly through contacts; 30 steps at 2e-4 (absolute, on observations of order 1–10) for Hopper on both models
(measured here: ≤ 2.2e-6 on Brax's, ≤ 1.3e-5 on Gym's RK4 model), identical terminations off steps within the
tolerance of a healthy-range edge. Gym's Humanoid (PGS solver) is the one model Warp cannot run."""

import jax
import numpy as np
import pytest

from compare import assert_terminations_match
from pg_diag import ConfigError, envs, preset, sweep
from pg_diag.envs import crossover, mujoco_physics


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


def test_a_training_sweep_runs_on_warp():
    cfg = preset("ppo", "hopper", physics="warp", num_envs=2, steps_per_env=16, num_iterations=1,
                 num_minibatches=2, ppo_epochs=1, value_epochs=1)
    run = sweep(cfg, seeds=[0, 1], progress=False)
    assert run.manifest["physics"]["backend"] == "warp"
    assert np.isfinite(run.metrics["value_loss"]).all()


def test_what_warp_cannot_run_is_named_before_compiling(monkeypatch):
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
                                         r"'pg_diag\[warp\]'"):
        envs.resolve_physics("hopper", "warp")
    assert mujoco_physics.warp_unavailable()


def test_auto_times_warp_only_where_an_accelerator_runs_it():
    """On a CPU host physics=auto compares native MuJoCo and MJX; a row with Warp's time decides by all three."""
    on_cpu = jax.default_backend() == "cpu"
    assert crossover.backends_here() == (("native", "mjx") if on_cpu else crossover.BACKENDS)
    row = {"native_ms": 2.0, "mjx_ms": 1.5, "warp_ms": 0.4}
    assert crossover.faster(row) == "warp"
    assert crossover.faster({"native_ms": 2.0, "mjx_ms": 1.5}) == "mjx"
    assert crossover.faster({"native_ms": 1.0, "mjx_ms": 1.0}) == "mjx"   # a tie: MJX, as before Warp
