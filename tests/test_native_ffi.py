"""Native MuJoCo stepped by the XLA FFI handler (pgdiag/envs/native_step.cc) against the host-callback path.

Both paths run the same float64 MuJoCo calls in the same order for each environment (set the state, the control
and the warm start; mj_step × n_frames; mj_rnePostConstraint for Gym's models) and round to float32 once, so
their states agree bit for bit, through contacts, over long chained trajectories. What is computed outside
MuJoCo's calls — Gym's Humanoid's mass_center (a mass-weighted mean: a plain loop in C, a BLAS product in
NumPy), Brax Humanoid's actuator forces (an XLA product) and every reward (XLA arithmetic in two different
programs) — is compared to float32 rounding."""

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pgdiag import envs
from pgdiag.envs import native_ffi, native_physics
from pgdiag.envs.mujoco_models import mujoco_task
from pgdiag.envs.mujoco_tasks import load_model


def test_the_handler_builds_on_this_host():
    """The test environment has a C++ compiler, so native stepping runs through the handler here; a host
    without one falls back to callbacks (test below)."""
    assert native_ffi.unavailable() is None, native_ffi.unavailable()


def _env(task, model, threads, handler: bool, monkeypatch):
    """The task built with or without the handler (envs.make caches its tasks, so the maker is called)."""
    from pgdiag.envs.mujoco_tasks import make_mujoco_env

    if not handler:
        monkeypatch.setattr(native_physics, "_handler", lambda *a, **k: None)
    env = make_mujoco_env(mujoco_task(task, model), "native", threads)
    monkeypatch.undo()
    return env


def _trajectory(env, agents, batch, steps):
    """``steps`` chained steps of agents × batch environments (vmapped twice, as a sweep of agents is), every
    physics field, observation and reward kept."""
    keys = jax.random.split(jax.random.PRNGKey(0), agents * batch).reshape(agents, batch, 2)
    states = jax.vmap(jax.vmap(env.reset))(keys)
    actions = jax.random.uniform(jax.random.PRNGKey(1), (steps, agents, batch, env.action_size), minval=-1, maxval=1)

    def body(s, a):
        n = jax.vmap(jax.vmap(env.step))(s, a)
        return n, (n.physics, n.obs, n.reward, n.terminated)

    return jax.tree.map(np.asarray, jax.jit(lambda s: jax.lax.scan(body, s, actions)[1])(states))


#: physics fields computed outside MuJoCo's calls: Brax Humanoid's actuator forces (a constant matrix times the
#: control, an XLA product) and Gym Humanoid's mass centre (a mass-weighted mean, a loop in C and a BLAS product)
COMPUTED_OUTSIDE_MUJOCO = ("qfrc_actuator", "mass_center")


