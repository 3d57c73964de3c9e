"""The `gym` model's tasks step for step against Gymnasium's Hopper-v5, Walker2d-v5 and Humanoid-v5, configured
to Gym-v2's semantics where v5 differs.

pgdiag carries its state in float32 and Gymnasium in float64, so two free-running trajectories of these
chaotic systems part after a few hundred steps whatever the implementation. The comparison therefore lets
pgdiag run free for 1,000 steps (through terminations, resets and, with a short time limit, truncations) and
has Gymnasium take every step from pgdiag's state: its data's positions, velocities (and, for Humanoid, the
solver's warm start) set to pgdiag's float32 values, which float64 holds exactly. Both then integrate the same
float64 input with MuJoCo; what can differ is rounding to float32 on pgdiag's side:

* observations: each value is MuJoCo's float64 rounded once to float32, |Δ| ≤ 2⁻²⁴·|v| (6e-8 relative), the
  height and angle included (their offsets are exact in float32); asserted at 4 × 2⁻²⁴ relative. (Newton's
  different warm starts in Hopper and Walker2d are set equal: zero, pgdiag's per-step start);
* rewards: Δx/dt is a difference of two float32 positions, off by ≤ 2⁻²⁴(|x₀| + |x₁|)/dt, plus float32 sums of
  O(1) terms (≤ 1e-6·|r|); asserted at 4× that bound + 1e-5;
* terminations and truncations: exactly, except on steps whose height or angle lies within 1e-5 of a healthy
  range's edge (none occurred here; counted and asserted few).

Differences between v5 and Gym-v2, each accounted for by name:
* v5 pays the healthy reward only while healthy; v2 paid its alive bonus on every step, the terminal one
  included: v2 reward = v5 reward + healthy_reward on a terminal step.
* Walker2d-v5 reads walker2d_v5.xml (both feet friction 1.9); v2's model is walker2d.xml (0.9 / 1.9): passed as
  xml_file.
* Humanoid-v5's observation drops the world body's rows of cinert, cvel and cfrc_ext and qfrc_actuator's six
  root entries, all zero: v2's 376-d observation is v5's 348-d one with those zeros put back.
* Humanoid-v2's `done` was z < 1 or z > 2; v5's healthy range is open (1 < z < 2): they differ only at z = 1, 2.
* Gymnasium's time limit reports a step that terminates on the limit as terminated and truncated; pgdiag
  calls it terminated only (a terminal state is never bootstrapped).
"""

import os

import gymnasium  # a test dependency (pyproject's [test] extra: gymnasium[mujoco])
import jax
import mujoco
import numpy as np
import pytest

from pgdiag import envs, preset, sweep
from pgdiag.config import ConfigError
from pgdiag.envs.mujoco_models import mujoco_task
from pgdiag.envs.mujoco_tasks import asset_path, make_mujoco_env

GYM_IDS = {"hopper": "Hopper-v5", "walker2d": "Walker2d-v5", "humanoid": "Humanoid-v5"}
HEALTHY_REWARD = {"hopper": 1.0, "walker2d": 1.0, "humanoid": 5.0}
STEPS = 1000
EPS32 = 2.0 ** -24


def _gym_env(task, limit):
    kwargs = {"xml_file": asset_path(mujoco_task(task, "gym"))}
    return gymnasium.make(GYM_IDS[task], max_episode_steps=limit, **kwargs)


def _v2_obs_from_v5(task, obs, nbody):
    """Humanoid: v5's 348-d observation with v2's zero rows put back (the others are equal)."""
    if task != "humanoid":
        return obs
    q, v = obs[:22], obs[22:45]
    rest = obs[45:]
    k = nbody - 1
    cinert, cvel = rest[:10 * k].reshape(k, 10), rest[10 * k:16 * k].reshape(k, 6)
    qfrc, cfrc = rest[16 * k:16 * k + 17], rest[16 * k + 17:].reshape(k, 6)
    zero = np.zeros
    return np.concatenate([q, v, np.vstack([zero((1, 10)), cinert]).ravel(), np.vstack([zero((1, 6)), cvel]).ravel(),
                           np.concatenate([zero(6), qfrc]), np.vstack([zero((1, 6)), cfrc]).ravel()])


