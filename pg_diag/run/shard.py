"""Placing the agent axis across devices: one shard of agents per device."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np


def agent_sharding():
    """Sharding of the agent axis across all devices (None on one device)."""
    if jax.device_count() == 1:
        return None
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("agents",))
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("agents"))


def padded_count(n_agents: int) -> int:
    """``n_agents`` rounded up to a multiple of the device count."""
    return math.ceil(n_agents / jax.device_count()) * jax.device_count()


def pad_and_shard(tree, n_agents: int):
    """Pad the agent axis to a multiple of the device count (copies of the last
    agent, dropped afterwards) and place it across the devices."""
    sharding = agent_sharding()
    if sharding is None:
        return tree, n_agents
    padded = padded_count(n_agents)
    if padded != n_agents:
        tree = jax.tree.map(lambda x: jnp.concatenate([x, jnp.repeat(x[-1:], padded - n_agents, 0)]), tree)
    return jax.device_put(tree, sharding), padded
