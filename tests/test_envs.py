"""Tasks: dynamics by hand, terminated vs truncated, vmap batching, the Hopper definition, an MJX training smoke test."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pgdiag import envs, preset, sweep
from pgdiag.run import CompileCounter


def test_pendulum_step_by_hand():
    env = envs.make("pendulum")
    s = env.reset(jax.random.PRNGKey(0))
    th, thdot = float(s.physics[0]), float(s.physics[1])
    np.testing.assert_allclose(s.obs, [math.cos(th), math.sin(th), thdot], rtol=1e-6)
    nxt = env.step(s, jnp.array([5.0]))  # torque clipped to 2
    u = 2.0
    norm_th = ((th + math.pi) % (2 * math.pi)) - math.pi
    cost = norm_th ** 2 + 0.1 * thdot ** 2 + 0.001 * u ** 2
    new_thdot = thdot + (3 * 10 / 2 * math.sin(th) + 3.0 * u) * 0.05
    new_th = th + new_thdot * 0.05
    assert float(nxt.reward) == pytest.approx(-cost, rel=1e-5)
    np.testing.assert_allclose(nxt.physics, [new_th, new_thdot], rtol=1e-5)


def run_episode(env, action, steps, key=0):
    s = env.reset(jax.random.PRNGKey(key))

    def body(s, _):
        n = env.step(s, action)
        return n, (n.terminated, n.truncated, n.t)

    return jax.lax.scan(body, s, None, length=steps)[1]


def test_time_limit_truncates_without_terminating():
    env = envs.make("pendulum")
    term, trunc, t = run_episode(env, jnp.zeros(1), 200)
    assert not bool(term.any())
    assert np.nonzero(np.asarray(trunc))[0].tolist() == [199]  # the 200th step


def test_point_mass_terminates_when_leaving_the_arena():
    env = envs.make("point_mass")
    term, trunc, t = run_episode(env, jnp.array([1.0, 1.0]), 200)
    first = int(np.argmax(np.asarray(term)))
    assert bool(term[first]) and not bool(trunc.any())
    # pushed diagonally at full force it leaves radius 2 well before the time limit
    assert 5 < first < 100


def test_reset_and_step_batch_with_vmap():
    env = envs.make("point_mass")
    states = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), 5))
    assert states.obs.shape == (5, 4)
    nxt = jax.vmap(env.step)(states, jnp.zeros((5, 2)))
    single = env.step(jax.tree.map(lambda x: x[3], states), jnp.zeros(2))
    np.testing.assert_array_equal(nxt.obs[3], single.obs)
    assert len({tuple(np.asarray(o)) for o in states.obs}) == 5  # distinct random resets


def test_every_model_has_its_tasks_and_an_unknown_one_is_refused():
    """The models the package names (envs.MODELS) are the ones a MuJoCo task is looked up in, each defining
    the three MuJoCo tasks; another model is refused naming the allowed ones."""
    from pgdiag.envs.mujoco_models import BY_MODEL, mujoco_task

    assert tuple(BY_MODEL) == envs.MODELS
    for model in envs.MODELS:
        assert {mujoco_task(t, model).name for t in ("hopper", "walker2d", "humanoid")} == {"hopper", "walker2d",
                                                                                            "humanoid"}
        assert mujoco_task("hopper", model).model == model
    with pytest.raises(ValueError, match="unknown MuJoCo model 'dm'; choose one of: brax, gym"):
        mujoco_task("hopper", "dm")


def test_unknown_task_is_rejected():
    with pytest.raises(ValueError, match="unknown task 'ant'; tasks are: "):
        envs.make("ant")


# --- MuJoCo tasks (the default backend: native MuJoCo on a CPU) -------------------

ACTION = jnp.array([0.5, -0.5, 0.5])


@pytest.fixture(scope="module")
def hopper():
    return envs.make("hopper")


def test_hopper_reward_and_termination_follow_the_definition(hopper):
    """Under constant torques the hopper falls over. Check reward = Δx/dt + 1 −
    1e-3·|a|², the observation layout and the termination rule, step by step."""
    state = hopper.reset(jax.random.PRNGKey(1))
    qpos0 = np.asarray(state.physics["qpos"])
    assert np.all(np.abs(qpos0 - np.array([0, 0, 0, 0, 0, 0])) <= 5e-3)  # reset noise ±5e-3 around qpos0
    np.testing.assert_allclose(state.obs[0], 1.25 + qpos0[1], rtol=1e-6)  # torso height first

    @jax.jit
    def roll(s):
        def body(s, _):
            n = hopper.step(s, ACTION)
            return n, (s.physics["qpos"], n.physics["qpos"], n.physics["qvel"], n.reward, n.terminated, n.obs)
        return jax.lax.scan(body, s, None, length=150)[1]

    q_before, q_after, qvel, reward, terminated, obs = map(np.asarray, roll(state))
    dt = 0.002 * 4
    ctrl_cost = 1e-3 * float(np.sum(np.asarray(ACTION) ** 2))
    np.testing.assert_allclose(reward, (q_after[:, 0] - q_before[:, 0]) / dt + 1.0 - ctrl_cost, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(obs[:, 1:5], q_after[:, 2:], rtol=1e-6)
    np.testing.assert_allclose(obs[:, 5:], np.clip(qvel, -10, 10), rtol=1e-6)
    z, angle = 1.25 + q_after[:, 1], q_after[:, 2]
    state_vec = np.concatenate([q_after[:, 2:], qvel], axis=1)
    healthy = (z > 0.7) & (np.abs(angle) < 0.2) & np.all(np.abs(state_vec) < 100, axis=1)
    np.testing.assert_array_equal(terminated, ~healthy)
    assert terminated.any(), "a hopper under constant torques falls within 150 steps"
    assert not terminated[:5].any()  # but not at once


def test_mjx_training_smoke():
    cfg = preset("ppo", "hopper", physics="mjx", num_envs=2, steps_per_env=64, num_iterations=2,
                 num_minibatches=4, ppo_epochs=2, value_epochs=2)
    run = sweep(cfg, {"value_clipping": [False, True]}, seeds=[0])
    m = run.metrics
    assert len(m) == 4 and not m.diverged.any()
    assert (m.episodes > 0).all()
    finite = ["mean_return", "mean_kl", "max_kl", "max_ratio", "value_loss", "policy_std"]
    assert np.isfinite(m[finite].to_numpy()).all()
    # a random-ish policy falls quickly: mean return is ~ (episode length) × (1 alive bonus ± velocity)
    assert (m.mean_return < 200).all() and (m.mean_return > 0).all()


@pytest.mark.parametrize("name", sorted(envs.TASKS))
def test_declared_sizes_match_traced_shapes(name):
    """Shapes by abstract evaluation (no compile): reset/step give obs_size observations."""
    env = envs.make(name)
    state = jax.eval_shape(env.reset, jax.random.PRNGKey(0))
    assert state.obs.shape == (env.obs_size,)
    nxt = jax.eval_shape(env.step, state, jax.ShapeDtypeStruct((env.action_size,), jnp.float32))
    assert nxt.obs.shape == (env.obs_size,) and nxt.obs.dtype == jnp.float32
    assert nxt.terminated.dtype == jnp.bool_ and nxt.truncated.dtype == jnp.bool_
    # the LQR task's episodes are geometric; its time limit is a safety bound reached with probability ~1e-88
    limits = {"mujoco": 1000, "lqr": 10_000}
    assert env.max_episode_steps == limits.get(name, limits.get(envs.TASKS[name][0], 200))


def _target_task(max_episode_steps=1):
    """A user's task: observe a target c ~ U(−1, 1), act, get −(a − c)²; every episode is one step."""
    from pgdiag.envs.base import Env, EnvState, time_limit

    def reset(key):
        c = jax.random.uniform(key, (1,), minval=-1.0, maxval=1.0)
        return EnvState(physics=c, obs=c, reward=jnp.float32(0), terminated=jnp.bool_(False),
                        truncated=jnp.bool_(False), t=jnp.int32(0))

    def step(state, action):
        t = state.t + 1
        return EnvState(physics=state.physics, obs=state.physics,
                        reward=-jnp.sum(jnp.square(action - state.physics)).astype(jnp.float32),
                        terminated=jnp.bool_(False), truncated=time_limit(t, jnp.bool_(False), max_episode_steps),
                        t=t)

    return Env(name="target", obs_size=1, action_size=1, max_episode_steps=max_episode_steps, reset=reset,
               step=step)


