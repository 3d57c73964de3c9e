"""Placing the agent axis across devices and processes: one block of agents per device.

Agents never talk to each other, so a sweep over several devices (and several
processes, [`pgdiag.run.distributed`][pgdiag.run.distributed]) is the single-device program run
on each device's block of agents under ``shard_map``: no collectives inside
the program, and a host callback (native MuJoCo's physics) is called by the
process that owns the block, with that block's data only. Every process
builds the same global inputs from the plan (they are small: keys and knobs)
but materializes only its own agents' rows; results come back to every
process by [`gather`][pgdiag.run.shard.gather].
"""

from __future__ import annotations

import contextlib
import contextvars
import math

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

AXIS = "agents"

#: the devices the agent axis is placed on inside [`placed_on`][pgdiag.run.shard.placed_on] (None: every device)
_PLACED: contextvars.ContextVar = contextvars.ContextVar("pgdiag_placed_on", default=None)


@contextlib.contextmanager
def placed_on(devices):
    """Inside the block, the agent axis goes over ``devices`` (this process's, e.g. the host's CPU devices on a host
    with an accelerator) instead of every device: the mesh, the padding and every program built there use them
    (``None``: no change). A mesh of one device is still a mesh, so a program built inside is compiled for that
    device, not the default one."""
    token = _PLACED.set(None if devices is None else tuple(devices))
    try:
        yield
    finally:
        _PLACED.reset(token)


def agent_mesh() -> Mesh | None:
    """The 1-D mesh of every device of every process (None on one device), or of the devices of
    [`placed_on`][pgdiag.run.shard.placed_on]."""
    placed = _PLACED.get()
    if placed is not None:
        return Mesh(np.array(placed), (AXIS,))
    if jax.device_count() == 1:
        return None
    return Mesh(np.array(jax.devices()), (AXIS,))


def agent_sharding() -> NamedSharding | None:
    """Sharding of the agent axis across all devices (None on one device)."""
    mesh = agent_mesh()
    return None if mesh is None else NamedSharding(mesh, PartitionSpec(AXIS))


def padded_count(n_agents: int) -> int:
    """``n_agents`` rounded up to a multiple of the device count (of the devices placed on, inside
    [`placed_on`][pgdiag.run.shard.placed_on])."""
    placed = _PLACED.get()
    count = jax.device_count() if placed is None else len(placed)
    return math.ceil(n_agents / count) * count


def over_devices(fn, out_specs, in_specs=PartitionSpec(AXIS)):
    """``fn`` (a function of agent-stacked arrays) run on each device's block of agents. ``out_specs``
    (``in_specs``): where the agent axis is in each output (input), ``PartitionSpec``s as a pytree prefix;
    ``PartitionSpec()`` for a value every device sees whole (see [`replicated`][pgdiag.run.shard.replicated])."""
    mesh = agent_mesh()
    if mesh is None:
        return fn
    # agents never communicate: no collectives, so no varying-axis bookkeeping is needed (check_vma off)
    return jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)


def replicated_spec(shape, dtype) -> jax.ShapeDtypeStruct:
    """The abstract input of a value every device holds whole (compiling before the value exists)."""
    mesh = agent_mesh()
    return jax.ShapeDtypeStruct(shape, dtype, sharding=None if mesh is None else NamedSharding(mesh, PartitionSpec()))


def replicated(x):
    """A host value (the same on every process) placed whole on every device."""
    x = np.asarray(x)
    mesh = agent_mesh()
    if mesh is None:
        return x
    return jax.make_array_from_callback(x.shape, NamedSharding(mesh, PartitionSpec()), lambda index: x[index])


def pad_and_shard(tree, n_agents: int):
    """Pad the agent axis to a multiple of the device count (copies of the last agent, dropped
    afterwards) and place it across the devices; each process materializes only its own agents' rows.
    ``tree`` holds the same global values on every process."""
    sharding = agent_sharding()
    if sharding is None:
        return tree, n_agents
    padded = padded_count(n_agents)

    def place(x):
        x = np.asarray(x)
        if padded != n_agents:
            x = np.concatenate([x, np.repeat(x[-1:], padded - n_agents, 0)])
        return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])

    return jax.tree.map(place, tree), padded


def unpadded(tree, n_agents: int):
    """``tree``'s first ``n_agents`` agents (the padding [`pad_and_shard`][pgdiag.run.shard.pad_and_shard] added
    dropped), each leaf on the devices it is on. A leaf sharded over several devices is sliced on the host and
    placed back whole on them, as a slice there leaves it: sliced there, each leaf's shape compiles a cross-device
    gather of its own (48 programs at the end of a 7-agent training on 2 CPU devices)."""
    def unpad(x):
        if isinstance(x, jax.Array) and isinstance(x.sharding, NamedSharding) and len(x.sharding.device_set) > 1:
            return jax.device_put(np.asarray(x)[:n_agents], NamedSharding(x.sharding.mesh, PartitionSpec()))
        return x[:n_agents]

    return jax.tree.map(unpad, tree)


def gather(tree):
    """Every agent's values on every process, as host arrays (a global array spread over processes is
    all-gathered; on one process this is ``device_get``)."""
    if jax.process_count() == 1:
        return jax.device_get(tree)
    from jax.experimental import multihost_utils

    return jax.tree.map(np.asarray, multihost_utils.process_allgather(tree, tiled=True))
