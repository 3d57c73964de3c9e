"""A Brax environment as a pgdiag task (pgdiag.adapters.brax_envs): step for step what Brax's own env computes,
trained in a sweep and measured by a diagnostic like any built-in task."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pgdiag import preset, sweep
from pgdiag.adapters.brax_envs import brax_task, register_brax_env
from pgdiag.envs import unregister_task

LIMIT = 20


@pytest.fixture(scope="module")
def pendulum():
    from brax import envs

    env = envs.get_environment("inverted_pendulum", backend="positional")
    name = register_brax_env(env, name="brax-pendulum-test", episode_limit=LIMIT)
    yield env, name
    unregister_task(name)


def test_each_step_is_brax_own(pendulum):
    """30 steps of random actions (some beyond [-1, 1]): each step of the task and Brax's own step on the same
    state with the actions clipped, computed by one compiled program, give the same observation, reward and
    termination bit for bit, the time limit added at step 20."""
    env, _ = pendulum
    task = brax_task(env, "x", LIMIT)
    both = jax.jit(lambda state, a: (task.step(state, a), env.step(state.physics, jnp.clip(a, -1.0, 1.0))))
    s = jax.jit(task.reset)(jax.random.PRNGKey(3))
    np.testing.assert_array_equal(s.obs, jax.jit(env.reset)(jax.random.PRNGKey(3)).obs)
    actions = 1.5 * jax.random.normal(jax.random.PRNGKey(4), (30, env.action_size))
    for i, a in enumerate(actions):
        s, b = both(s, a)
        np.testing.assert_array_equal(s.obs, b.obs)
        assert float(s.reward) == float(b.reward) and bool(s.terminated) == bool(b.done > 0.5)
        assert bool(s.truncated) == (i + 1 >= LIMIT and not bool(b.done > 0.5)) and int(s.t) == i + 1
        if bool(b.done > 0.5):
            break


def test_a_registered_brax_env_trains_in_a_sweep_and_is_measured(pendulum, tmp_path):
    from pgdiag.diagnostics import step_study

    _, name = pendulum
    cfg = preset("ppo", "point_mass").replace(task=name, num_envs=2, steps_per_env=16, num_iterations=2,
                                              num_minibatches=2, ppo_epochs=1, value_epochs=1,
                                              checkpoint_at=(1,))
    run = sweep(cfg, seeds=[0, 1], out=str(tmp_path / "run"))
    assert np.isfinite(run.metrics.policy_loss).all() and run.manifest["base_config"]["static"]["task"] == name
    study = step_study([str(tmp_path / "run")], iterations=[1], batches=2, save=False)
    assert len(study.steps) == 2 * 2 and np.isfinite(study.steps.norm).all()


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="unknown Brax environment 'no-such'; Brax's are: ant, fast"):
        register_brax_env("no-such")
    with pytest.raises(ValueError, match="expected a Brax Env or a Brax environment's name, got int"):
        register_brax_env(3)
