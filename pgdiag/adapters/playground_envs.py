"""MuJoCo Playground environments as pgdiag tasks: `register_playground_env("CartpoleBalance")` and every sweep
and diagnostic takes it by name.

A Playground environment (the `playground` package, `mujoco_playground.registry`) has Brax's interface —
`reset(key) -> State`, `step(State, action) -> State`, `done` its own termination (a diverged simulation, or a
fall where the task defines one) — and its configuration states the episode length in physics steps and how
many physics steps repeat each action. The task here is the Brax adapter's ([`brax_task`][pgdiag.adapters.
brax_envs.brax_task]) with that action repeat and a time limit of ``episode_length / action_repeat`` policy
steps (truncation, as Playground's training wrapper sets it). The physics runs on MJX's JAX implementation
(``impl="jax"``) unless another is asked for: Playground's default for several tasks is MuJoCo Warp, which
needs an NVIDIA GPU.
"""

from __future__ import annotations

import math

from pgdiag.adapters.brax_envs import brax_task
from pgdiag.envs import register_task

MISSING = ("register_playground_env needs MuJoCo Playground, which is not installed: pip install "
           "'pgdiag-rl[playground]' (the `playground` package)")


def _registry():
    try:
        from mujoco_playground import registry
    except ImportError:
        raise ImportError(MISSING) from None
    return registry


def playground_env(env_name: str, impl: str = "jax", config_overrides: dict | None = None):
    """Playground's environment ``env_name`` with its physics on ``impl``, and its configuration."""
    registry = _registry()
    if env_name not in registry.ALL_ENVS:
        raise ValueError(f"register_playground_env: unknown Playground environment {env_name!r}; Playground's "
                         f"are: {', '.join(sorted(registry.ALL_ENVS))}")
    overrides = {"impl": impl, **(config_overrides or {})}
    env = registry.load(env_name, config_overrides=overrides)
    return env, registry.get_default_config(env_name)


def register_playground_env(env_name: str, name: str | None = None, episode_limit: int | None = None,
                            impl: str = "jax", config_overrides: dict | None = None) -> str:
    """Register Playground's environment ``env_name`` as the pgdiag task ``name`` (default
    ``playground-<env_name>``); returns the task's name.

    Args:
        env_name: a name of `mujoco_playground.registry.ALL_ENVS` (e.g. "CartpoleBalance", "PendulumSwingup").
        episode_limit: policy steps before truncation (default: its configuration's episode_length over its
            action_repeat).
        impl: the MJX implementation its physics runs on ("jax"; "warp" on an NVIDIA GPU).
        config_overrides: other entries of its configuration.
    """
    env, config = playground_env(env_name, impl, config_overrides)
    if not isinstance(env.observation_size, int):
        raise ValueError(f"register_playground_env: {env_name} has observations {env.observation_size!r} (a "
                         f"dict of arrays); a pgdiag task needs a flat vector")
    repeat = int((config_overrides or {}).get("action_repeat", config.get("action_repeat", 1)))
    length = int((config_overrides or {}).get("episode_length", config.get("episode_length", 1000)))
    limit = episode_limit or math.ceil(length / repeat)
    task = name or f"playground-{env_name}"
    made = brax_task(env, task, limit, description=f"MuJoCo Playground {env_name} ({impl})", action_repeat=repeat)
    register_task(task, lambda physics="auto", threads=0, solver="converged", model="brax": made,
                  obs_size=made.obs_size, action_size=made.action_size, episode_limit=limit,
                  description=made.description)
    return task


__all__ = ["playground_env", "register_playground_env"]
