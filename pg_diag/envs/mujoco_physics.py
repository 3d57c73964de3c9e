"""The physics backends of the MuJoCo tasks, behind one signature: ``advance(qpos, qvel, ctrl) -> (qpos,
qvel)`` after a task's ``n_frames`` substeps, and the derived fields (kinematics, inertias, actuator forces)
both recompute in the same JAX code. MJX (and MuJoCo Warp, MJX's Warp implementation) advances inside the
compiled program; native MuJoCo advances the
whole batch on the host's cores with one call per step: an XLA FFI handler on a CPU (:mod:`.native_ffi`), a
``jax.pure_callback`` where the handler is not built or the program runs on an accelerator."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

def import_mjx():
    """``mujoco.mjx``, imported without its notice about the optional Warp backend."""
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        from mujoco import mjx
    return mjx


def actuator_to_joint_forces(model) -> np.ndarray:
    """The constant matrix A [nv, nu] with qfrc_actuator = A·ctrl, for models whose
    actuators are plain motors on joints (force = gear·ctrl, fixed moment arm).
    Built column by column with MuJoCo itself; other actuator types are refused."""
    import mujoco

    ok = (np.all(model.actuator_trntype == mujoco.mjtTrn.mjTRN_JOINT)
          and np.all(model.actuator_dyntype == mujoco.mjtDyn.mjDYN_NONE)
          and np.all(model.actuator_gaintype == mujoco.mjtGain.mjGAIN_FIXED)
          and np.all(model.actuator_biastype == mujoco.mjtBias.mjBIAS_NONE))
    if not ok:
        raise ValueError("qfrc_actuator as a derived field needs motor actuators on joints")
    data = mujoco.MjData(model)
    cols = []
    for i in range(model.nu):
        # a control inside the range (MuJoCo clamps to ctrlrange), divided out again
        c = 0.5 * model.actuator_ctrlrange[i, 1] if model.actuator_ctrllimited[i] else 1.0
        data.ctrl[:] = 0.0
        data.ctrl[i] = c
        mujoco.mj_forward(model, data)
        cols.append(np.array(data.qfrc_actuator) / c)
    return np.stack(cols, axis=1).astype(np.float32)


def kinematics_model(model):
    """``model`` as MJX accepts it for kinematics alone: a PGS solver (which MJX lacks, and kinematics never
    use) replaced by Newton in a copy."""
    import copy

    import mujoco

    if model.opt.solver != mujoco.mjtSolver.mjSOL_PGS:
        return model
    model = copy.copy(model)
    model.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    return model


def make_derived_fields(task, model):
    """(qpos, qvel, ctrl) -> the task's derived fields, in JAX, shared by both
    backends: forward kinematics, composite inertias and COM velocities
    (MJX's kinematics, com_pos and com_vel, no contact or constraint work) and
    the actuator forces of the clipped control."""
    if not task.derived_fields:
        return lambda qpos, qvel, ctrl: {}
    mjx = import_mjx()
    mx = mjx.put_model(kinematics_model(model))
    act = jnp.asarray(actuator_to_joint_forces(model)) if "qfrc_actuator" in task.derived_fields else None

    def impl_field(d, name):
        # MJX keeps some derived quantities (e.g. cinert) in its backend-specific part.
        impl = getattr(d, "_impl", None)
        return getattr(impl, name) if impl is not None and hasattr(impl, name) else getattr(d, name)

    def derived(qpos, qvel, ctrl):
        d = mjx.make_data(mx).replace(qpos=qpos, qvel=qvel)
        d = mjx.com_vel(mx, mjx.com_pos(mx, mjx.kinematics(mx, d)))
        fields = {}
        for name in task.derived_fields:
            fields[name] = act @ ctrl if name == "qfrc_actuator" else impl_field(d, name)
        return fields

    return derived


def mjx_advance(task, model):
    """(qpos, qvel, ctrl) -> (qpos, qvel) after ``n_frames`` MJX steps (pure JAX)."""
    mjx = import_mjx()
    mx = mjx.put_model(model)

    def advance(qpos, qvel, ctrl):
        d = mjx.make_data(mx).replace(qpos=qpos, qvel=qvel, ctrl=ctrl)  # solver warm start: zero
        d = jax.lax.fori_loop(0, task.n_frames, lambda _, dd: mjx.step(mx, dd), d)
        return d.qpos, d.qvel

    return advance


def warp_advance(task, model):
    """(qpos, qvel, ctrl) -> (qpos, qvel) after ``n_frames`` MuJoCo Warp steps: MJX's Warp implementation,
    whose kernels the compiled program calls on the default device (a GPU's, or the CPU's LLVM-compiled
    kernels: slow, for checking). Zero warm start, as the other backends; float32, as MJX."""
    import warp

    warp.config.quiet = True  # no banner, no line per kernel loaded
    mjx = import_mjx()
    device = jax.devices()[0]
    try:
        mx = mjx.put_model(model, impl="warp", device=device)
    except NotImplementedError as e:  # what MuJoCo Warp lacks, named before anything compiles
        raise ValueError(f"MuJoCo Warp cannot run {task.name!r} on the {task.model!r} model: {e}; use "
                         f"physics='native' or 'mjx'") from None

    def advance(qpos, qvel, ctrl):
        d = mjx.make_data(model, impl="warp", device=device).replace(qpos=qpos, qvel=qvel, ctrl=ctrl)
        d = jax.lax.fori_loop(0, task.n_frames, lambda _, dd: mjx.step(mx, dd), d)
        return d.qpos, d.qvel

    return advance


def warp_unavailable() -> str:
    """Why ``physics='warp'`` cannot run here ("" when it can): the ``warp-lang`` package MJX's Warp
    implementation needs."""
    import importlib.util

    if importlib.util.find_spec("warp") is None:
        return ("physics='warp' needs the warp-lang package, which is not installed: pip install "
                "'pg_diag[warp]' (mujoco-mjx[warp])")
    return ""


def refuse_backend(physics: str, task: str, model: str, missing: str) -> None:
    """Refuse, before anything compiles, a backend that cannot run the task on this model (``missing``: what
    MJX, and so MuJoCo Warp, lacks for it) or is not installed."""
    if physics in ("mjx", "warp") and missing:
        which = "MJX" if physics == "mjx" else "MuJoCo Warp"
        raise ValueError(f"{which} cannot run {task!r} on the {model!r} model: it lacks {missing}; physics must "
                         f"be 'native' or 'auto' (which runs it natively)")
    if physics == "warp" and warp_unavailable():
        raise ValueError(warp_unavailable())


#: batches up to this size are stepped with ``mj_step`` directly: ``rollout``'s fixed cost per call (~0.2 ms)
#: is several times one environment's physics (the papers' shape is one environment per agent); the two
#: paths give bitwise the same states (tests/test_physics.py)
DIRECT_MAX = 8


class NativeStepper:
    """Advances a whole batch of environments with MuJoCo's C ``rollout``, on a
    persistent pool of ``threads`` threads (a batch of at most :data:`DIRECT_MAX`
    with ``mj_step`` directly). Called from compiled code through
    ``jax.pure_callback``: every environment of every agent in one call.

    Each environment is independent and integrated in float64, so results do
    not depend on the thread count; the state crosses back into the compiled
    program as float32."""

    def __init__(self, model, n_frames: int, threads: int):
        import threading

        import mujoco
        from mujoco import rollout

        self.model, self.n_frames, self.threads = model, n_frames, threads
        self.nq, self.nv = model.nq, model.nv
        self.nstate = mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_FULLPHYSICS)
        self._datas = [mujoco.MjData(model) for _ in range(threads)]
        self._rollout = rollout.Rollout(nthread=threads)
        self._lock = threading.Lock()

    def __call__(self, qpos, qvel, ctrl):
        qpos, qvel, ctrl = np.asarray(qpos), np.asarray(qvel), np.asarray(ctrl)  # host copies, no device ops
        lead = qpos.shape[:-1]
        batch = int(np.prod(lead, dtype=np.int64))
        state = np.zeros((batch, self.nstate))
        state[:, 1:1 + self.nq] = qpos.reshape(batch, self.nq)          # layout: time, qpos, qvel, ...
        state[:, 1 + self.nq:1 + self.nq + self.nv] = qvel.reshape(batch, self.nv)
        if batch <= DIRECT_MAX:
            final = self._direct(state, np.asarray(ctrl, np.float64).reshape(batch, -1))
        else:
            control = np.repeat(np.asarray(ctrl, np.float64).reshape(batch, 1, -1), self.n_frames, axis=1)
            with self._lock:
                out, _ = self._rollout.rollout(self.model, self._datas, state, control,
                                               initial_warmstart=np.zeros((batch, self.nv)))
            final = out[:, -1]
        return (final[:, 1:1 + self.nq].astype(np.float32).reshape(lead + (self.nq,)),
                final[:, 1 + self.nq:1 + self.nq + self.nv].astype(np.float32).reshape(lead + (self.nv,)))


    def _direct(self, state, ctrl):
        """What ``rollout`` computes, environment by environment on one thread: the full physics state set,
        a zero warm start, the control held for ``n_frames`` steps."""
        import mujoco

        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        final = np.empty_like(state)
        with self._lock:
            d = self._datas[0]
            for i in range(state.shape[0]):
                mujoco.mj_setState(self.model, d, state[i], spec)
                d.ctrl[:] = ctrl[i]
                d.qacc_warmstart[:] = 0.0
                mujoco.mj_step(self.model, d, nstep=self.n_frames)
                mujoco.mj_getState(self.model, d, final[i], spec)
        return final


def _on_cpu_by_handler(handler_step, callback_step):
    """``handler_step`` where the program runs on a CPU and the FFI handler is built, else ``callback_step``
    (the handler is registered for CPUs only; an accelerator's program keeps the host callback)."""
    if handler_step is None:
        return callback_step
    return lambda *args: jax.lax.platform_dependent(*args, cpu=handler_step, default=callback_step)


def _handler(model, n_frames: int, threads: int, fields: tuple = (), mode: int = 0):
    """A stepper of the FFI handler (:mod:`.native_ffi`), or ``None`` where it is unavailable."""
    from pg_diag.envs import native_ffi

    return None if native_ffi.library() is None else native_ffi.FfiStepper(model, n_frames, threads, fields, mode)


def native_advance(task, model, threads: int):
    """(qpos, qvel, ctrl) -> (qpos, qvel) after ``n_frames`` native MuJoCo steps, one call per batch from
    inside the compiled program: the FFI handler on a CPU, a host callback otherwise (bitwise the same)."""
    stepper = NativeStepper(model, task.n_frames, threads)
    handler = _handler(model, task.n_frames, threads)
    nq, nv = model.nq, model.nv

    def by_callback(qpos, qvel, ctrl):
        shapes = (jax.ShapeDtypeStruct(qpos.shape, jnp.float32), jax.ShapeDtypeStruct(qvel.shape, jnp.float32))
        return jax.pure_callback(stepper, shapes, qpos, qvel, ctrl, vmap_method="broadcast_all")

    def by_handler(qpos, qvel, ctrl):
        out = handler.call(qpos, qvel, ctrl)
        return out[..., :nq], out[..., nq:nq + nv]

    return _on_cpu_by_handler(handler and by_handler, by_callback)


class NativeFieldStepper:
    """Advances a batch environment by environment with ``mj_step`` and ``mj_rnePostConstraint``, as Gym and
    Gymnasium step their tasks, and returns, besides the new state, the task's ``host_fields`` as MuJoCo leaves
    them in its data (:mod:`.gym_tasks`). The solver's warm start comes in and goes out with the state. The
    batch is cut into one contiguous share per thread (MuJoCo releases the GIL while it steps); each
    environment's result does not depend on the thread count."""

    def __init__(self, model, n_frames: int, fields: tuple, threads: int = 1):
        import threading
        from concurrent.futures import ThreadPoolExecutor

        import mujoco

        self.model, self.n_frames, self.fields = model, n_frames, fields
        self.threads = max(1, threads)
        self._datas = [mujoco.MjData(model) for _ in range(self.threads)]
        self._pool = ThreadPoolExecutor(self.threads) if self.threads > 1 else None
        self._lock = threading.Lock()
        body_mass = np.asarray(model.body_mass)
        self._mass = body_mass / body_mass.sum()
        self.shapes = {"qacc_warmstart": (model.nv,), "mass_center": (3,), "cinert": (model.nbody, 10),
                       "cvel": (model.nbody, 6), "qfrc_actuator": (model.nv,), "cfrc_ext": (model.nbody, 6)}

    def _read(self, d, name):
        if name == "mass_center":  # Gym's mass_center: Σ m·xipos / Σ m over the bodies
            return self._mass @ d.xipos
        return getattr(d, name)

    def _run(self, d, inputs, outputs, lo, hi):
        import mujoco

        qpos, qvel, warm, ctrl = inputs
        for i in range(lo, hi):
            d.qpos[:], d.qvel[:], d.qacc_warmstart[:], d.ctrl[:] = qpos[i], qvel[i], warm[i], ctrl[i]
            mujoco.mj_step(self.model, d, nstep=self.n_frames)
            mujoco.mj_rnePostConstraint(self.model, d)
            outputs["qpos"][i], outputs["qvel"][i] = d.qpos, d.qvel
            for name in self.fields:
                outputs[name][i] = self._read(d, name)

    def __call__(self, qpos, qvel, warmstart, ctrl):
        arrays = [np.asarray(a, np.float64) for a in (qpos, qvel, warmstart, ctrl)]
        lead = arrays[0].shape[:-1]
        batch = int(np.prod(lead, dtype=np.int64))
        inputs = [a.reshape(batch, a.shape[-1]) for a in arrays]
        shapes = {"qpos": (self.model.nq,), "qvel": (self.model.nv,), **self.shapes}
        names = ("qpos", "qvel") + self.fields
        outputs = {name: np.zeros((batch,) + shapes[name]) for name in names}
        cuts = np.linspace(0, batch, self.threads + 1).astype(int)
        with self._lock:
            if self._pool is None or batch < 2:
                self._run(self._datas[0], inputs, outputs, 0, batch)
            else:
                jobs = [self._pool.submit(self._run, d, inputs, outputs, lo, hi)
                        for d, lo, hi in zip(self._datas, cuts[:-1], cuts[1:]) if hi > lo]
                for job in jobs:
                    job.result()
        return tuple(outputs[name].astype(np.float32).reshape(lead + shapes[name]) for name in names)


def native_field_advance(task, model, threads: int = 1):
    """(physics dict, ctrl) -> the new physics dict (``qpos``, ``qvel`` and the task's ``host_fields``) after
    ``n_frames`` native MuJoCo steps, one call per batched step: the FFI handler on a CPU, a host callback
    otherwise."""
    stepper = NativeFieldStepper(model, task.n_frames, task.host_fields, threads)
    handler = _handler(model, task.n_frames, threads, task.host_fields, mode=1)
    names = ("qpos", "qvel") + task.host_fields
    shapes = {"qpos": (model.nq,), "qvel": (model.nv,), **stepper.shapes}

    def by_callback(qpos, qvel, warm, ctrl):
        lead = qpos.shape[:-1]
        out = [jax.ShapeDtypeStruct(lead + shapes[name], jnp.float32) for name in names]
        return tuple(jax.pure_callback(stepper, out, qpos, qvel, warm, ctrl, vmap_method="broadcast_all"))

    def by_handler(qpos, qvel, warm, ctrl):
        packed, lead, at, out = handler.call(qpos, qvel, ctrl, warm), qpos.shape[:-1], 0, []
        for name in names:
            size = int(np.prod(shapes[name]))
            out.append(packed[..., at:at + size].reshape(lead + shapes[name]))
            at += size
        return tuple(out)

    step = _on_cpu_by_handler(handler and by_handler, by_callback)

    def advance(before, ctrl):
        return dict(zip(names, step(before["qpos"], before["qvel"], before["qacc_warmstart"], ctrl)))

    return advance
