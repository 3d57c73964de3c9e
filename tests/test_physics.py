"""The two physics backends of the MuJoCo tasks: parity, determinism, resets, derived fields, errors.

Parity horizon and tolerance. MJX integrates in float32 and MuJoCo's C library in
float64 (the state crossing back into the compiled program is float32); both run
the same model, solver settings and task code. From the same initial states
and actions their observations agree to ~1e-5 after one step; the difference
then grows slowly, through contact events, and physics is chaotic, so equality
is asserted over a short horizon only: 50 steps at 2e-4 (absolute, on
observations of order 1–20) for Hopper, 30 steps at 2e-3 for Humanoid, with
rewards to the same tolerance and identical terminations off the few steps
within the tolerance of a healthy-range edge (tests/compare.py). (Measured here:
Hopper ≤ 1.2e-5 over 50 steps, Humanoid ≤ 3e-4 over 60 steps; Gym's Hopper, RK4
and condim 1 on both backends, ≤ 3.2e-5 over 50 steps.)
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from compare import assert_terminations_match
from pgdiag import ConfigError, envs, preset, sweep
from pgdiag.envs.native_physics import NativeStepper
from pgdiag.envs.mujoco_tasks import MUJOCO_TASKS, load_model

B = 6


def rollout(env, steps, seed=0):
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(seed), B))
    actions = jax.random.uniform(jax.random.PRNGKey(seed + 1), (steps, B, env.action_size), minval=-1, maxval=1)

    def body(s, a):
        n = jax.vmap(env.step)(s, a)
        return n, (n.obs, n.reward, n.terminated)

    return [np.asarray(x) for x in jax.jit(lambda s: jax.lax.scan(body, s, actions)[1])(states)]


@pytest.mark.parametrize("task, steps, tol, model", [("hopper", 50, 2e-4, "brax"), ("humanoid", 30, 2e-3, "brax"),
                                                     ("hopper", 50, 2e-4, "gym")])
def test_backends_agree_over_a_short_horizon(task, steps, tol, model):
    mjx_obs, mjx_rew, mjx_term = rollout(envs.make(task, "mjx", model=model), steps)
    nat_obs, nat_rew, nat_term = rollout(envs.make(task, "native", 2, model=model), steps)
    np.testing.assert_allclose(nat_obs, mjx_obs, atol=tol, rtol=0)
    np.testing.assert_allclose(nat_rew, mjx_rew, atol=tol, rtol=0)
    assert_terminations_match(task, nat_obs, nat_term, mjx_term, tol)
    assert np.abs(nat_obs[1:] - nat_obs[:-1]).max() > 100 * tol  # the bodies do move


def test_native_results_do_not_depend_on_the_thread_count():
    """Bitwise: the two programs differ only in the handler's thread-count attribute (the rest compiles to
    the same code), and each environment's MuJoCo calls are the same on any thread."""
    one = rollout(envs.make("hopper", "native", 1), 40, seed=3)
    two = rollout(envs.make("hopper", "native", 2), 40, seed=3)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


def test_native_stepper_matches_mj_step_in_float64():
    """The host stepper equals n_frames calls of mj_step from the same state, zero warm start."""
    import mujoco

    task = MUJOCO_TASKS["walker2d"]
    model = load_model(task)
    rng = np.random.default_rng(0)
    qpos = (model.qpos0 + rng.uniform(-5e-3, 5e-3, (3, model.nq))).astype(np.float32)
    qvel = rng.uniform(-0.5, 0.5, (3, model.nv)).astype(np.float32)
    ctrl = rng.uniform(-1, 1, (3, model.nu)).astype(np.float32)
    new_qpos, new_qvel = NativeStepper(model, task.n_frames, 2)(qpos, qvel, ctrl)
    data = mujoco.MjData(model)
    for i in range(3):
        mujoco.mj_resetData(model, data)
        data.qpos[:], data.qvel[:], data.ctrl[:] = qpos[i], qvel[i], ctrl[i]
        for _ in range(task.n_frames):
            mujoco.mj_step(model, data)
        np.testing.assert_allclose(new_qpos[i], data.qpos, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(new_qvel[i], data.qvel, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("task", ["hopper", "humanoid"])
def test_small_batches_stepped_directly_equal_rollout_bitwise(task, monkeypatch):
    """A batch of at most DIRECT_MAX goes through mj_step, not rollout (whose fixed cost per call is several
    environments' physics): the same float64 arithmetic, so 100 chained steps through contacts agree bit for bit
    at every batch size up to the limit."""
    from pgdiag.envs import native_physics

    t = MUJOCO_TASKS[task]
    model = load_model(t)
    stepper = NativeStepper(model, t.n_frames, 2)
    rng = np.random.default_rng(4)
    for batch in (1, 3, native_physics.DIRECT_MAX):
        q = (model.qpos0 + rng.uniform(-0.05, 0.05, (batch, model.nq))).astype(np.float32)
        v = rng.uniform(-0.3, 0.3, (batch, model.nv)).astype(np.float32)
        direct, rolled = (q, v), (q, v)
        for _ in range(100):
            c = rng.uniform(-1, 1, (batch, model.nu)).astype(np.float32)
            direct = stepper(*direct, c)
            monkeypatch.setattr(native_physics, "DIRECT_MAX", 0)     # the rollout path
            rolled = stepper(*rolled, c)
            monkeypatch.undo()
            for a, b in zip(direct, rolled):
                np.testing.assert_array_equal(a, b)


def test_humanoid_derived_fields_match_mj_forward():
    """The native step's derived fields — cinert, cvel, subtree_com from MuJoCo's kinematics alone (the
    handler's, or MJX's in JAX where the handler is not built) and qfrc_actuator a constant matrix times the
    control — equal what MuJoCo's full mj_forward computes at the same state and control."""
    import mujoco

    env = envs.make("humanoid", "native", 1)
    state = env.reset(jax.random.PRNGKey(2))
    action = jnp.linspace(-1.5, 1.5, env.action_size)
    nxt = jax.jit(env.step)(state, action)
    model = load_model(MUJOCO_TASKS["humanoid"])
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = np.asarray(nxt.physics["qpos"]), np.asarray(nxt.physics["qvel"])
    lo, hi = model.actuator_ctrlrange.T
    data.ctrl[:] = np.clip((np.asarray(action) + 1) * (hi - lo) / 2 + lo, lo, hi)
    mujoco.mj_forward(model, data)
    # float32 fields against MuJoCo's float64 at the same state: values of order 1–10, float32 rounding + margin
    for name in ("subtree_com", "cinert", "cvel", "qfrc_actuator"):
        np.testing.assert_allclose(np.asarray(nxt.physics[name]), getattr(data, name), rtol=1e-4, atol=1e-4,
                                   err_msg=name)


@pytest.mark.parametrize("task", ["hopper", "walker2d", "humanoid"])
def test_reset_distribution_matches_the_task_definition(task):
    """qpos = qpos0 + U(±noise), qvel = U(±noise): bounded, centred, with the uniform's std. Over 4,000 resets
    (the unit: one reset, independent draws) the mean's tolerance is 5.5 standard errors (noise/√3/√4000) and
    the std's 7 (a uniform's sample std has relative standard error √(0.8/4N)): with every coordinate of
    Humanoid's (47) tested, a false-failure rate below 1e-5 for the fixed seed."""
    env = envs.make(task, "native", 1)
    spec = MUJOCO_TASKS[task]
    model = load_model(spec)
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), 4000))
    dq = np.asarray(states.physics["qpos"]) - model.qpos0
    dv = np.asarray(states.physics["qvel"])
    for x in (dq, dv):
        assert np.abs(x).max() <= spec.reset_noise * (1 + 1e-5)
        np.testing.assert_allclose(x.mean(0), 0.0, atol=spec.reset_noise * 0.05)
        np.testing.assert_allclose(x.std(0), spec.reset_noise / np.sqrt(3), rtol=0.05)
    assert not np.asarray(states.terminated).any() and not np.asarray(states.truncated).any()


