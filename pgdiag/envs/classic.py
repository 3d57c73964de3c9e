"""Cheap continuous-control tasks in pure JAX (compile in seconds).

* ``pendulum`` — the classic torque-limited swing-up (Gym Pendulum-v1
  dynamics), 200-step episodes, no termination: only truncation.
* ``point_mass`` — a 2-D double integrator that must stay near the origin; an
  alive bonus minus distance, and termination when it leaves the arena, so it
  exercises the terminated/truncated distinction like the MuJoCo walkers.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pgdiag.envs.base import Env, EnvState, time_limit

# --- pendulum -------------------------------------------------------------

PENDULUM_MAX_SPEED = 8.0
PENDULUM_MAX_TORQUE = 2.0
PENDULUM_DT = 0.05
PENDULUM_G = 10.0


def _angle_normalize(x):
    return ((x + jnp.pi) % (2 * jnp.pi)) - jnp.pi


def _pendulum_obs(th, thdot):
    return jnp.stack([jnp.cos(th), jnp.sin(th), thdot]).astype(jnp.float32)


def make_pendulum(max_episode_steps: int = 200) -> Env:
    def reset(key):
        k1, k2 = jax.random.split(key)
        th = jax.random.uniform(k1, (), minval=-jnp.pi, maxval=jnp.pi)
        thdot = jax.random.uniform(k2, (), minval=-1.0, maxval=1.0)
        physics = jnp.stack([th, thdot])
        return EnvState(physics=physics, obs=_pendulum_obs(th, thdot), reward=jnp.float32(0),
                        terminated=jnp.bool_(False), truncated=jnp.bool_(False), t=jnp.int32(0))

    def step(state, action):
        th, thdot = state.physics[0], state.physics[1]
        u = jnp.clip(action[0], -PENDULUM_MAX_TORQUE, PENDULUM_MAX_TORQUE)
        cost = _angle_normalize(th) ** 2 + 0.1 * thdot ** 2 + 0.001 * u ** 2
        new_thdot = thdot + (3 * PENDULUM_G / 2 * jnp.sin(th) + 3.0 * u) * PENDULUM_DT
        new_thdot = jnp.clip(new_thdot, -PENDULUM_MAX_SPEED, PENDULUM_MAX_SPEED)
        new_th = th + new_thdot * PENDULUM_DT
        t = state.t + 1
        terminated = jnp.bool_(False)
        return EnvState(physics=jnp.stack([new_th, new_thdot]), obs=_pendulum_obs(new_th, new_thdot),
                        reward=(-cost).astype(jnp.float32), terminated=terminated,
                        truncated=time_limit(t, terminated, max_episode_steps), t=t)

    return Env(name="pendulum", obs_size=3, action_size=1, max_episode_steps=max_episode_steps,
               reset=reset, step=step,
               description="Torque-limited pendulum swing-up (Pendulum-v1 dynamics); truncation only.")


# --- point mass -----------------------------------------------------------

POINT_MASS_DT = 0.1
POINT_MASS_ARENA = 2.0      # leaving this radius terminates the episode
POINT_MASS_DAMPING = 0.1


def make_point_mass(max_episode_steps: int = 200) -> Env:
    """State (x, y, vx, vy); action = force in [-1, 1]^2 (clipped).

    reward = 1 − |p| − 0.01·|u|²; terminated when |p| > 2.
    """

    def reset(key):
        k1, k2 = jax.random.split(key)
        pos = jax.random.uniform(k1, (2,), minval=-1.0, maxval=1.0)
        vel = jax.random.uniform(k2, (2,), minval=-0.5, maxval=0.5)
        s = jnp.concatenate([pos, vel]).astype(jnp.float32)
        return EnvState(physics=s, obs=s, reward=jnp.float32(0), terminated=jnp.bool_(False),
                        truncated=jnp.bool_(False), t=jnp.int32(0))

    def step(state, action):
        pos, vel = state.physics[:2], state.physics[2:]
        u = jnp.clip(action, -1.0, 1.0)
        vel = vel + (u - POINT_MASS_DAMPING * vel) * POINT_MASS_DT
        pos = pos + vel * POINT_MASS_DT
        dist = jnp.linalg.norm(pos)
        reward = 1.0 - dist - 0.01 * jnp.sum(u ** 2)
        terminated = dist > POINT_MASS_ARENA
        t = state.t + 1
        s = jnp.concatenate([pos, vel]).astype(jnp.float32)
        return EnvState(physics=s, obs=s, reward=reward.astype(jnp.float32), terminated=terminated,
                        truncated=time_limit(t, terminated, max_episode_steps), t=t)

    return Env(name="point_mass", obs_size=4, action_size=2, max_episode_steps=max_episode_steps,
               reset=reset, step=step,
               description="2-D point mass kept near the origin; terminates when it leaves radius 2.")
