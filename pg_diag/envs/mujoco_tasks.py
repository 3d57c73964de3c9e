"""Hopper, Walker2d and Humanoid: task definitions over MuJoCo state, stepped by MJX.

Each task is defined once (:class:`MujocoTask`): its MJCF model (Brax's
assets), reset distribution, observation, reward and termination, written
over the physics fields it declares (``qpos``, ``qvel`` and, for Humanoid,
``subtree_com``, ``cinert``, ``cvel``, ``qfrc_actuator``). A physics backend
advances the state ``n_frames`` substeps per environment step and returns
those fields consistent with the new ``qpos``/``qvel``.

Task definitions follow Brax's ``brax.envs`` versions of the Gym v2 tasks
(reward weights, healthy ranges, reset noise, frame skip), with positions
read from ``qpos`` directly: in Brax's Hopper and Walker2d models the root
slide joints sit at the torso, so the torso's x and z are ``qpos[0]`` and
``z0 + qpos[1]``. Episodes last at most 1000 steps.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from pg_diag.envs.base import Env, EnvState, time_limit

MAX_EPISODE_STEPS = 1000


def import_mjx():
    """``mujoco.mjx``, imported without its notice about the optional Warp backend."""
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        from mujoco import mjx
    return mjx


def brax_asset(filename: str) -> str:
    """Path of one of Brax's MJCF assets."""
    import importlib.util

    spec = importlib.util.find_spec("brax")
    if spec is None or spec.origin is None:
        raise RuntimeError("the MuJoCo tasks read their MJCF models from the 'brax' package; pip install brax")
    return os.path.join(os.path.dirname(spec.origin), "envs", "assets", filename)


@dataclasses.dataclass(frozen=True)
class MujocoTask:
    """A MuJoCo task, independent of the physics backend that steps it.

    ``observe(fields, model_info)`` and ``reward_terminated(before, after,
    ctrl, raw_action, model_info)`` read the physics ``fields`` dict
    (``qpos``, ``qvel`` and the names in ``derived_fields``).
    """

    name: str
    xml: str
    n_frames: int
    reset_noise: float
    obs_size: int
    derived_fields: tuple
    observe: Callable
    reward_terminated: Callable
    ctrl_from_action: Callable
    mjx_options: dict = dataclasses.field(default_factory=dict)
    description: str = ""


# --- Hopper / Walker2d (planar walkers) ------------------------------------

def _planar_observe(fields, info):
    # [torso z, joint angles (from rooty on), clipped velocities] — Brax's obs.
    qpos, qvel = fields["qpos"], fields["qvel"]
    z = info["torso_z0"] + qpos[1]
    return jnp.concatenate([z[None], qpos[2:], jnp.clip(qvel, -10.0, 10.0)])


def _planar_reward(before, after, ctrl, action, info, *, z_range, angle_range, state_range,
                   ctrl_cost_weight=1e-3, healthy_reward=1.0):
    x_velocity = (after["qpos"][0] - before["qpos"][0]) / info["dt"]
    z = info["torso_z0"] + after["qpos"][1]
    angle = after["qpos"][2]
    healthy = (z > z_range[0]) & (z < z_range[1]) & (angle > angle_range[0]) & (angle < angle_range[1])
    if state_range is not None:
        state_vec = jnp.concatenate([after["qpos"][2:], after["qvel"]])
        healthy &= jnp.all((state_vec > state_range[0]) & (state_vec < state_range[1]))
    reward = x_velocity + healthy_reward - ctrl_cost_weight * jnp.sum(jnp.square(action))
    return reward, jnp.logical_not(healthy)


HOPPER = MujocoTask(
    name="hopper", xml="hopper.xml", n_frames=4, reset_noise=5e-3, obs_size=11, derived_fields=(),
    observe=_planar_observe,
    reward_terminated=functools.partial(_planar_reward, z_range=(0.7, np.inf), angle_range=(-0.2, 0.2),
                                        state_range=(-100.0, 100.0)),
    ctrl_from_action=lambda a, info: a,
    description="Hopper (Brax MJCF, Gym-v2 reward): forward velocity + 1 alive − 1e-3|a|²; "
                "terminates when z ≤ 0.7, |torso angle| ≥ 0.2 or |state| ≥ 100.")

WALKER2D = MujocoTask(
    name="walker2d", xml="walker2d.xml", n_frames=4, reset_noise=5e-3, obs_size=17, derived_fields=(),
    observe=_planar_observe,
    reward_terminated=functools.partial(_planar_reward, z_range=(0.8, 2.0), angle_range=(-1.0, 1.0),
                                        state_range=None),
    ctrl_from_action=lambda a, info: a,
    description="Walker2d (Brax MJCF, Gym-v2 reward): forward velocity + 1 alive − 1e-3|a|²; "
                "terminates unless 0.8 < z < 2 and |torso angle| < 1.")


# --- Humanoid ---------------------------------------------------------------

def _humanoid_observe(fields, info):
    # Gym-v2 layout without the (always zero) external contact forces.
    return jnp.concatenate([
        fields["qpos"][2:], fields["qvel"],
        fields["cinert"][1:].ravel(), fields["cvel"][1:].ravel(),
        fields["qfrc_actuator"]])


def _humanoid_reward(before, after, ctrl, action, info):
    # Brax Humanoid: 1.25·(COM x-velocity) + 5 alive − 0.1|ctrl|²; the action in
    # [-1, 1] is rescaled to the actuators' ctrlrange (±0.4) first.
    velocity = (after["subtree_com"][1, 0] - before["subtree_com"][1, 0]) / info["dt"]
    z = after["qpos"][2]
    healthy = (z >= 1.0) & (z <= 2.0)
    reward = 1.25 * velocity + 5.0 - 0.1 * jnp.sum(jnp.square(ctrl))
    return reward, jnp.logical_not(healthy)


