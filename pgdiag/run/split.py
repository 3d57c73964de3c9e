"""Training with the rollout on the host's CPU and the update on the accelerator (``placement='split'``).

Native MuJoCo runs on the host's cores. In a program compiled for an accelerator every physics step is a host
callback — the state crosses to the host and back 2,048 times an iteration, ~0.5 ms a step on an H200 host against
0.03 ms for the same step in a program compiled for the CPU, where the FFI handler steps MuJoCo directly
(``benchmarks/bench_native_placement.py``). So an iteration is cut in its two halves
([`pgdiag.trainer.make_train`][pgdiag.trainer.make_train]'s ``collect`` and ``learn``): the collection (policy
sampling, normalization, reward filter, physics, the batch) is compiled for the host's CPU, the update and the
metrics for the accelerator; per iteration the batch crosses to the accelerator once and the updated networks (a few
hundred kB) come back. The environments, filters and keys never leave the host; the optimizer states never leave the
accelerator.

Where the host's CPU is several JAX devices ([`pgdiag.run.host_devices`][pgdiag.run.host_devices]: by default one
per core on a host with an accelerator), the collection is sharded over them by agent: each device runs its block of
agents' whole collection — policy, filters and physics, the FFI handler stepping that block's environments on the
device's own thread — with no exchange between blocks, so the per-step JAX work of many one-environment agents,
which one CPU device runs agent after agent, spreads over the cores as the physics does. The blocks are equal: as
many devices as the largest divisor of the agent count the host has (320 agents on 16 cores: 16 blocks of 20; 5
agents: 5 of 1), where they keep as many cores stepping physics as one device would
([`collectors`][pgdiag.run.split.collectors]).

``placement='auto'`` splits where the default device is not a CPU, the physics is native and the run is one
process on one accelerator; elsewhere the whole iteration is one program (``'device'``). On a CPU-only host
the learner is the last CPU device and the others collect, so two or three CPU devices
(``jax_num_cpu_devices``) test the placement."""

from __future__ import annotations

import dataclasses
import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

from pgdiag.config import ConfigError
from pgdiag.run.programs import _abstract_inputs, _over_agents, _trainer
from pgdiag.run.shard import AXIS
from pgdiag.trainer import AgentState

PLACEMENTS = ("auto", "device", "split")

_LEARNER_FIELDS = ("policy", "value", "policy_opt", "value_opt", "iteration", "diverged")
_HOST_FIELDS = ("envs", "filters", "key")
_NETS = ("policy", "value", "diverged")


def devices() -> tuple:
    """(the host's CPU devices that collect, the learner device): the accelerator and every CPU device, or on a
    CPU-only host the last CPU device and the others (the one CPU device both, where there is one)."""
    cpus = jax.devices("cpu")
    if jax.default_backend() != "cpu":
        return tuple(cpus), jax.devices()[0]
    return tuple(cpus[:-1]) or (cpus[0],), cpus[-1]


def collectors(static, n_agents: int) -> tuple:
    """The CPU devices collecting for ``n_agents`` agents of ``static``: as many as the largest divisor of
    ``n_agents`` that the host has, so every block has the same size and no agent is padded — where those
    blocks, one physics thread each, keep at least as many cores stepping as one device's pool of threads
    would (every block for 320, 240 or 5 one-environment agents on 16 cores; one device for 3 agents of 16
    environments each, whose 48 environments its pool spreads over all 16 cores)."""
    hosts, _ = devices()
    count = max(d for d in range(1, min(len(hosts), n_agents) + 1) if n_agents % d == 0)
    pooled = min(static.physics_threads or (os.cpu_count() or 1), n_agents * static.num_envs)
    return hosts[:count] if count >= pooled else hosts[:1]


def resolve(static) -> tuple[str, str]:
    """('device' or 'split', why) for a training program of ``static`` (physics already resolved)."""
    from pgdiag.envs import hosts   # the declared host where a plan is made for another

    if static.placement != "auto":
        return static.placement, "asked for"
    if hosts.backend() == "cpu":
        return "device", "no accelerator"
    if static.physics != "native":
        return "device", f"{static.physics} physics runs on the accelerator"
    if hosts.process_count() > 1 or hosts.device_count() > 1:
        return "device", "several devices: the agents are sharded across them"
    return "split", "native physics on the host's CPU, the update on the accelerator"


def check(static, n_processes: int | None = None) -> None:
    """Refuse a split that cannot run here (before compiling)."""
    if static.placement == "split" and (n_processes or jax.process_count()) > 1:
        raise ConfigError("placement='split' runs on one process; with jax.distributed use placement='device' "
                          "or 'auto'")


def _put(tree, where):
    return jax.device_put(tree, where)


def nets_to_blocks(nets, by_agent):
    """The learner's networks onto the collecting blocks, through host memory: each leaf copied to the host
    once, then every block's rows placed from there. Put straight from an accelerator, an array is sliced on
    the accelerator and each block's slice copied on its own (``jax._src.array.shard_device_array``): for
    fig-ablation's 320 Walker2d agents on an H200 host, 98 ms an iteration onto 16 blocks against 17 ms onto
    one. ``benchmarks/bench_split.py`` times both ways."""
    return _put(jax.device_get(nets), by_agent)


def _spec(tree, sharding):
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding), tree)


