"""Brax environments as pgdiag tasks: `register_brax_env("inverted_pendulum")` and every sweep and diagnostic
takes it by name.

A Brax `Env` is a pair of pure functions, `reset(key) -> State` and `step(State, action) -> State`, never
resetting by itself; its `done` flag is its own termination condition. The task here keeps the Brax state whole
as its physics, reports `terminated` from `done` and `truncated` from the time limit declared at registration
(Brax's training wrappers add the same limit, 1,000 steps by default), and clips actions to [−1, 1], the range
Brax's controls are scaled to (its PPO samples them through a tanh).
"""

from __future__ import annotations

import jax.numpy as jnp

from pgdiag.envs import register_task
from pgdiag.envs.base import Env, EnvState, time_limit


def _brax_env(env_or_name, **kwargs):
    """A Brax `Env`: the one given, or `brax.envs.get_environment(name, **kwargs)`."""
    if not isinstance(env_or_name, str):
        if not (callable(getattr(env_or_name, "reset", None)) and callable(getattr(env_or_name, "step", None))):
            raise ValueError(f"register_brax_env: expected a Brax Env or a Brax environment's name, got "
                             f"{type(env_or_name).__name__}")
        return env_or_name
    from brax import envs as brax_envs

    known = sorted(brax_envs._envs)   # Brax's own registry of names
    if env_or_name not in known:
        raise ValueError(f"register_brax_env: unknown Brax environment {env_or_name!r}; Brax's are: "
                         f"{', '.join(known)}")
    return brax_envs.get_environment(env_or_name, **kwargs)


def brax_task(env, name: str, episode_limit: int = 1000, description: str = "", action_repeat: int = 1) -> Env:
    """The pgdiag task of a Brax `Env` (one environment; pgdiag batches it with `jax.vmap`). With
    ``action_repeat`` > 1 each step repeats the action that many times and sums the rewards, as Brax's
    `EpisodeWrapper` does (MuJoCo Playground's training wrapper)."""
    obs_size, action_size = int(env.observation_size), int(env.action_size)

    def repeated(s, action):
        reward = jnp.zeros((), jnp.float32)
        for _ in range(action_repeat):   # unrolled: a handful of steps, as Brax's wrapper scans them
            s = env.step(s, action)
            reward = reward + jnp.asarray(s.reward, jnp.float32)
        return s, reward

    def reset(key) -> EnvState:
        s = env.reset(key)
        return EnvState(physics=s, obs=jnp.asarray(s.obs, jnp.float32), reward=jnp.zeros((), jnp.float32),
                        terminated=jnp.zeros((), bool), truncated=jnp.zeros((), bool), t=jnp.zeros((), jnp.int32))

    def step(state: EnvState, action) -> EnvState:
        s, reward = repeated(state.physics, jnp.clip(action, -1.0, 1.0))
        t = state.t + 1
        terminated = s.done > 0.5
        return EnvState(physics=s, obs=jnp.asarray(s.obs, jnp.float32), reward=reward,
                        terminated=terminated, truncated=time_limit(t, terminated, episode_limit), t=t)

    return Env(name=name, obs_size=obs_size, action_size=action_size, max_episode_steps=episode_limit,
               reset=reset, step=step, description=description or f"Brax {type(env).__name__}",
               action_bounds=((-1.0,) * action_size, (1.0,) * action_size))


def register_brax_env(env_or_name, name: str | None = None, episode_limit: int = 1000, **kwargs) -> str:
    """Register a Brax environment (an `Env`, or the name Brax registers it under, built with `**kwargs`, e.g.
    `backend="positional"`) as the pgdiag task `name` (default `brax-<its name>`); returns the task's name."""
    env = _brax_env(env_or_name, **kwargs)
    if not isinstance(getattr(env, "observation_size", None), int):
        raise ValueError(f"register_brax_env: {type(env).__name__} has observations of shape "
                         f"{getattr(env, 'observation_size', None)!r}; a pgdiag task needs a flat vector")
    task = name or f"brax-{env_or_name if isinstance(env_or_name, str) else type(env).__name__.lower()}"
    made = brax_task(env, task, episode_limit)
    register_task(task, lambda physics="auto", threads=0, solver="converged", model="brax": made,
                  obs_size=made.obs_size, action_size=made.action_size, episode_limit=episode_limit,
                  description=made.description)
    return task


__all__ = ["brax_task", "register_brax_env"]