def _humanoid_ctrl(action, info):
    lo, hi = info["ctrl_lo"], info["ctrl_hi"]
    return (action + 1.0) * (hi - lo) * 0.5 + lo


HUMANOID = MujocoTask(
    name="humanoid", xml="humanoid.xml", n_frames=5, reset_noise=1e-2, obs_size=22 + 23 + 130 + 78 + 23,
    derived_fields=("subtree_com", "cinert", "cvel", "qfrc_actuator"),
    observe=_humanoid_observe, reward_terminated=_humanoid_reward, ctrl_from_action=_humanoid_ctrl,
    # Brax's MJX settings for this model (brax.envs.humanoid).
    mjx_options=dict(solver="NEWTON", iterations=1, ls_iterations=4, disable_eulerdamp=True),
    description="Humanoid (Brax MJCF, Brax reward): 1.25·COM x-velocity + 5 alive − 0.1|ctrl|²; "
                "terminates unless 1 ≤ torso z ≤ 2.")

MUJOCO_TASKS = {t.name: t for t in (HOPPER, WALKER2D, HUMANOID)}


# --- MJX physics backend ------------------------------------------------------

def load_model(task: MujocoTask, backend: str = "mjx"):
    """The task's MjModel with the backend's solver options applied."""
    import mujoco

    model = mujoco.MjModel.from_xml_path(brax_asset(task.xml))
    if backend == "mjx":
        opts = task.mjx_options
        if "solver" in opts:
            model.opt.solver = getattr(mujoco.mjtSolver, f"mjSOL_{opts['solver']}")
        if "iterations" in opts:
            model.opt.iterations = opts["iterations"]
        if "ls_iterations" in opts:
            model.opt.ls_iterations = opts["ls_iterations"]
        if opts.get("disable_eulerdamp"):
            model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_EULERDAMP
    return model


def _model_info(task: MujocoTask, model) -> dict:
    torso = model.body("torso").id
    ctrl_lo = np.asarray(model.actuator_ctrlrange[:, 0], np.float32)
    ctrl_hi = np.asarray(model.actuator_ctrlrange[:, 1], np.float32)
    return {"dt": float(model.opt.timestep * task.n_frames),
            "torso_z0": float(model.body_pos[torso, 2]),
            "ctrl_lo": ctrl_lo, "ctrl_hi": ctrl_hi}


def make_mjx_env(task: MujocoTask, max_episode_steps: int = MAX_EPISODE_STEPS) -> Env:
    """The task stepped by MJX (pure JAX; the backend for GPUs and TPUs).

    The carried physics state is ``qpos``, ``qvel``, the solver warm start and
    the task's derived fields; each step rebuilds an ``mjx.Data`` from them,
    runs ``n_frames`` substeps and, when the task needs derived fields,
    one ``mjx.forward`` so those fields match the new positions.
    """
    mjx = import_mjx()
    model = load_model(task, "mjx")
    mx = mjx.put_model(model)
    info = _model_info(task, model)
    qpos0 = jnp.asarray(model.qpos0, jnp.float32)
    nq, nv = model.nq, model.nv

    def field(d, name):
        # MJX moved some derived quantities (e.g. cinert) to the backend-specific part.
        impl = getattr(d, "_impl", None)
        return getattr(impl, name) if impl is not None and hasattr(impl, name) else getattr(d, name)

    def extract(d):
        fields = {"qpos": d.qpos, "qvel": d.qvel, "qacc_warmstart": d.qacc_warmstart}
        fields.update({name: field(d, name) for name in task.derived_fields})
        return fields

    def reset(key):
        k1, k2 = jax.random.split(key)
        noise = task.reset_noise
        qpos = qpos0 + jax.random.uniform(k1, (nq,), minval=-noise, maxval=noise)
        qvel = jax.random.uniform(k2, (nv,), minval=-noise, maxval=noise)
        d = mjx.make_data(mx).replace(qpos=qpos, qvel=qvel)
        if task.derived_fields:
            d = mjx.forward(mx, d)
        physics = extract(d)
        obs = task.observe(physics, info).astype(jnp.float32)
        return EnvState(physics=physics, obs=obs, reward=jnp.float32(0), terminated=jnp.bool_(False),
                        truncated=jnp.bool_(False), t=jnp.int32(0))

    def step(state, action):
        before = state.physics
        ctrl = task.ctrl_from_action(action, info)
        d = mjx.make_data(mx).replace(qpos=before["qpos"], qvel=before["qvel"],
                                      qacc_warmstart=before["qacc_warmstart"],
                                      ctrl=jnp.clip(ctrl, info["ctrl_lo"], info["ctrl_hi"]))
        d = jax.lax.fori_loop(0, task.n_frames, lambda _, dd: mjx.step(mx, dd), d)
        if task.derived_fields:
            d = mjx.forward(mx, d)
        after = extract(d)
        reward, terminated = task.reward_terminated(before, after, ctrl, action, info)
        t = state.t + 1
        return EnvState(physics=after, obs=task.observe(after, info).astype(jnp.float32),
                        reward=reward.astype(jnp.float32), terminated=terminated,
                        truncated=time_limit(t, terminated, max_episode_steps), t=t)

    return Env(name=task.name, obs_size=task.obs_size, action_size=model.nu,
               max_episode_steps=max_episode_steps, reset=reset, step=step,
               description=task.description + " Physics: MJX.")
