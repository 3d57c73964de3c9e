"""The papers' own tasks: Gym-v2's Hopper, Walker2d and Humanoid on Gym's MJCF models (read from the installed
Gymnasium package, whose assets are Gym-v2's models up to a coordinate rewrite).

The Brax models the other tasks step ([`mujoco_tasks`][pgdiag.envs.mujoco_tasks]) are different physical systems:
Euler instead of RK4, other contact dimensions and friction, Humanoid with Newton and 8 iterations instead of PGS
and 50. The task definitions here are Gym-v2's (``gym/envs/mujoco/{hopper,walker2d,humanoid}.py`` at v2):

* Hopper and Walker2d: observation ``[qpos[1:], clip(qvel, ±10)]``, reward ``Δx/dt + 1 − 1e-3·|a|²`` with the
  alive bonus on every step (terminal ones included), the same healthy ranges, reset noise ±5e-3, 4 frames;
  Walker2d on ``walker2d.xml`` (feet friction 0.9 / 1.9, as v2; Gymnasium's v5 default file sets both to 1.9).
* Humanoid: the 376-d observation ``[qpos[2:], qvel, cinert, cvel, qfrc_actuator, cfrc_ext]`` with the world
  body's rows, reward ``1.25·Δ(mass centre x)/dt + 5 − 0.1·|ctrl|² − min(5e-7·|cfrc_ext|², 10)``, terminal
  unless 1 ≤ z ≤ 2, reset noise ±1e-2, 5 frames, the action applied as the control (MuJoCo clamps it to ±0.4).
  Its observation and reward read what MuJoCo's ``mj_step`` leaves in its data — the inertias, velocities and
  body positions of the last integration stage, and the contact forces of ``mj_rnePostConstraint`` (computed
  explicitly, as MuJoCo 1.5 did and Gymnasium does; under mujoco-py 2 without it Gym-v2 read zeros) — so the
  native backend returns them from MuJoCo itself, and the solver's warm start is carried between steps (PGS
  with 50 iterations does not converge, so its answer depends on where it starts). MJX has no PGS solver: the
  Gym Humanoid runs on native MuJoCo only.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from pgdiag.envs.mujoco_tasks import HOPPER, WALKER2D, MujocoTask

GYM_HOPPER = dataclasses.replace(
    HOPPER, xml="hopper.xml", model="gym",
    description="Hopper (Gym-v2's MJCF: RK4, condim 1, friction 0.9, foot 2.0; Gym-v2 reward): forward velocity + "
                "1 alive − 1e-3|a|²; terminates when z ≤ 0.7, |torso angle| ≥ 0.2 or |state| ≥ 100.")

GYM_WALKER2D = dataclasses.replace(
    WALKER2D, xml="walker2d.xml", model="gym",
    description="Walker2d (Gym-v2's MJCF: RK4, feet friction 0.9 / 1.9; Gym-v2 reward): forward velocity + 1 alive "
                "− 1e-3|a|²; terminates unless 0.8 < z < 2 and |torso angle| < 1.")

#: what the native backend reads back from MuJoCo's data after each Gym Humanoid step
HUMANOID_HOST_FIELDS = ("qacc_warmstart", "mass_center", "cinert", "cvel", "qfrc_actuator", "cfrc_ext")


def _humanoid_observe(fields, info):
    # Gym-v2's 376-d layout: 22 + 23 + 14·10 + 14·6 + 23 + 14·6, the world body's (zero) rows included
    return jnp.concatenate([fields["qpos"][2:], fields["qvel"], fields["cinert"].ravel(), fields["cvel"].ravel(),
                            fields["qfrc_actuator"], fields["cfrc_ext"].ravel()])


def _humanoid_reward(before, after, ctrl, action, info):
    # 0.25·Δx/timestep = 1.25·Δx/dt of the mass centre (Σ m·xipos / Σ m); the contact cost capped at 10
    velocity = (after["mass_center"][0] - before["mass_center"][0]) / info["dt"]
    contact = jnp.minimum(5e-7 * jnp.sum(jnp.square(after["cfrc_ext"])), 10.0)
    reward = 1.25 * velocity + 5.0 - 0.1 * jnp.sum(jnp.square(ctrl)) - contact
    z = after["qpos"][2]
    return reward, jnp.logical_not((z >= 1.0) & (z <= 2.0))


def reset_fields(kinematics, nv: int):
    """The Gym Humanoid's host fields at a reset state, as Gymnasium's reset leaves them: kinematics from the
    new state (``mj_forward``), no actuator force (the control is zero), no contact force (``mj_resetData``
    clears it and ``mj_forward`` does not compute it) and a zero warm start."""
    return {"qacc_warmstart": jnp.zeros(nv, jnp.float32), "mass_center": kinematics["subtree_com"][0],
            "cinert": kinematics["cinert"], "cvel": kinematics["cvel"],
            "qfrc_actuator": jnp.zeros(nv, jnp.float32), "cfrc_ext": jnp.zeros_like(kinematics["cvel"])}


GYM_HUMANOID = MujocoTask(
    name="humanoid", xml="humanoid.xml", model="gym", n_frames=5, reset_noise=1e-2,
    obs_size=22 + 23 + 140 + 84 + 23 + 84, derived_fields=("subtree_com", "cinert", "cvel"),
    observe=_humanoid_observe, reward_terminated=_humanoid_reward, ctrl_from_action=lambda a, info: a,
    host_fields=HUMANOID_HOST_FIELDS, reset_host_fields=reset_fields,
    mjx_missing="the PGS solver of Gym's humanoid.xml",
    description="Humanoid (Gym-v2's MJCF: RK4, PGS with 50 iterations, condim 1; Gym-v2 reward and 376-d obs): "
                "1.25·mass-centre x-velocity + 5 alive − 0.1|ctrl|² − min(5e-7|cfrc_ext|², 10); terminates unless "
                "1 ≤ torso z ≤ 2. Native MuJoCo only.")

GYM_TASKS = {t.name: t for t in (GYM_HOPPER, GYM_WALKER2D, GYM_HUMANOID)}


__all__ = ["GYM_TASKS", "HUMANOID_HOST_FIELDS", "reset_fields"]