def test_backend_selection_and_errors():
    assert envs.resolve_physics("hopper", "auto")[0] == ("native" if jax.default_backend() == "cpu" else "mjx")
    assert envs.resolve_physics("hopper", "native", 0)[1] >= 1
    assert envs.resolve_physics("point_mass") == ("jax", 0)
    with pytest.raises(ValueError, match="unknown physics backend 'bullet'"):
        envs.make("hopper", "bullet")
    with pytest.raises(ValueError, match="task 'pendulum' is written in pure JAX"):
        envs.make("pendulum", "native")
    with pytest.raises(ConfigError, match="unknown physics backend 'bullet'"):
        preset("ppo", "hopper", physics="bullet")
    with pytest.raises(ConfigError, match="task 'point_mass' is written in pure JAX"):
        preset("ppo", "point_mass", physics="mjx")
    with pytest.raises(ConfigError, match="physics_threads must be an int >= 0"):
        preset("ppo", "hopper", physics_threads=-1)


def test_native_training_is_one_program_and_recorded(tmp_path):
    cfg = preset("ppo", "hopper", physics="native", physics_threads=2, num_envs=2, steps_per_env=64,
                 num_iterations=2, num_minibatches=4, ppo_epochs=2, value_epochs=2)
    run = sweep(cfg, {"value_clipping": [False, True]}, seeds=[0, 1], out=str(tmp_path))
    assert run.manifest["timings"]["compiles"] == 2
    assert run.manifest["physics"]["backend"] == "native" and run.manifest["physics"]["threads"] == 2
    assert run.manifest["physics"]["mujoco"]
    m = run.metrics
    assert (m.episodes > 0).all() and not m.diverged.any()
    assert np.isfinite(m[["mean_return", "mean_kl", "max_ratio", "value_loss"]].to_numpy()).all()
    again = sweep(cfg.replace(physics_threads=1), {"value_clipping": [False, True]}, seeds=[0, 1])
    # bitwise: the programs differ only in the handler's thread-count attribute
    np.testing.assert_array_equal(again.metrics.mean_return.to_numpy(), m.mean_return.to_numpy())


def test_solver_settings_are_the_tasks_own_or_braxs_fast_ones():
    import mujoco

    from pgdiag.envs.mujoco_tasks import brax_asset
    from pgdiag.run import provenance

    raw = mujoco.MjModel.from_xml_path(brax_asset("hopper.xml"))
    converged = load_model(MUJOCO_TASKS["hopper"], "converged")
    assert (converged.opt.iterations, converged.opt.ls_iterations) == (raw.opt.iterations, raw.opt.ls_iterations)
    for task in ("hopper", "walker2d", "humanoid"):
        fast = load_model(MUJOCO_TASKS[task], "fast")
        assert (fast.opt.iterations, fast.opt.ls_iterations) == (1, 4)
    humanoid = load_model(MUJOCO_TASKS["humanoid"])
    assert (humanoid.opt.iterations, humanoid.opt.ls_iterations) == (8, 10)
    info = provenance.physics_info(preset("ppo", "hopper", solver="fast", physics="native").static)
    assert info["solver"] == "fast" and info["solver_options"]["iterations"] == 1
    with pytest.raises(ConfigError, match="unknown solver setting 'quick'; choose one of: converged, fast"):
        preset("ppo", "hopper", solver="quick")
    with pytest.raises(ConfigError, match="has no MuJoCo solver"):
        preset("ppo", "point_mass", solver="fast")