def _shardings(static, n_agents: int):
    """(agent-stacked, whole) shardings of the collection: blocks of agents over the collecting devices."""
    mesh = Mesh(np.array(collectors(static, n_agents)), (AXIS,))
    return NamedSharding(mesh, P(AXIS)), NamedSharding(mesh, P())


@functools.lru_cache(maxsize=8)
def programs(static, n_agents: int, batching: str = "vmap"):
    """The two compiled halves for ``n_agents`` agents (cached): ``collect(host_part, nets, knobs, due) ->
    (host_part, payload)`` on the host's CPU devices and ``learn(learner_part, payload, knobs, due) ->
    (learner_part, metrics)`` on the learner device."""
    blocks = len(collectors(static, n_agents))
    # one block per device, each stepped on its device's thread: a pool per call would oversubscribe the cores
    collecting = _trainer(static if blocks == 1 else dataclasses.replace(static, physics_threads=1))
    trainer = _trainer(static)
    _, learner = devices()
    by_agent, whole = _shardings(static, n_agents)
    keys, knobs = _abstract_inputs(static, n_agents)
    keys = jax.ShapeDtypeStruct(keys.shape, keys.dtype)
    knobs = {k: jax.ShapeDtypeStruct(v.shape, v.dtype) for k, v in knobs.items()}
    states = jax.eval_shape(_over_agents(trainer.init, batching), keys, knobs)

    def collect_block(host_part, nets, knobs, due):
        state = states_from(host_part, nets)
        data, held, (key, k_val, k_pol) = _over_agents(lambda s, k: collecting.collect(s, k, due), batching)(
            state, knobs)
        return {"envs": data.carry, "filters": data.filters, "key": key}, (data.replace(carry=None), held, k_val,
                                                                              k_pol)

    # blocks never exchange anything: no collectives, so no varying-axis bookkeeping (check_vma off)
    collect = jax.shard_map(collect_block, mesh=by_agent.mesh, in_specs=(P(AXIS), P(AXIS), P(AXIS), P()),
                            out_specs=P(AXIS), check_vma=False)

    def learn(learner_part, payload, knobs, due):
        data, held, k_val, k_pol = payload

        def one(part, d, h, kv, kp, kn):
            state = AgentState(**part, envs=None, filters=None, key=None)
            return trainer.learn(state, d, h, (None, kv, kp), kn, due)
        return _over_agents(one, batching)(learner_part, data, held, k_val, k_pol, knobs)

    host_part = {f: getattr(states, f) for f in _HOST_FIELDS}
    learner_part = {f: getattr(states, f) for f in _LEARNER_FIELDS}
    nets = {f: learner_part[f] for f in _NETS}
    due = jax.ShapeDtypeStruct((), jnp.bool_)
    collect_c = jax.jit(collect).lower(_spec(host_part, by_agent), _spec(nets, by_agent), _spec(knobs, by_agent),
                                       _spec(due, whole)).compile()
    payload = jax.eval_shape(collect_block, host_part, nets, knobs, due)[1]
    on_learner = SingleDeviceSharding(learner)
    learn_c = jax.jit(learn).lower(_spec(learner_part, on_learner), _spec(payload, on_learner),
                                   _spec(knobs, on_learner), _spec(due, on_learner)).compile()
    return collect_c, learn_c


def states_from(host_part: dict, nets: dict):
    """An agent-stacked state for ``collect``: the host's fields and the networks (the optimizer states are
    not read there)."""
    return AgentState(policy=nets["policy"], value=nets["value"], policy_opt=None, value_opt=None,
                      filters=host_part["filters"], envs=host_part["envs"], iteration=None, key=host_part["key"],
                      diverged=nets["diverged"])


def chunk(static, n_agents: int, length: int, batching: str = "vmap"):
    """A chunk of up to ``length`` iterations, collected on the host's CPU devices and learned on the learner,
    called like [`pgdiag.run.programs.chunk_program`][pgdiag.run.programs.chunk_program]'s program: ``(states,
    knobs, count) -> (states, metrics [length, agents])``, rows from ``count`` on zeros. Compiles both halves
    now."""
    collect, learn = programs(static, n_agents, batching)
    _, learner = devices()
    by_agent, whole = _shardings(static, n_agents)

    def run(states, knobs, count):
        count = int(np.asarray(count))
        host_part = _put({f: getattr(states, f) for f in _HOST_FIELDS}, by_agent)
        learner_part = _put({f: getattr(states, f) for f in _LEARNER_FIELDS}, learner)
        knobs_host, knobs_learner = _put(knobs, by_agent), _put(knobs, learner)
        iteration = int(np.asarray(jax.device_get(learner_part["iteration"]))[0])
        metrics = {k: np.zeros((length,) + v.shape, v.dtype) for k, v in learn.out_info[1].items()}
        for i in range(count):
            due = bool(static.heldout_every) and (iteration + i) % static.heldout_every == 0  # as heldout_due
            nets = nets_to_blocks({f: learner_part[f] for f in _NETS}, by_agent)  # the networks back, by block
            host_part, payload = collect(host_part, nets, knobs_host, _put(np.bool_(due), whole))
            payload = _put(payload, learner)                                  # the batch, once
            learner_part, row = learn(learner_part, payload, knobs_learner, _put(np.bool_(due), learner))
            for k, v in jax.device_get(row).items():
                metrics[k][i] = v
        return AgentState(**host_part, **learner_part), metrics

    return run
