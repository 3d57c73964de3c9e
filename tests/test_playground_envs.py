"""A MuJoCo Playground environment as a pgdiag task (pgdiag.adapters.playground_envs): step for step what
Playground's own environment computes, trained in a sweep and measured by a diagnostic like any built-in task.
CartpoleBalance (DM Control suite; 5-d observation, 1-d action) on MJX's JAX physics compiles in seconds on a CPU."""

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pgdiag import preset, sweep
from pgdiag.adapters import register_playground_env
from pgdiag.adapters.brax_envs import brax_task
from pgdiag.adapters.playground_envs import playground_env
from pgdiag.envs import unregister_task

LIMIT = 25


@pytest.fixture(scope="module")
def cartpole():
    env, _ = playground_env("CartpoleBalance")
    name = register_playground_env("CartpoleBalance", name="playground-cartpole-test", episode_limit=LIMIT)
    yield env, name
    unregister_task(name)


def test_each_step_is_playground_own(cartpole):
    """40 steps of random actions (some beyond [-1, 1]): the task's step and Playground's own step on the same
    state with the actions clipped, in one compiled program, agree bit for bit; the time limit comes at 25."""
    env, _ = cartpole
    task = brax_task(env, "x", LIMIT)
    both = jax.jit(lambda state, a: (task.step(state, a), env.step(state.physics, jnp.clip(a, -1.0, 1.0))))
    s = jax.jit(task.reset)(jax.random.PRNGKey(3))
    np.testing.assert_array_equal(s.obs, jax.jit(env.reset)(jax.random.PRNGKey(3)).obs)
    actions = 1.5 * jax.random.normal(jax.random.PRNGKey(4), (40, env.action_size))
    for i, a in enumerate(actions):
        s, b = both(s, a)
        np.testing.assert_array_equal(s.obs, b.obs)
        np.testing.assert_array_equal(s.physics.data.qpos, b.data.qpos)
        assert float(s.reward) == float(b.reward) and bool(s.terminated) == bool(b.done > 0.5)
        assert bool(s.truncated) == (i + 1 >= LIMIT) and int(s.t) == i + 1


def test_action_repeat_sums_the_rewards_of_the_repeated_steps(cartpole):
    env, _ = cartpole
    task = brax_task(env, "x", LIMIT, action_repeat=3)
    s = jax.jit(task.reset)(jax.random.PRNGKey(0))
    a = jnp.full((env.action_size,), 0.3)
    s3 = jax.jit(task.step)(s, a)
    b, total = s.physics, 0.0
    for _ in range(3):
        b = jax.jit(env.step)(b, a)
        total += float(b.reward)
    np.testing.assert_allclose(np.asarray(s3.obs), np.asarray(b.obs), rtol=0, atol=1e-6)
    assert abs(float(s3.reward) - total) <= 1e-6 * 3


def test_a_playground_env_trains_in_a_sweep_and_is_measured(cartpole, tmp_path):
    from pgdiag.diagnostics import step_study

    _, name = cartpole
    cfg = preset("ppo", "point_mass").replace(task=name, num_envs=2, steps_per_env=16, num_iterations=2,
                                              num_minibatches=2, ppo_epochs=1, value_epochs=1, checkpoint_at=(1,))
    run = sweep(cfg, seeds=[0, 1], out=str(tmp_path / "run"))
    assert np.isfinite(run.metrics.policy_loss).all() and run.manifest["base_config"]["static"]["task"] == name
    study = step_study([str(tmp_path / "run")], iterations=[1], batches=2, save=False)
    assert len(study.steps) == 2 * 2 and np.isfinite(study.steps.norm).all()


def test_bad_input_is_named(monkeypatch):
    with pytest.raises(ValueError, match="unknown Playground environment 'CartpoleBalanse'; Playground's are: "):
        register_playground_env("CartpoleBalanse")
    monkeypatch.setitem(sys.modules, "mujoco_playground", None)   # as where the package is not installed
    with pytest.raises(ImportError, match=r"needs MuJoCo Playground, which is not installed: pip install"):
        register_playground_env("CartpoleBalance")


def test_a_registered_env_sweeps_from_the_command_line_with_any_preset(cartpole, tmp_path, capsys):
    """`pgdiag sweep --preset trpo --task NAME` on a task a user registered (TRPO: a preset other than the PPO the
    Python test trains): the algorithm's Hopper preset with that task, said once; its agents finish no episode in
    16 steps of a 25-step limit, and the run says so."""
    from pgdiag.cli import main

    _, name = cartpole
    algorithm = "trpo"
    assert main(["sweep", "--preset", algorithm, "--task", name, "--seeds", "1", "--set", "num_envs=2", "--set",
                 "steps_per_env=8", "--set", "num_iterations=2", "--set", "num_minibatches=2", "--set",
                 "value_epochs=1", "--no-progress", "--out", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    assert f"no {algorithm} preset for your task {name!r}: its Hopper settings" in err
    assert f"finished no episode in their 16 steps per environment (episodes of {name} last up to {LIMIT})" in err
