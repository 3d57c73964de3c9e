"""The compiled physics backends of the MuJoCo tasks: ``advance(qpos, qvel, ctrl) -> (qpos, qvel)`` after a task's
``n_frames`` substeps with MJX or MuJoCo Warp (MJX's Warp implementation), inside the compiled program, and the
derived fields (kinematics, inertias, actuator forces) of the new state in JAX. Native MuJoCo, which steps the batch
on the host's cores and reads the derived fields from MuJoCo itself, is
[`native_physics`][pgdiag.envs.native_physics]; the refusals of a backend that cannot run a task are here."""

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
    kernels: slow, for checking). Zero warm start, as the other backends; float32, as MJX.

    Warp keeps one contact buffer for all the worlds (environments) a step is vmapped over, sized when its data is
    made (``naconmax``, by default one world's worth): a batch that outgrows it loses contacts, with nothing but a
    printed warning. So the step counts its worlds: each vmap level around it, however deep (agents × environments,
    streams × ...), multiplies the worlds its data is made for
    ([`_world_counting`][pgdiag.envs.mujoco_physics._world_counting]), and the buffers hold a world's default share
    for every one of them."""
    import warp

    warp.config.quiet = True  # no banner, no line per kernel loaded (older Warp; newer: the log level)
    if hasattr(warp, "LOG_WARNING"):
        warp.config.log_level = max(warp.config.log_level, warp.LOG_WARNING)
    mjx = import_mjx()
    device = jax.devices()[0]
    try:
        mx = mjx.put_model(model, impl="warp", device=device)
    except NotImplementedError as e:  # what MuJoCo Warp lacks, named before anything compiles
        raise ValueError(f"MuJoCo Warp cannot run {task.name!r} on the {task.model!r} model: {e}; use "
                         f"physics='native' or 'mjx'") from None
    mx = _quiet_solver_caps(mx)
    one_world = mjx.make_data(model, impl="warp", device=device)._impl
    contacts, ccd_contacts = int(one_world.naconmax), int(one_world.naccdmax)

    def for_worlds(worlds: int):
        data = mjx.make_data(model, impl="warp", device=device, naconmax=worlds * contacts,
                             naccdmax=worlds * ccd_contacts)

        def advance(qpos, qvel, ctrl):
            d = data.replace(qpos=qpos, qvel=qvel, ctrl=ctrl)
            d = jax.lax.fori_loop(0, task.n_frames, lambda _, dd: mjx.step(mx, dd), d)
            return d.qpos, d.qvel

        return advance

    return _world_counting(for_worlds)


def _quiet_solver_caps(mx):
    """The Warp model without its printed warning when a solver stops at its iteration cap (native MuJoCo
    and MJX stop there silently; a float32 Newton step rarely meets a 1e-8 tolerance first, so it would print
    at nearly every step). Buffer overflows, which lose contacts or constraints, still warn."""
    try:
        from mujoco.mjx.third_party.mujoco_warp._src.types import OverflowType
    except ImportError:  # another layout of MJX's Warp implementation: leave its warnings as they are
        return mx
    caps = int(OverflowType.ITERATIONS) | int(OverflowType.LS_ITERATIONS)
    opt = mx.opt._impl
    return mx.replace(opt=mx.opt.replace(_impl=opt.replace(warn_overflow=int(opt.warn_overflow) & ~caps)))


def _world_counting(for_worlds):
    """``step(*args)`` for one world, built by ``for_worlds(n)`` for the number ``n`` of worlds it is vmapped
    over in all. Through ``jax.custom_batching.custom_vmap``: the step is ``n`` worlds stacked on a leading
    axis, and a vmap around it folds its axis into that one, calling the step for axis × n worlds."""
    import functools

    @functools.lru_cache(maxsize=None)
    def stacked(worlds: int):
        @jax.custom_batching.custom_vmap
        def step(*args):
            return jax.vmap(for_worlds(worlds))(*args)

        @step.def_vmap
        def fold(axis_size, in_batched, *args):
            args = [a if batched else jnp.broadcast_to(a, (axis_size,) + a.shape) for a, batched in
                    zip(args, in_batched)]
            out = stacked(axis_size * worlds)(*[a.reshape((axis_size * worlds,) + a.shape[2:]) for a in args])
            out = jax.tree.map(lambda o: o.reshape((axis_size, worlds) + o.shape[1:]), out)
            return out, jax.tree.map(lambda _: True, out)

        return step

    @jax.custom_jvp
    def one(*args):
        return jax.tree.map(lambda o: o[0], stacked(1)(*[jnp.asarray(a)[None] for a in args]))

    @one.defjvp
    def _no_derivative(primals, tangents):
        # Warp's step is a foreign call with no derivative; said here, before custom_vmap's fold would recurse
        raise TypeError("a MuJoCo Warp step (physics='warp') is not differentiable")

    return one


def compiled_advance(task, model, physics: str, derived):
    """(physics dict, ctrl) -> the next physics dict: ``n_frames`` MJX or MuJoCo Warp steps, the new state's derived
    fields from ``derived`` ([`make_derived_fields`][pgdiag.envs.mujoco_physics.make_derived_fields]), all inside
    the compiled program."""
    step = mjx_advance(task, model) if physics == "mjx" else warp_advance(task, model)

    def advance(before, ctrl):
        qpos, qvel = step(before["qpos"], before["qvel"], ctrl)
        return {"qpos": qpos, "qvel": qvel, **derived(qpos, qvel, ctrl)}

    return advance


def warp_unavailable() -> str:
    """Why ``physics='warp'`` cannot run here ("" when it can): the ``warp-lang`` package MJX's Warp
    implementation needs."""
    import importlib.util

    if importlib.util.find_spec("warp") is None:
        return ("physics='warp' needs the warp-lang package, which is not installed: pip install "
                "'pgdiag-rl[warp]' (mujoco-mjx[warp])")
    return ""


def refuse_backend(physics: str, task: str, model: str, missing: str) -> None:
    """Refuse, before anything compiles, a backend that cannot run the task on this model (``missing``: what
    MJX, and so MuJoCo Warp, lacks for it) or is not installed."""
    from pgdiag.config.setting import ConfigError   # a ValueError the command line prints as one line

    if physics in ("mjx", "warp") and missing:
        which = "MJX" if physics == "mjx" else "MuJoCo Warp"
        raise ConfigError(f"{which} cannot run {task!r} on the {model!r} model: it lacks {missing}; physics must "
                          f"be 'native' or 'auto' (which runs it natively)")
    from pgdiag.envs import hosts

    if physics == "warp" and warp_unavailable() and not hosts.declared():   # a plan for another host: installed there
        raise ConfigError(warp_unavailable())
