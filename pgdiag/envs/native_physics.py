"""Native MuJoCo: a whole batch of environments advanced on the host's cores with one call per batched step, from
inside the compiled program — the XLA FFI handler on a CPU ([`native_ffi`][pgdiag.envs.native_ffi]), a
``jax.pure_callback`` where the program runs on an accelerator or the handler is not built. Two ways of stepping an
environment:

* as MuJoCo's ``rollout`` steps a state ([`NativeStepper`][pgdiag.envs.native_physics.NativeStepper],
  [`native_advance`][pgdiag.envs.native_physics.native_advance]): qpos and qvel set, a zero solver warm start,
  ``n_frames`` × ``mj_step``; a task's derived kinematics (``subtree_com``, ``cinert``, ``cvel``: Brax's Humanoid)
  recomputed by MuJoCo from the new state in the same call, on the same threads (in JAX, one core evaluating them
  for every environment held Humanoid to ~0.6 of MuJoCo's own rollout on 16 cores: benchmarks/bench_floor.py);
* as Gym steps its tasks ([`NativeFieldStepper`][pgdiag.envs.native_physics.NativeFieldStepper],
  [`native_field_advance`][pgdiag.envs.native_physics.native_field_advance]): the solver's warm start carried,
  ``mj_rnePostConstraint`` after the steps, the task's ``host_fields`` read back from MuJoCo's data.

Every environment is integrated in float64 on data of its own and rounded to float32 once, so results do not
depend on the thread count, and the handler and the callback give bitwise the same states and fields
(tests/test_native_ffi.py)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pgdiag.envs.mujoco_physics import actuator_to_joint_forces

#: batches up to this size are stepped with ``mj_step`` directly: ``rollout``'s fixed cost per call (~0.2 ms)
#: is several times one environment's physics (the papers' shape is one environment per agent); the two
#: paths give bitwise the same states (tests/test_physics.py)
DIRECT_MAX = 8

#: the derived fields MuJoCo recomputes from a new state (mj_kinematics, mj_comPos, mj_comVel): values per body
#: (the handler's mode 0 reads the same, native_ffi.KINEMATIC_FIELDS)
KINEMATICS = {"subtree_com": 3, "cinert": 10, "cvel": 6}


class NativeStepper:
    """Advances a whole batch of environments with MuJoCo's C ``rollout``, on a
    persistent pool of ``threads`` threads (a batch of at most [`DIRECT_MAX`][pgdiag.envs.native_physics.DIRECT_MAX]
    with ``mj_step`` directly), and returns the new qpos, qvel and ``fields`` (of
    [`KINEMATICS`][pgdiag.envs.native_physics.KINEMATICS], recomputed from the new state; ``n_frames=0``: those of the
    given state). Called from compiled code through ``jax.pure_callback``: every
    environment of every agent in one call.

    Each environment is independent and integrated in float64, so results do
    not depend on the thread count; the state crosses back into the compiled
    program as float32."""

    def __init__(self, model, n_frames: int, threads: int, fields: tuple = ()):
        import threading

        import mujoco
        from mujoco import rollout

        self.model, self.n_frames, self.threads, self.fields = model, n_frames, threads, fields
        self.nq, self.nv = model.nq, model.nv
        self.nstate = mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_FULLPHYSICS)
        self._datas = [mujoco.MjData(model) for _ in range(threads)]
        self._rollout = rollout.Rollout(nthread=threads)
        self._lock = threading.Lock()

    def __call__(self, qpos, qvel, ctrl):
        qpos, qvel = np.asarray(qpos), np.asarray(qvel)  # host copies, no device ops
        ctrl = np.nan_to_num(np.asarray(ctrl), nan=0.0)  # an idle environment's NaN control (its result is unused)
        lead = qpos.shape[:-1]
        batch = int(np.prod(lead, dtype=np.int64))
        state = np.zeros((batch, self.nstate))
        state[:, 1:1 + self.nq] = qpos.reshape(batch, self.nq)          # layout: time, qpos, qvel, ...
        state[:, 1 + self.nq:1 + self.nq + self.nv] = qvel.reshape(batch, self.nv)
        if self.n_frames == 0:
            final = state
        elif batch <= DIRECT_MAX:
            final = self._direct(state, np.asarray(ctrl, np.float64).reshape(batch, -1))
        else:
            control = np.repeat(np.asarray(ctrl, np.float64).reshape(batch, 1, -1), self.n_frames, axis=1)
            with self._lock:
                out, _ = self._rollout.rollout(self.model, self._datas, state, control,
                                               initial_warmstart=np.zeros((batch, self.nv)))
            final = out[:, -1]
        return (final[:, 1:1 + self.nq].astype(np.float32).reshape(lead + (self.nq,)),
                final[:, 1 + self.nq:1 + self.nq + self.nv].astype(np.float32).reshape(lead + (self.nv,)),
                *self._kinematics(final, lead))

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

    def _kinematics(self, final, lead) -> tuple:
        """``fields`` of each final state, as MuJoCo's kinematics compute them (the handler's calls, in order)."""
        import mujoco

        if not self.fields:
            return ()
        m, spec = self.model, mujoco.mjtState.mjSTATE_FULLPHYSICS
        out = {name: np.empty((len(final), m.nbody, KINEMATICS[name])) for name in self.fields}
        with self._lock:
            d = self._datas[0]
            for i in range(len(final)):
                mujoco.mj_setState(m, d, final[i], spec)
                mujoco.mj_kinematics(m, d)
                mujoco.mj_comPos(m, d)
                mujoco.mj_comVel(m, d)
                for name in self.fields:
                    out[name][i] = getattr(d, name)
        return tuple(out[name].astype(np.float32).reshape(lead + out[name].shape[1:]) for name in self.fields)


def _on_cpu_by_handler(handler_step, callback_step):
    """``handler_step`` where the program runs on a CPU and the FFI handler is built, else ``callback_step``
    (the handler is registered for CPUs only; an accelerator's program keeps the host callback)."""
    if handler_step is None:
        return callback_step
    return lambda *args: jax.lax.platform_dependent(*args, cpu=handler_step, default=callback_step)


def _handler(model, n_frames: int, threads: int, fields: tuple = (), mode: int = 0):
    """A stepper of the FFI handler ([`native_ffi`][pgdiag.envs.native_ffi]), or ``None`` where it is unavailable."""
    from pgdiag.envs import native_ffi

    return None if native_ffi.library() is None else native_ffi.FfiStepper(model, n_frames, threads, fields, mode)


def _unpack(packed, names: tuple, shapes: dict) -> tuple:
    """The handler's packed output [..., out_size] (NumPy or JAX) cut into one array per name."""
    lead, at, out = packed.shape[:-1], 0, []
    for name in names:
        size = int(np.prod(shapes[name]))
        out.append(packed[..., at:at + size].reshape(lead + shapes[name]))
        at += size
    return tuple(out)


def _stepping(host, handler, names: tuple, shapes: dict, order=lambda *arrays: arrays):
    """(arrays...) -> one array per name: the handler inside a CPU program; a host callback elsewhere, which
    steps through the handler's C stepper (outside XLA) where it is built, else through ``host`` (Python).
    ``order`` puts the arrays in the handler's order of arguments."""
    if handler is not None:
        host = lambda *arrays: _unpack(handler.step_numpy(*order(*arrays)), names, shapes)  # noqa: E731

    def by_callback(*arrays):
        lead = arrays[0].shape[:-1]
        out = [jax.ShapeDtypeStruct(lead + shapes[name], jnp.float32) for name in names]
        return tuple(jax.pure_callback(host, out, *arrays, vmap_method="broadcast_all"))

    def by_handler(*arrays):
        return _unpack(handler.call(*order(*arrays)), names, shapes)

    return _on_cpu_by_handler(handler and by_handler, by_callback)


def native_advance(task, model, threads: int, n_frames: int | None = None):
    """(qpos, qvel, ctrl) -> {qpos, qvel and the task's derived fields} after ``n_frames`` (default: the task's)
    native MuJoCo steps, one call per batch from inside the compiled program: the kinematics read from MuJoCo in the
    same call, the actuator forces A·ctrl in JAX (a constant matrix,
    [`actuator_to_joint_forces`][pgdiag.envs.mujoco_physics.actuator_to_joint_forces]). ``n_frames=0`` gives a
    state's own fields (a reset)."""
    frames = task.n_frames if n_frames is None else n_frames
    unknown = [f for f in task.derived_fields if f not in KINEMATICS and f != "qfrc_actuator"]
    if unknown:
        raise ValueError(f"task {task.name!r}: native MuJoCo cannot derive {unknown}; derived fields are "
                         f"{', '.join([*KINEMATICS, 'qfrc_actuator'])}")
    kinematics = tuple(f for f in task.derived_fields if f in KINEMATICS)
    act = jnp.asarray(actuator_to_joint_forces(model)) if "qfrc_actuator" in task.derived_fields else None
    stepper = NativeStepper(model, frames, threads, kinematics)
    handler = _handler(model, frames, threads, kinematics)
    names = ("qpos", "qvel") + kinematics
    shapes = {"qpos": (model.nq,), "qvel": (model.nv,), **{f: (model.nbody, KINEMATICS[f]) for f in kinematics}}
    step = _stepping(stepper, handler, names, shapes)

    def advance(qpos, qvel, ctrl):
        out = dict(zip(names, step(qpos, qvel, ctrl)))
        if act is not None:
            out["qfrc_actuator"] = act @ ctrl
        return out

    return advance


class NativeFieldStepper:
    """Advances a batch environment by environment with ``mj_step`` and ``mj_rnePostConstraint``, as Gym and
    Gymnasium step their tasks, and returns, besides the new state, the task's ``host_fields`` as MuJoCo leaves them
    in its data ([`gym_tasks`][pgdiag.envs.gym_tasks]). The solver's warm start comes in and goes out with the
    state. The batch is cut into one contiguous share per thread (MuJoCo releases the GIL while it steps); each
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
        # an idle environment's NaN control stepped as zero (its result is unused)
        arrays = [np.nan_to_num(np.asarray(a, np.float64), nan=0.0) for a in (qpos, qvel, warmstart, ctrl)]
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
    step = _stepping(stepper, handler, names, shapes, order=lambda qpos, qvel, warm, ctrl: (qpos, qvel, ctrl, warm))

    def advance(before, ctrl):
        return dict(zip(names, step(before["qpos"], before["qvel"], before["qacc_warmstart"], ctrl)))

    return advance


def native_derived_fields(task, model, threads: int):
    """(qpos, qvel, ctrl) -> the task's derived fields at that state, read from MuJoCo (a reset state's)."""
    if not task.derived_fields:
        return lambda qpos, qvel, ctrl: {}
    at = native_advance(task, model, threads, n_frames=0)
    return lambda qpos, qvel, ctrl: {k: v for k, v in at(qpos, qvel, ctrl).items() if k not in ("qpos", "qvel")}