def _assert_outside_mujoco_close(physics, physics_cb, rest, rest_cb):
    """What two different compiled programs compute from the same MuJoCo fields: the fields computed outside
    MuJoCo, the observations that include them and the rewards (XLA may fuse and order that arithmetic
    differently in each) to float32 rounding — a few units in the last place of values of order 1-100 —,
    observations copied from MuJoCo's fields alone and terminations (comparisons of those) exactly."""
    (obs, reward, done), (obs_cb, reward_cb, done_cb) = rest, rest_cb
    outside = [name for name in COMPUTED_OUTSIDE_MUJOCO if name in physics]
    for name in outside:
        np.testing.assert_allclose(physics[name], physics_cb[name], rtol=1e-6, atol=1e-6, err_msg=name)
    if outside:
        np.testing.assert_allclose(obs, obs_cb, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(obs, obs_cb)
    # rewards of order 1-10; a velocity reward divides the mass centre's rounding by dt (0.015 s): ~2e-5
    np.testing.assert_allclose(reward, reward_cb, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(done, done_cb)


@pytest.mark.parametrize("task, model, agents, batch, threads, steps", [
    ("hopper", "brax", 1, 1, 1, 150),       # the papers' shape: one environment per agent
    ("hopper", "brax", 3, 4, 2, 100),       # several agents' environments in one call, over two threads
    ("walker2d", "gym", 2, 3, 2, 100),
    ("humanoid", "gym", 2, 2, 2, 60),       # Gym's fields read back from MuJoCo, warm start carried
    ("humanoid", "brax", 2, 2, 2, 40),      # the new state's kinematics recomputed by MuJoCo in the same call
])
def test_the_handler_steps_bitwise_as_the_callback(task, model, agents, batch, threads, steps, monkeypatch):
    ffi = _trajectory(_env(task, model, threads, True, monkeypatch), agents, batch, steps)
    callback = _trajectory(_env(task, model, threads, False, monkeypatch), agents, batch, steps)
    (ffi_physics, ffi_obs, ffi_reward, ffi_done), (cb_physics, cb_obs, cb_reward, cb_done) = ffi, callback
    assert set(ffi_physics) == set(cb_physics)
    for name in ffi_physics:   # what MuJoCo computes, bit for bit
        if name not in COMPUTED_OUTSIDE_MUJOCO:
            np.testing.assert_array_equal(ffi_physics[name], cb_physics[name], err_msg=name)
    _assert_outside_mujoco_close(ffi_physics, cb_physics, (ffi_obs, ffi_reward, ffi_done), (cb_obs, cb_reward, cb_done))


@pytest.mark.parametrize("task, model", [("hopper", "brax"), ("humanoid", "brax"), ("humanoid", "gym")])
def test_an_accelerators_callback_steps_through_the_handlers_c_stepper(task, model, monkeypatch):
    """A program compiled for an accelerator steps through a host callback; where the handler is built the
    callback calls its C stepper (outside XLA) rather than the Python steppers. Forced here on the CPU: the
    same states, fields and observations as the handler called from inside the program, bit for bit; the
    rewards, which XLA computes from them in two different programs, to float32 rounding."""
    from pgdiag.envs.mujoco_tasks import make_mujoco_env

    inside = _trajectory(_env(task, model, 2, True, monkeypatch), 2, 2, 30)
    monkeypatch.setattr(native_physics, "_on_cpu_by_handler", lambda handler_step, callback_step: callback_step)
    env = make_mujoco_env(mujoco_task(task, model), "native", 2)
    monkeypatch.undo()
    outside = _trajectory(env, 2, 2, 30)
    (physics, *rest), (physics_cb, *rest_cb) = inside, outside
    for name in physics:
        if name not in COMPUTED_OUTSIDE_MUJOCO:
            np.testing.assert_array_equal(physics[name], physics_cb[name], err_msg=name)
    _assert_outside_mujoco_close(physics, physics_cb, rest, rest_cb)


def test_the_handler_matches_mj_step_and_not_the_thread_count():
    """Outside XLA, the handler's step equals MuJoCo's own mj_step × n_frames from the same float64 state, and
    its result does not depend on how many threads share the batch."""
    import mujoco

    task = mujoco_task("walker2d", "brax")
    model = load_model(task)
    rng = np.random.default_rng(0)
    batch = 7
    qpos = (model.qpos0 + rng.uniform(-0.05, 0.05, (batch, model.nq))).astype(np.float32)
    qvel = rng.uniform(-0.5, 0.5, (batch, model.nv)).astype(np.float32)
    ctrl = rng.uniform(-1, 1, (batch, model.nu)).astype(np.float32)
    outs = [native_ffi.FfiStepper(model, task.n_frames, t).step_numpy(qpos, qvel, ctrl) for t in (1, 3, 8)]
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])
    for t in (1, 3):   # an empty batch is stepped as nothing, on a pool of threads too
        assert native_ffi.FfiStepper(model, task.n_frames, t).step_numpy(qpos[:0], qvel[:0], ctrl[:0]).shape[0] == 0
    data = mujoco.MjData(model)
    for i in range(batch):
        mujoco.mj_resetData(model, data)
        data.qpos[:], data.qvel[:], data.ctrl[:] = qpos[i], qvel[i], ctrl[i]
        for _ in range(task.n_frames):
            mujoco.mj_step(model, data)
        np.testing.assert_array_equal(outs[0][i, :model.nq], data.qpos.astype(np.float32))
        np.testing.assert_array_equal(outs[0][i, model.nq:], data.qvel.astype(np.float32))


