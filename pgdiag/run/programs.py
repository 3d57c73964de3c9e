"""The compiled programs of a sweep: the agents' initialization and a chunk of iterations.

Each is compiled once per (static configuration, agent count, batching) and cached, so a notebook that
repeats a sweep of the same shape does not compile again. The chunk program takes the number of
iterations to run (up to its length), so one program serves every chunk of a run however its
checkpoints cut it. On several devices the agent axis is sharded across them ([`shard`][pgdiag.run.shard]).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from pgdiag import algorithms
from pgdiag.config import BOOL_KNOBS, KNOB_NAMES
from pgdiag.run.shard import AXIS, agent_sharding, over_devices, replicated_spec
from pgdiag.trainer import make_train, seed_key

@functools.lru_cache(maxsize=8)
def _trainer(static):
    return make_train(static)


def _over_agents(fn, batching: str):
    if batching == "vmap":
        return jax.vmap(fn)
    return lambda *args: jax.lax.map(lambda a: fn(*a), args)


def _abstract_inputs(static, n_agents: int):
    """The program's inputs' shapes: seed keys and the knobs (the shared ones and the algorithm's own)."""
    sharding = agent_sharding()
    keys = jax.ShapeDtypeStruct((n_agents,) + seed_key(0).shape, seed_key(0).dtype, sharding=sharding)
    own = algorithms.get(static.algorithm).knobs
    kinds = {**{n: n in BOOL_KNOBS for n in KNOB_NAMES}, **{n: isinstance(o.default, bool) for n, o in own.items()}}
    knobs = {name: jax.ShapeDtypeStruct((n_agents,), jnp.bool_ if is_bool else jnp.float32, sharding=sharding)
             for name, is_bool in kinds.items()}
    return keys, knobs


def init_compiler_options() -> dict | None:
    """XLA options for the initialization's program: on a CPU, no LLVM optimization. The program runs once per run,
    in milliseconds, but optimized it compiled in 4–8 s — the networks' random draws and orthogonal factorizations,
    layer by layer — as long as a chunk of training iterations (``benchmarks/bench_compile.py``); unoptimized, in
    2.3–2.8 s of which 1.5–1.7 s is XLA's backend. Its values then differ from an optimized build's by float32
    rounding."""
    return {"xla_backend_optimization_level": 0} if jax.default_backend() == "cpu" else None


@functools.lru_cache(maxsize=32)
def init_program(static, n_agents: int, batching: str = "vmap"):
    """The compiled initialization of ``n_agents`` agents (cached: a notebook
    repeating a sweep of the same shape does not compile again)."""
    init = over_devices(_over_agents(_trainer(static).init, batching), P(AXIS))
    return jax.jit(init).lower(*_abstract_inputs(static, n_agents)).compile(init_compiler_options())


@functools.lru_cache(maxsize=32)
def chunk_program(static, n_agents: int, length: int, batching: str = "vmap"):
    """The compiled chunk of up to ``length`` iterations of ``n_agents`` agents (cached):
    ``program(states, knobs, replicated(count))`` takes the first ``count`` ≤ ``length`` of them, so one
    program serves every chunk of a run however its checkpoints cut it. Metrics come out
    [length, agents]; rows from ``count`` on are zeros."""
    trainer = _trainer(static)
    keys, knobs = _abstract_inputs(static, n_agents)
    states = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=agent_sharding()),
                          jax.eval_shape(_over_agents(trainer.init, batching), keys, knobs))
    chunk = over_devices(lambda s, k, c: trainer.run_agents(s, k, length, batching, count=c),
                         (P(AXIS), P(None, AXIS)), in_specs=(P(AXIS), P(AXIS), P()))
    fn = jax.jit(chunk, donate_argnums=0)
    return fn.lower(states, knobs, replicated_spec((), jnp.int32)).compile()


def clear_compiled() -> None:
    """Forget the compiled programs (the next sweep compiles afresh)."""
    init_program.cache_clear()
    chunk_program.cache_clear()