def _follow(task, limit, action_scale, seed):
    """pgdiag's native gym-model task runs free; Gymnasium takes each step from pgdiag's state. Returns
    per-step arrays of (pgdiag, Gymnasium) observations, rewards, flags and the reward tolerance."""
    env = make_mujoco_env(mujoco_task(task, "gym"), "native", 1, max_episode_steps=limit)
    gym = _gym_env(task, limit)
    u = gym.unwrapped
    m, d = u.model, u.data
    rng = np.random.default_rng(seed)
    step, reset = jax.jit(env.step), jax.jit(env.reset)
    keys = iter(jax.random.split(jax.random.PRNGKey(seed), STEPS + 1))
    rows = {k: [] for k in ("obs", "gym_obs", "reward", "gym_reward", "terminated", "gym_terminated", "truncated",
                            "gym_truncated", "reward_tol", "edge")}

    def gym_reset(state):
        # Gymnasium's reset (mj_resetData, then set_state: mj_forward) at pgdiag's reset state
        gym.reset(seed=0)
        mujoco.mj_resetData(m, d)
        u.set_state(np.asarray(state.physics["qpos"], np.float64), np.asarray(state.physics["qvel"], np.float64))
        # kinematics from JAX (MJX's) in float32 against MuJoCo's float64: a few roundings per value
        np.testing.assert_allclose(np.asarray(state.obs), _v2_obs_from_v5(task, u._get_obs(), m.nbody),
                                   rtol=1e-5, atol=1e-6)

    state = reset(next(keys))
    gym_reset(state)
    high = np.asarray(m.actuator_ctrlrange[:, 1])
    for _ in range(STEPS):
        # beyond the control range too, so that both clamp
        action = (rng.uniform(-1.0, 1.0, size=env.action_size) * high * action_scale).astype(np.float32)
        d.qpos[:] = np.asarray(state.physics["qpos"], np.float64)
        d.qvel[:] = np.asarray(state.physics["qvel"], np.float64)
        if "qacc_warmstart" in state.physics:
            d.qacc_warmstart[:] = np.asarray(state.physics["qacc_warmstart"], np.float64)
        else:  # pgdiag's Hopper and Walker2d start Newton from zero each step (converged to 1e-8 either way)
            d.qacc_warmstart[:] = 0.0
        x0 = float(state.physics["qpos"][0]) if task != "humanoid" else float(state.physics["mass_center"][0])
        state = step(state, action)
        obs, reward, terminated, truncated, _ = gym.step(action.astype(np.float64))
        reward += HEALTHY_REWARD[task] * terminated  # v2's alive bonus on the terminal step
        x1 = float(state.physics["qpos"][0]) if task != "humanoid" else float(state.physics["mass_center"][0])
        z, angle = (d.qpos[1], d.qpos[2]) if task != "humanoid" else (d.qpos[2], 0.0)
        edges = {"hopper": (0.7, 0.2, -0.2), "walker2d": (0.8, 2.0, 1.0, -1.0), "humanoid": (1.0, 2.0)}[task]
        rows["edge"].append(any(abs(z - e) < 1e-5 or abs(angle - e) < 1e-5 for e in edges))
        rows["obs"].append(np.asarray(state.obs))
        rows["gym_obs"].append(_v2_obs_from_v5(task, obs, m.nbody))
        rows["reward"].append(float(state.reward))
        rows["gym_reward"].append(reward)
        rows["reward_tol"].append(4 * (EPS32 * (abs(x0) + abs(x1)) / u.dt + 1e-6 * abs(reward)) + 1e-5)
        rows["terminated"].append(bool(state.terminated))
        rows["gym_terminated"].append(bool(terminated))
        rows["truncated"].append(bool(state.truncated))
        rows["gym_truncated"].append(bool(truncated and not terminated))
        if state.terminated or state.truncated:
            state = reset(next(keys))
            gym_reset(state)
    return {k: np.asarray(v) for k, v in rows.items()}


@pytest.mark.parametrize("task,limit,action_scale", [
    ("hopper", 1000, 1.5), ("hopper", 30, 0.2), ("walker2d", 1000, 1.5), ("walker2d", 30, 0.2),
    ("humanoid", 1000, 1.5), ("humanoid", 30, 0.2)])
def test_gym_model_steps_as_gymnasium(task, limit, action_scale):
    r = _follow(task, limit, action_scale, seed=3)
    np.testing.assert_allclose(r["obs"], r["gym_obs"], rtol=4 * EPS32, atol=1e-30)
    assert np.all(np.abs(r["reward"] - r["gym_reward"]) <= r["reward_tol"]), \
        np.max(np.abs(r["reward"] - r["gym_reward"]) - r["reward_tol"])
    ok = ~r["edge"]
    assert r["edge"].sum() <= 2
    np.testing.assert_array_equal(r["terminated"][ok], r["gym_terminated"][ok])
    np.testing.assert_array_equal(r["truncated"][ok], r["gym_truncated"][ok])
    # the run exercised what it compares: strong random torques end episodes by falling, weak ones by the
    # 30-step limit (no hopper, walker or humanoid falls from its start pose within 30 steps at 0.2 × range)
    if limit == 1000:
        assert r["terminated"].sum() >= 5
    else:
        assert r["truncated"].sum() >= 5