@pytest.mark.parametrize("task, model, mode", [("walker2d", "brax", 0), ("humanoid", "gym", 1)])
def test_an_idle_environment_is_not_stepped_and_the_others_are_as_alone(task, model, mode):
    """A row whose control is NaN (the Env contract's idle environment) is not stepped: it comes back exactly as
    it went in (any step would move it: gravity acts on every state drawn here), its fields zero; every other row
    equals the same rows stepped without it (what the idle rows cost is benchmarks/bench_study_floor.py's)."""
    spec = mujoco_task(task, model)
    m = load_model(spec)
    fields = spec.host_fields if mode else ()
    stepper = native_ffi.FfiStepper(m, spec.n_frames, 2, fields, mode)
    rng = np.random.default_rng(2)
    batch = 64
    qpos = (m.qpos0 + rng.uniform(-0.05, 0.05, (batch, m.nq))).astype(np.float32)
    qvel = rng.uniform(-0.5, 0.5, (batch, m.nv)).astype(np.float32)
    ctrl = rng.uniform(-1, 1, (batch, m.nu)).astype(np.float32)
    warm = np.zeros((batch, m.nv), np.float32) if mode else None
    idle = np.arange(batch) % 16 != 3
    masked = np.where(idle[:, None], np.float32(np.nan), ctrl)
    out = stepper.step_numpy(qpos, qvel, masked, warm)
    np.testing.assert_array_equal(out[idle, :m.nq], qpos[idle])
    np.testing.assert_array_equal(out[idle, m.nq:m.nq + m.nv], qvel[idle])
    assert np.all(out[idle, m.nq + m.nv:] == 0)
    alone = stepper.step_numpy(qpos[~idle], qvel[~idle], ctrl[~idle], None if warm is None else warm[~idle])
    np.testing.assert_array_equal(out[~idle], alone)


