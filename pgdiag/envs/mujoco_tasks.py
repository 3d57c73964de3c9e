"""Hopper, Walker2d and Humanoid: task definitions over MuJoCo state, stepped by MJX or MuJoCo Warp
([`mujoco_physics`][pgdiag.envs.mujoco_physics]) or native MuJoCo
([`native_physics`][pgdiag.envs.native_physics]), on Brax's models (here) or Gym's
([`gym_tasks`][pgdiag.envs.gym_tasks]).

Each task is defined once ([`MujocoTask`][pgdiag.envs.mujoco_tasks.MujocoTask]): its MJCF model (Brax's
assets), reset distribution, observation, reward and termination, written
over the physics fields it declares (``qpos``, ``qvel`` and, for Humanoid,
``subtree_com``, ``cinert``, ``cvel``, ``qfrc_actuator``). A physics backend
advances the state ``n_frames`` substeps per environment step and returns
those fields consistent with the new ``qpos``/``qvel``.

Task definitions follow Brax's ``brax.envs`` versions of the Gym v2 tasks
(reward weights, healthy ranges, reset noise, frame skip), with positions
read from ``qpos`` directly: the torso's x is ``qpos[0]`` and its height is
``z0 + qpos[1] − qpos0[1]`` (Brax's root slide joints sit at the torso with no
reference offset, Gym's carry ``ref="1.25"``, so that ``qpos[1]`` is the height
itself). Episodes last at most 1000 steps.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from pgdiag.envs.base import Env, EnvState, time_limit
from pgdiag.envs.mujoco_physics import compiled_advance, make_derived_fields, refuse_backend
from pgdiag.envs.native_physics import native_advance, native_derived_fields, native_field_advance

MAX_EPISODE_STEPS = 1000


def package_asset(package: str, folder: str, filename: str) -> str:
    """Path of an MJCF asset installed with ``package`` (read in place, never copied)."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"this MuJoCo model is read from the {package!r} package; pip install {package}")
    return os.path.join(os.path.dirname(spec.origin), folder, filename)


def brax_asset(filename: str) -> str:
    """Path of one of Brax's MJCF assets."""
    return package_asset("brax", os.path.join("envs", "assets"), filename)


def asset_path(task: "MujocoTask") -> str:
    """The task's MJCF file: Brax's assets or Gymnasium's."""
    if task.model == "gym":
        return package_asset("gymnasium", os.path.join("envs", "mujoco", "assets"), task.xml)
    return brax_asset(task.xml)


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
    solver_options: dict = dataclasses.field(default_factory=dict)  # solver settings, used by both backends
    description: str = ""
    model: str = "brax"        # whose MJCF model: "brax" (Brax's assets) or "gym" (Gymnasium's, Gym-v2's models)
    # fields read back from MuJoCo's own data after each step (native backend only), for observations defined
    # on what ``mj_step`` leaves behind rather than on the new state (Gym's Humanoid); () = derived in JAX
    host_fields: tuple = ()
    # (derived fields of a reset state, nv) -> the host fields there, as the model's own reset leaves them
    reset_host_fields: Callable | None = None
    mjx_missing: str = ""      # what MJX lacks to run this model ("" = MJX runs it)


# --- Hopper / Walker2d (planar walkers) ------------------------------------

def _planar_observe(fields, info):
    # [torso z, joint angles (from rooty on), clipped velocities] — Brax's obs.
    qpos, qvel = fields["qpos"], fields["qvel"]
    z = info["torso_z0"] + qpos[1]
    return jnp.concatenate([z[None], qpos[2:], jnp.clip(qvel, -10.0, 10.0)])  # Gym-v2's obs (z = qpos[1] there)


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
    # Newton with the model's own 8 iterations (Brax uses 1 for MJX speed: contacts are then left
    # unconverged and the two backends disagree from the first contact on), 10 line-search steps,
    # and Brax's disabled Euler damping; the same on both backends.
    solver_options=dict(solver="NEWTON", iterations=8, ls_iterations=10, disable_eulerdamp=True),
    description="Humanoid (Brax MJCF, Brax reward): 1.25·COM x-velocity + 5 alive − 0.1|ctrl|²; "
                "terminates unless 1 ≤ torso z ≤ 2.")

MUJOCO_TASKS = {t.name: t for t in (HOPPER, WALKER2D, HUMANOID)}


# --- physics backends ----------------------------------------------------------

PHYSICS_BACKENDS = ("mjx", "native", "warp")

#: Solver settings. "converged": the task's own (the model's iterations, MuJoCo's line search), the same on
#: both backends, so they integrate the same equations. "fast": Brax's and MuJoCo Playground's speed settings
#: (one Newton iteration, four line-search steps), what makes MJX fast; contacts are left unconverged.
SOLVERS = ("converged", "fast")
FAST_OPTIONS = {"iterations": 1, "ls_iterations": 4}


def solver_options(task: MujocoTask, solver: str = "converged") -> dict:
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver setting {solver!r}; choose one of: {', '.join(SOLVERS)}")
    return {**task.solver_options, **(FAST_OPTIONS if solver == "fast" else {})}