def test_a_users_task_registers_like_the_built_in_ones_and_trains():
    """Registered in one call, the task is known to configurations, sweeps and `pgdiag tasks`; a batch of
    2 environments × 16 steps of one-step episodes ends 32 episodes of length 1 per iteration (by hand)."""
    envs.register_task("target", lambda physics, threads, solver: _target_task(), obs_size=1, action_size=1,
                       episode_limit=1, description="one-step target matching")
    try:
        with pytest.raises(ValueError, match="task 'target' is already registered"):
            envs.register_task("target", lambda *a: _target_task(), obs_size=1, action_size=1, episode_limit=1)
        cfg = preset("ppo", "point_mass").replace(task="target", num_envs=2, steps_per_env=16, num_minibatches=4,
                                                  num_iterations=2, ppo_epochs=2, value_epochs=2)
        m = sweep(cfg, seeds=1).metrics
        assert (m.episodes == 32).all() and (m.mean_length == 1.0).all() and np.isfinite(m.mean_return).all()
    finally:
        envs.unregister_task("target")
    with pytest.raises(Exception, match="unknown task 'target'"):
        preset("ppo", "point_mass").replace(task="target")
    envs.register_task("target", lambda *a: _target_task(max_episode_steps=3), obs_size=1, action_size=1,
                       episode_limit=1)
    try:
        with pytest.raises(ValueError, match=r"registered with \(obs, action\) sizes \(1, 1\) and time limit 1, "
                                             r"but the task built has \(1, 1\) and 3"):
            envs.make("target")
    finally:
        envs.unregister_task("target")
    # what a step returns is traced (not compiled) when the task is built: a vector reward is named
    def vector_reward():
        task = _target_task()
        return task.replace(step=lambda state, action: task.step(state, action).replace(reward=jnp.zeros(2)))
    envs.register_task("target", lambda *a: vector_reward(), obs_size=1, action_size=1, episode_limit=1)
    try:
        with CompileCounter() as cc, pytest.raises(ValueError, match=r"task 'target': its step returns reward of "
                                                                    r"shape \(2,\) and dtype float32; one "
                                                                    r"environment's reward is of shape \(\)"):
            envs.make("target")
        assert cc.count == 0
    finally:
        envs.unregister_task("target")
    with pytest.raises(ValueError, match="obs_size must be a positive int, got 0"):
        envs.register_task("bad", lambda *a: None, obs_size=0, action_size=1, episode_limit=1)