@pytest.mark.parametrize("task, model, mode", [("walker2d", "brax", 0), ("humanoid", "gym", 1)])
def test_a_one_thread_stepper_steps_several_callers_at_once(task, model, mode):
    """A collection sharded over the host's CPU devices calls one one-thread stepper from every device's thread
    at once (pgdiag/run/split.py). Four threads (ctypes lets go of the GIL in the call) each step their
    quarter of a batch, over and over: every result equals the same quarter stepped alone, and MuJoCo's data
    is not shared between callers (a shared one would mix the quarters' states)."""
    from concurrent.futures import ThreadPoolExecutor

    spec = mujoco_task(task, model)
    m = load_model(spec)
    fields = spec.host_fields if mode else ()
    stepper = native_ffi.FfiStepper(m, spec.n_frames, 1, fields, mode)
    rng = np.random.default_rng(1)
    batch, callers, repeats = 16, 4, 25
    qpos = (m.qpos0 + rng.uniform(-0.05, 0.05, (batch, m.nq))).astype(np.float32)
    qvel = rng.uniform(-0.5, 0.5, (batch, m.nv)).astype(np.float32)
    ctrl = rng.uniform(-1, 1, (batch, m.nu)).astype(np.float32)
    warm = np.zeros((batch, m.nv), np.float32) if mode else None
    quarters = [slice(i * batch // callers, (i + 1) * batch // callers) for i in range(callers)]

    def step(part):
        return stepper.step_numpy(qpos[part], qvel[part], ctrl[part], None if warm is None else warm[part])

    alone = [step(q) for q in quarters]
    with ThreadPoolExecutor(callers) as pool:
        together = list(pool.map(lambda i: step(quarters[i % callers]), range(callers * repeats)))
    for i, out in enumerate(together):
        np.testing.assert_array_equal(out, alone[i % callers])


@pytest.mark.parametrize("model", ["brax", "gym"])
def test_humanoid_kinematics_are_mujocos_own_at_the_new_state_and_at_resets(model):
    """Brax's Humanoid reads subtree_com, cinert and cvel of the state a step lands in, Gym's of a reset state:
    the handler recomputes them with MuJoCo's kinematics, the functions mj_forward calls, so from the same
    float64 state they equal mj_forward's, rounded to float32, bit for bit. A step's state is compared at the
    handler's own float64 end state (its float32 qpos/qvel would move the kinematics by float32 rounding)."""
    import mujoco

    spec = mujoco_task("humanoid", model)
    m = load_model(spec)
    rng = np.random.default_rng(2)
    batch, kin = 5, ("subtree_com", "cinert", "cvel")
    qpos = (m.qpos0 + rng.uniform(-0.05, 0.05, (batch, m.nq))).astype(np.float32)
    qvel = rng.uniform(-0.5, 0.5, (batch, m.nv)).astype(np.float32)
    ctrl = rng.uniform(-0.4, 0.4, (batch, m.nu)).astype(np.float32)
    widths = {"subtree_com": 3, "cinert": 10, "cvel": 6}
    d = mujoco.MjData(m)
    for frames in (0, spec.n_frames):
        out = native_ffi.FfiStepper(m, frames, 2, kin).step_numpy(qpos, qvel, ctrl)
        for i in range(batch):
            mujoco.mj_resetData(m, d)
            d.qpos[:], d.qvel[:], d.ctrl[:] = qpos[i], qvel[i], ctrl[i]
            mujoco.mj_step(m, d, nstep=frames)          # the same float64 end state the handler reaches
            mujoco.mj_forward(m, d)
            at = m.nq + m.nv
            np.testing.assert_array_equal(out[i, :m.nq], d.qpos.astype(np.float32))
            for name in kin:
                size = m.nbody * widths[name]
                np.testing.assert_array_equal(out[i, at:at + size], getattr(d, name).astype(np.float32).ravel(),
                                              err_msg=f"{name} after {frames} frames")
                at += size


def test_a_stepper_refuses_fields_its_mode_cannot_read():
    spec = mujoco_task("humanoid", "brax")
    with pytest.raises(ValueError, match=r"cannot be read in mode 0; allowed: .*subtree_com"):
        native_ffi.FfiStepper(load_model(spec), spec.n_frames, 1, ("cfrc_ext",), 0)


def test_without_a_compiler_native_stepping_falls_back_to_callbacks(tmp_path):
    """A failed build is reported once with its reason, and the task still steps (through host callbacks) to
    the same states."""
    script = (
        "import numpy as np, jax\n"
        "from pgdiag.envs import native_ffi\n"
        "from pgdiag import envs\n"
        "print('reason:', native_ffi.unavailable())\n"
        "env = envs.make('hopper', 'native', 1)\n"
        "s = env.reset(jax.random.PRNGKey(0))\n"
        "s = jax.jit(env.step)(s, np.full(env.action_size, 0.3, np.float32))\n"
        "print('qpos:', ' '.join(repr(float(x)) for x in np.asarray(s.physics['qpos'])))\n"
        "from pgdiag import preset\n"
        "from pgdiag.run import provenance\n"
        "info = provenance.physics_info(preset('ppo', 'hopper', physics='native').static)\n"
        "print('manifest:', info['backend'], '|', info['step'], '|', info['step_fallback_reason'])\n")
    env = dict(os.environ, CXX="/bin/false", PGDIAG_BUILD_DIR=str(tmp_path), JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "reason: RuntimeError: false exited with code 1 building native_step.cc: (no output)" in done.stdout
    # said once, on stderr, with the reason; the manifest records the path taken and why
    assert done.stderr.count("native MuJoCo steps through host callbacks") == 1
    assert "(RuntimeError: false exited with code 1 building native_step.cc" in done.stderr
    assert "manifest: native | host callback | RuntimeError: false exited with code 1" in done.stdout
    env = envs.make("hopper", "native", 1)
    s = jax.jit(env.step)(env.reset(jax.random.PRNGKey(0)), jnp.full(env.action_size, 0.3, jnp.float32))
    expected = " ".join(repr(float(x)) for x in np.asarray(s.physics["qpos"]))
    assert f"qpos: {expected}" in done.stdout


def test_a_pool_steps_alike_whether_its_threads_spin_or_sleep():
    """A pooled stepper's threads spin a short while between batched steps and sleep when left longer: steps
    back to back (the workers caught spinning), steps after pauses far longer than the spin (woken from sleep),
    and steps from several callers at once (one pooled step at a time) all equal the one-thread stepper's; a pool
    freed while its threads spin, or after they went to sleep, stops."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    task = mujoco_task("hopper", "brax")
    m = load_model(task)
    rng = np.random.default_rng(3)
    batch = 14
    qpos = (m.qpos0 + rng.uniform(-0.05, 0.05, (batch, m.nq))).astype(np.float32)
    qvel = rng.uniform(-0.5, 0.5, (batch, m.nv)).astype(np.float32)
    ctrl = rng.uniform(-1, 1, (batch, m.nu)).astype(np.float32)
    want = native_ffi.FfiStepper(m, task.n_frames, 1).step_numpy(qpos, qvel, ctrl)
    pooled = native_ffi.FfiStepper(m, task.n_frames, 3)
    for pause in [0.0] * 50 + [0.01] * 5:
        np.testing.assert_array_equal(pooled.step_numpy(qpos, qvel, ctrl), want)
        time.sleep(pause)
    with ThreadPoolExecutor(4) as callers:
        for out in callers.map(lambda _: pooled.step_numpy(qpos, qvel, ctrl), range(40)):
            np.testing.assert_array_equal(out, want)
    for pause in (0.0, 0.01):   # freed just after a step (its threads spinning) and after a pause (asleep)
        doomed = native_ffi.FfiStepper(m, task.n_frames, 3)
        doomed.step_numpy(qpos, qvel, ctrl)
        time.sleep(pause)
        native_ffi.FfiStepper._alive.remove(doomed)
        doomed.lib.pgd_stepper_free(doomed.handle)