def load_model(task: MujocoTask, solver: str = "converged"):
    """The task's MjModel with the solver setting's options, shared by both backends so that
    they integrate the same equations."""
    import mujoco

    model = mujoco.MjModel.from_xml_path(asset_path(task))
    opts = solver_options(task, solver)
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
            # the planar walkers' torso height at qpos[1] = 0 (qpos[1] is their rootz slide; Humanoid reads qpos[2])
            "torso_z0": float(model.body_pos[torso, 2] - model.qpos0[1]),
            "ctrl_lo": ctrl_lo, "ctrl_hi": ctrl_hi}


def make_mujoco_env(task: MujocoTask, physics: str = "mjx", threads: int = 1,
                    max_episode_steps: int = MAX_EPISODE_STEPS, solver: str = "converged") -> Env:
    """The task on one physics backend.

    The carried physics state is ``qpos``, ``qvel`` and the task's derived
    fields. Each step clips the control to the actuators' range, advances
    ``n_frames`` substeps (the solver starting from a zero warm start on both
    backends, as MuJoCo's rollout does), recomputes the derived fields from
    the new positions and velocities, and evaluates the task's observation,
    reward and termination — the same JAX code on either backend. A task with
    ``host_fields`` (Gym's Humanoid) instead carries its solver warm start and
    reads those fields back from native MuJoCo after each step.
    """
    if physics not in PHYSICS_BACKENDS:
        raise ValueError(f"unknown physics backend {physics!r}; backends are: {', '.join(PHYSICS_BACKENDS)}")
    refuse_backend(physics, task.name, task.model, task.mjx_missing)
    model = load_model(task, solver)
    info = _model_info(task, model)
    native = physics == "native" or bool(task.host_fields)
    # (qpos, qvel, ctrl) -> a reset state's derived fields; (physics, ctrl) -> the next physics state
    derived = native_derived_fields(task, model, threads) if native else make_derived_fields(task, model)
    if task.host_fields:
        advance = native_field_advance(task, model, threads)
    elif native:
        advance_state = native_advance(task, model, threads)
        advance = lambda before, ctrl: advance_state(before["qpos"], before["qvel"], ctrl)  # noqa: E731
    else:
        advance = compiled_advance(task, model, physics, derived)
    qpos0 = np.asarray(model.qpos0, np.float32)
    nq, nv, nu = model.nq, model.nv, model.nu

    def reset(key):
        k1, k2 = jax.random.split(key)
        noise = task.reset_noise
        qpos = qpos0 + jax.random.uniform(k1, (nq,), minval=-noise, maxval=noise)
        qvel = jax.random.uniform(k2, (nv,), minval=-noise, maxval=noise)
        kinematics = derived(qpos, qvel, jnp.zeros(nu, jnp.float32))
        fields = task.reset_host_fields(kinematics, nv) if task.host_fields else kinematics
        physics_state = {"qpos": qpos, "qvel": qvel, **fields}
        return EnvState(physics=physics_state, obs=task.observe(physics_state, info).astype(jnp.float32),
                        reward=jnp.float32(0), terminated=jnp.bool_(False), truncated=jnp.bool_(False),
                        t=jnp.int32(0))

    def step(state, action):
        before = state.physics
        ctrl = task.ctrl_from_action(action, info)
        clipped = jnp.clip(ctrl, info["ctrl_lo"], info["ctrl_hi"])
        after = advance(before, clipped)
        reward, terminated = task.reward_terminated(before, after, ctrl, action, info)
        t = state.t + 1
        return EnvState(physics=after, obs=task.observe(after, info).astype(jnp.float32),
                        reward=reward.astype(jnp.float32), terminated=terminated,
                        truncated=time_limit(t, terminated, max_episode_steps), t=t)

    label = ("MJX" if physics == "mjx" else "MuJoCo Warp" if physics == "warp" else f"native MuJoCo ({threads} threads"
             + (", mj_step per environment" if task.host_fields else "") + ")") + f", {solver} solver"
    return Env(name=task.name, obs_size=task.obs_size, action_size=nu, max_episode_steps=max_episode_steps,
               reset=reset, step=step, description=f"{task.description} Physics: {label}.",
               action_bounds=_action_bounds(task, info), skips_idle=native)


def _action_bounds(task: MujocoTask, info) -> tuple:
    """The actions mapped into the actuators' control range: ctrl = s·a + c per dimension (the tasks' maps are
    affine), so a ∈ [(lo − c)/s, (hi − c)/s]."""
    c = np.asarray(task.ctrl_from_action(np.zeros_like(info["ctrl_lo"]), info), np.float64)
    s = np.asarray(task.ctrl_from_action(np.ones_like(info["ctrl_lo"]), info), np.float64) - c
    ends = np.stack([(info["ctrl_lo"] - c) / s, (info["ctrl_hi"] - c) / s])
    return tuple(ends.min(0).round(6).tolist()), tuple(ends.max(0).round(6).tolist())