def test_gym_models_reset_as_gym_v2():
    """The reset distribution: uniform ±noise around the model's qpos0 (and zero velocity), Gym-v2's scale."""
    for task, noise in (("hopper", 5e-3), ("walker2d", 5e-3), ("humanoid", 1e-2)):
        spec = mujoco_task(task, "gym")
        assert spec.reset_noise == noise == _gym_env(task, 1000).unwrapped._reset_noise_scale
        env = envs.make(task, "native", 1, model="gym")
        states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), 2000))
        qpos0 = np.asarray(_gym_env(task, 1000).unwrapped.init_qpos, np.float32)
        dev = np.asarray(states.physics["qpos"]) - qpos0
        # 2,000 uniform draws on [−c, c]: the extremes lie within c/200 of ±c except with probability ~1e-4·dim
        assert np.all(np.abs(dev) <= noise * (1 + 1e-5))
        assert np.all(dev.max(0) > noise * 0.99) and np.all(dev.min(0) < -noise * 0.99)


def test_the_gym_humanoids_steps_do_not_depend_on_the_thread_count():
    """Each environment is stepped alone in float64 on its own MjData, whichever thread takes it."""
    from pgdiag.envs.native_physics import NativeFieldStepper
    from pgdiag.envs.mujoco_tasks import load_model

    spec = mujoco_task("humanoid", "gym")
    model = load_model(spec)
    rng = np.random.default_rng(0)
    batch = (3, 5)
    qpos = (model.qpos0 + rng.uniform(-0.01, 0.01, batch + (model.nq,))).astype(np.float32)
    qvel = rng.uniform(-0.5, 0.5, batch + (model.nv,)).astype(np.float32)
    warm = np.zeros(batch + (model.nv,), np.float32)
    ctrl = rng.uniform(-0.4, 0.4, batch + (model.nu,)).astype(np.float32)
    one = NativeFieldStepper(model, spec.n_frames, spec.host_fields, 1)(qpos, qvel, warm, ctrl)
    three = NativeFieldStepper(model, spec.n_frames, spec.host_fields, 3)(qpos, qvel, warm, ctrl)
    for a, b in zip(one, three):
        np.testing.assert_array_equal(a, b)
    assert one[0].shape == batch + (model.nq,) and one[-1].shape == batch + (model.nbody, 6)


def test_gym_humanoid_runs_natively_only():
    with pytest.raises(ValueError, match="PGS"):
        envs.make("humanoid", "mjx", model="gym")
    assert envs.resolve_physics("humanoid", "auto", 0, "gym")[0] == "native"
    with pytest.raises(ValueError, match="choose one of: brax, gym"):
        envs.make("hopper", "native", model="mujoco")
    with pytest.raises(ValueError, match="no choice of MuJoCo model"):
        envs.make("lqr", model="gym")


def test_gym_model_files_are_gymnasiums():
    for task in GYM_IDS:
        path = asset_path(mujoco_task(task, "gym"))
        assert os.path.dirname(path) == os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")


def test_a_sweep_trains_on_the_gym_model_and_records_it(tmp_path):
    with pytest.raises(ConfigError, match="MJX lacks the PGS solver"):
        preset("ppo", "humanoid", model="gym", physics="mjx")
    with pytest.raises(ConfigError, match="choose one of: brax, gym"):
        preset("ppo", "hopper", model="gym-v2")
    with pytest.raises(ConfigError, match="no MuJoCo model"):
        preset("ppo", "point_mass", model="gym")
    cfg = preset("ppo", "hopper", model="gym", physics="native", num_envs=2, steps_per_env=32, num_iterations=1,
                 num_minibatches=1, ppo_epochs=1, value_epochs=1)
    run = sweep(cfg, seeds=[0], out=str(tmp_path / "run"))
    physics = run.manifest["physics"]
    assert physics["model"] == "gym" and physics["backend"] == "native"
    # 64 steps of a falling hopper: each step earns about its alive bonus of 1 (Gym-v2 pays it on every step)
    m = run.metrics.iloc[0]
    assert m.episodes >= 1 and 0 < m.mean_return < 200
