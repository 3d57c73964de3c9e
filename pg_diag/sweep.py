"""Sweeps: a base config × a knob grid × seeds, run as ONE compiled program.

    from pg_diag import preset, sweep
    run = sweep(preset("ppo", "pendulum"),
                grid={"value_clipping": [False, True], "lr_policy": [1e-4, 3e-4]},
                seeds=5, out="runs/demo")
    run.metrics.groupby(["value_clipping", "lr_policy"]).mean_return.max()

Every agent (one grid point × one seed) is a row of a stacked knob pytree;
the training step is ``vmap``-ed over that leading agent axis and compiled
once, so the number of compiles does not depend on how many knobs or values
are swept. Training runs in chunks of iterations; between chunks the host
draws a progress bar and saves what has been computed. On several devices
the agent axis is sharded across them.

An agent's randomness depends only on its seed, so a configuration inside a
sweep gives the same numbers as the same configuration run alone, and agents
with the same seed share initial weights and environment noise across grid
points (common random numbers, which sharpen paired comparisons).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
import os
import platform
import subprocess
import sys
import time
from typing import Any, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from pg_diag.config import (BOOL_KNOBS, KNOB_FIELDS, KNOB_NAMES, STATIC_FIELDS, Config, ConfigError,
                            check_knob, stack_knobs)
from pg_diag.train import METRICS, make_train, seed_key

MANIFEST = "manifest.json"
METRICS_FILE = "metrics.parquet"
CHECKPOINT_DIR = "checkpoint"


# --------------------------------------------------------------------------
# Planning (all validation happens here, before anything is compiled).
# --------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Plan:
    """The validated agent list of a sweep."""

    base: Config
    grid_axes: tuple            # knob names that vary, in order
    points: tuple               # tuple of dicts: knob overrides per grid point
    seeds: tuple                # seeds, each run at every grid point
    configs: tuple              # Config per grid point
    labels: tuple = ()          # optional name per grid point (e.g. the algorithm preset)

    @property
    def num_agents(self) -> int:
        return len(self.points) * len(self.seeds)

    def agents(self):
        """(agent index, point index, seed) in the order of the stacked axis (seed fastest)."""
        for p in range(len(self.points)):
            for s, seed in enumerate(self.seeds):
                yield p * len(self.seeds) + s, p, seed


def _check_grid_name(name):
    if name in STATIC_FIELDS:
        raise ConfigError(
            f"{name!r} is a static setting (it changes array shapes or program structure), so it cannot be "
            f"a grid axis of one compiled sweep; set it on the base config. Sweepable knobs: {', '.join(KNOB_NAMES)}")
    if name not in KNOB_FIELDS:
        raise ConfigError(f"unknown knob {name!r} in grid; sweepable knobs: {', '.join(KNOB_NAMES)}")


def plan(base: Config, grid: Mapping[str, Sequence] | Sequence[Mapping] | None = None,
         seeds: int | Sequence[int] = 1, labels: Sequence[str] | None = None) -> Plan:
    """Validate a sweep and list its agents.

    ``grid`` is either a mapping knob -> values (the Cartesian product is
    swept) or a sequence of mappings knob -> value (exactly those points).
    ``seeds`` is a count (seeds 0..n-1) or an explicit sequence of ints.
    ``labels`` optionally names each grid point (a ``label`` column in the metrics).
    """
    if not isinstance(base, Config):
        raise ConfigError(f"base must be a pg_diag Config, got {type(base).__name__}")
    if grid is None:
        grid = {}
    if isinstance(grid, Mapping):
        axes = []
        for name, values in grid.items():
            _check_grid_name(name)
            iterable = hasattr(values, "__iter__") and not isinstance(values, (str, bytes, Mapping))
            values = list(values) if iterable else []  # lists, tuples, numpy arrays, ranges
            if not values:
                raise ConfigError(f"grid axis {name!r} needs a non-empty list of values, got {grid[name]!r}")
            axes.append((name, [check_knob(name, v.item() if hasattr(v, "item") else v) for v in values]))
        names = tuple(n for n, _ in axes)
        points = tuple(dict(zip(names, combo)) for combo in itertools.product(*[v for _, v in axes]))
    else:
        points_list = list(grid)
        if not points_list:
            raise ConfigError("grid is an empty list of points; give at least one mapping of knob -> value")
        names_seen: list[str] = []
        checked = []
        for point in points_list:
            if not isinstance(point, Mapping):
                raise ConfigError(f"grid points must be mappings knob -> value, got {point!r}")
            for name, value in point.items():
                _check_grid_name(name)
                if name not in names_seen:
                    names_seen.append(name)
            checked.append({n: check_knob(n, v) for n, v in point.items()})
        names = tuple(names_seen)
        points = tuple(checked)

    if isinstance(seeds, bool) or not isinstance(seeds, (int, Sequence)):
        raise ConfigError(f"seeds must be a positive count or a list of ints, got {seeds!r}")
    if isinstance(seeds, int):
        if seeds < 1:
            raise ConfigError(f"seeds must be a positive count or a list of ints, got {seeds!r}")
        seeds = tuple(range(seeds))
    else:
        seeds = tuple(seeds)
        if not seeds or not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 0
                                for s in seeds):
            raise ConfigError(f"seeds must be a positive count or a non-empty list of ints >= 0, got {seeds!r}")
        if len(set(seeds)) != len(seeds):
            raise ConfigError(f"seeds contain duplicates: {seeds!r}")
        seeds = tuple(int(s) for s in seeds)
    configs = tuple(base.replace(**p) for p in points)
    if labels is not None:
        labels = tuple(str(x) for x in labels)
        if len(labels) != len(points):
            raise ConfigError(f"labels name the grid points: got {len(labels)} labels for {len(points)} points")
    return Plan(base=base, grid_axes=names, points=points, seeds=seeds, configs=configs, labels=labels or ())


# --------------------------------------------------------------------------
# Compile accounting and progress.
# --------------------------------------------------------------------------

class CompileCounter:
    """Counts XLA backend compiles (and their seconds) while active."""

    _installed = False
    _active: list["CompileCounter"] = []

    def __init__(self):
        self.count = 0
        self.seconds = 0.0

    @classmethod
    def _listener(cls, name, duration, **_):
        if name == "/jax/core/compile/backend_compile_duration":
            for c in cls._active:
                c.count += 1
                c.seconds += duration

    def __enter__(self):
        if not CompileCounter._installed:
            jax.monitoring.register_event_duration_secs_listener(CompileCounter._listener)
            CompileCounter._installed = True
        CompileCounter._active.append(self)
        return self

    def __exit__(self, *exc):
        CompileCounter._active.remove(self)


class Progress:
    """A one-line progress bar on stderr, redrawn between compiled chunks."""

    def __init__(self, total: int, label: str, enabled: bool):
        self.total, self.label, self.enabled = total, label, enabled
        self.start = time.perf_counter()

    def update(self, done: int, extra: str = ""):
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        frac = done / max(self.total, 1)
        eta = elapsed / frac - elapsed if frac > 0 else float("nan")
        bar = "#" * int(30 * frac) + "." * (30 - int(30 * frac))
        sys.stderr.write(f"\r{self.label} [{bar}] {done}/{self.total} it  {elapsed:6.1f}s"
                         f"  eta {eta:6.1f}s {extra}")
        sys.stderr.flush()

    def close(self):
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


def default_chunk(num_iterations: int, target_chunks: int = 20) -> int:
    """The largest divisor of ``num_iterations`` giving at least ``target_chunks``
    chunks (fewer when the number has no suitable divisor)."""
    limit = max(1, num_iterations // target_chunks)
    return max(d for d in range(1, limit + 1) if num_iterations % d == 0)


# --------------------------------------------------------------------------
# Results.
# --------------------------------------------------------------------------

@dataclasses.dataclass
class RunResult:
    """A finished (or interrupted) sweep: manifest, per-agent metrics, states."""

    manifest: dict
    metrics: Any                     # pandas DataFrame, one row per (agent, iteration)
    path: str | None = None
    final_state: Any = None          # stacked AgentState (leading agent axis), when in memory

    @property
    def agents(self):
        import pandas as pd
        return pd.DataFrame(self.manifest["agents"])

    @property
    def num_agents(self) -> int:
        return len(self.manifest["agents"])

    def curve(self, metric: str) -> np.ndarray:
        """``metric`` as an array [agents, iterations]."""
        if metric not in self.metrics:
            raise KeyError(f"unknown metric {metric!r}; metrics: {', '.join(METRICS)}")
        table = self.metrics.pivot(index="agent", columns="iteration", values=metric)
        return table.to_numpy()

    def config(self, agent: int) -> Config:
        """The full configuration of one agent."""
        row = self.manifest["agents"][agent]
        base = Config.from_dict(self.manifest["base_config"])
        return base.replace(**row["knobs"])

    @property
    def diverged_agents(self) -> list[int]:
        return list(self.manifest.get("diverged_agents", []))


def _versions() -> dict:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for pkg in ("pg_diag", "jax", "jaxlib", "flax", "optax", "chex", "numpy", "mujoco", "mujoco-mjx", "brax",
                "orbax-checkpoint", "pandas", "pyarrow"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def _git_revision() -> str | None:
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        rev = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        return rev.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _physics_info(static) -> dict:
    """The physics backend a run actually used (``auto`` resolved), with its thread count."""
    from importlib import metadata

    from pg_diag.envs import resolve_physics

    backend, threads = resolve_physics(static.task, static.physics, static.physics_threads)
    info = {"requested": static.physics, "backend": backend}
    if backend == "native":
        info.update(threads=threads, mujoco=metadata.version("mujoco"))
    elif backend == "mjx":
        info.update(mujoco_mjx=metadata.version("mujoco-mjx"))
    return info


def _device_info() -> dict:
    devices = jax.devices()
    return {"backend": jax.default_backend(), "count": len(devices),
            "kinds": sorted({d.device_kind for d in devices}), "host": platform.node(),
            "cpu_count": os.cpu_count()}


def _metrics_frame(plan_: Plan, chunks: list[dict], iterations_done: int):
    import pandas as pd

    if not chunks:
        return pd.DataFrame(columns=["agent", "point", "seed", "iteration", "env_steps", *plan_.grid_axes,
                                     *METRICS])
    arrays = {k: np.concatenate([c[k] for c in chunks], axis=1)[:, :iterations_done] for k in chunks[0]}
    n_agents = plan_.num_agents
    iters = np.arange(iterations_done)
    agent_ids = np.repeat(np.arange(n_agents), iterations_done)
    point_of = np.array([p for _, p, _ in plan_.agents()])
    seed_of = np.array([s for _, _, s in plan_.agents()])
    data = {"agent": agent_ids, "point": point_of[agent_ids], "seed": seed_of[agent_ids],
            **({"label": np.array(plan_.labels)[point_of[agent_ids]]} if plan_.labels else {}),
            "iteration": np.tile(iters, n_agents),
            "env_steps": np.tile((iters + 1) * plan_.base.static.batch_size, n_agents)}
    for axis in plan_.grid_axes:
        col = np.array([plan_.points[p].get(axis, getattr(plan_.base.knobs, axis)) for p in point_of])
        data[axis] = col[agent_ids]
    for name in METRICS:
        data[name] = arrays[name][:n_agents].reshape(-1)
    return pd.DataFrame(data)


def _write(path: str, manifest: dict, frame) -> None:
    os.makedirs(path, exist_ok=True)
    tmp = os.path.join(path, METRICS_FILE + ".tmp")
    frame.to_parquet(tmp, index=False)
    os.replace(tmp, os.path.join(path, METRICS_FILE))
    tmp = os.path.join(path, MANIFEST + ".tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=2, default=_json_default)
    os.replace(tmp, os.path.join(path, MANIFEST))


def _json_default(x):
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, tuple):
        return list(x)
    raise TypeError(type(x))


def load_run(path: str) -> RunResult:
    """Load a run directory written by :func:`sweep`."""
    import pandas as pd

    manifest_path = os.path.join(path, MANIFEST)
    if not os.path.exists(manifest_path):
        raise FileNotFoundError(f"{path!r} is not a pg_diag run directory: no {MANIFEST}")
    with open(manifest_path) as f:
        manifest = json.load(f)
    metrics = pd.read_parquet(os.path.join(path, METRICS_FILE))
    return RunResult(manifest=manifest, metrics=metrics, path=path)


def load_checkpoint(run: RunResult):
    """Restore the final stacked :class:`AgentState` saved with ``save_checkpoint=True``."""
    import orbax.checkpoint as ocp

    if run.path is None:
        raise ValueError("this run has no directory")
    ckpt = os.path.abspath(os.path.join(run.path, CHECKPOINT_DIR, "final"))
    if not os.path.exists(ckpt):
        raise FileNotFoundError(f"no checkpoint in {run.path!r}; run the sweep with save_checkpoint=True")
    base = Config.from_dict(run.manifest["base_config"])
    trainer = make_train(base.static)
    knobs = stack_knobs([base.knobs] * run.num_agents)
    keys = jnp.stack([seed_key(0)] * run.num_agents)
    abstract = jax.eval_shape(jax.vmap(trainer.init), keys, knobs)
    return ocp.StandardCheckpointer().restore(ckpt, abstract)


# --------------------------------------------------------------------------
# Running.
# --------------------------------------------------------------------------

def _save_checkpoint(out: str, state, num_agents: int) -> str | None:
    """Save the final stacked agent states with orbax; returns the relative path,
    or None (with a message) if the state is unavailable after an interruption."""
    import orbax.checkpoint as ocp

    ckpt = os.path.abspath(os.path.join(out, CHECKPOINT_DIR, "final"))
    try:
        trimmed = jax.tree.map(lambda x: x[:num_agents], state) if len(jax.tree.leaves(state)[0]) != num_agents \
            else state
        checkpointer = ocp.StandardCheckpointer()
        checkpointer.save(ckpt, trimmed, force=True)
        checkpointer.wait_until_finished()
    except Exception as err:  # noqa: BLE001 - report, never mask the run's own error
        sys.stderr.write(f"warning: could not save the checkpoint to {ckpt}: {err}\n")
        return None
    return os.path.join(CHECKPOINT_DIR, "final")


def _agent_sharding():
    """Sharding of the agent axis across all devices (None on one device)."""
    if jax.device_count() == 1:
        return None
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("agents",))
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("agents"))


def _pad_and_shard(tree, n_agents: int):
    """Pad the agent axis to a multiple of the device count (copies of the last
    agent, dropped afterwards) and place it across the devices."""
    sharding = _agent_sharding()
    if sharding is None:
        return tree, n_agents
    n_dev = jax.device_count()
    padded = math.ceil(n_agents / n_dev) * n_dev
    if padded != n_agents:
        tree = jax.tree.map(lambda x: jnp.concatenate([x, jnp.repeat(x[-1:], padded - n_agents, 0)]), tree)
    return jax.device_put(tree, sharding), padded


#: How agents share a compiled program. "vmap" batches them (the fast path,
#: and the only sensible one on accelerators); "map" loops over them inside the
#: program, so each agent's arithmetic is exactly that of a run alone.
AGENT_BATCHING = ("vmap", "map")


def _over_agents(fn, batching: str):
    if batching == "vmap":
        return jax.vmap(fn)
    return lambda *args: jax.lax.map(lambda a: fn(*a), args)


@functools.lru_cache(maxsize=32)
def compiled_programs(static, n_agents: int, chunk: int, batching: str = "vmap"):
    """The two compiled programs of a sweep: ``init`` and a chunk of ``chunk``
    iterations, over ``n_agents`` agents. Cached, so repeating a sweep of the
    same shape (in a notebook, say) does not compile again."""
    trainer = make_train(static)
    sharding = _agent_sharding()
    keys = jax.ShapeDtypeStruct((n_agents,) + seed_key(0).shape, seed_key(0).dtype, sharding=sharding)
    knobs = {name: jax.ShapeDtypeStruct((n_agents,), jnp.bool_ if name in BOOL_KNOBS else jnp.float32,
                                        sharding=sharding) for name in KNOB_NAMES}
    init_fn = jax.jit(_over_agents(trainer.init, batching))
    chunk_fn = jax.jit(lambda s, k: trainer.run_agents(s, k, chunk, batching), donate_argnums=0)
    init_c = init_fn.lower(keys, knobs).compile()
    chunk_c = chunk_fn.lower(jax.eval_shape(init_fn, keys, knobs), knobs).compile()
    return init_c, chunk_c


def sweep(base: Config, grid: Mapping[str, Sequence] | Sequence[Mapping] | None = None,
          seeds: int | Sequence[int] = 1, out: str | None = None, *, progress: bool | None = None,
          chunk_iterations: int | None = None, save_checkpoint: bool = False,
          label: str | None = None, batching: str = "vmap", labels: Sequence[str] | None = None) -> RunResult:
    """Train every (grid point × seed) agent of ``base`` as one compiled program.

    Returns a :class:`RunResult`; with ``out`` it also writes the run
    directory (``manifest.json``, ``metrics.parquet`` and, with
    ``save_checkpoint``, an orbax checkpoint of the final agent states),
    refreshed after every chunk so an interrupted run keeps what it computed.

    ``batching="vmap"`` (default) vectorizes the agents; each agent's numbers
    then equal a run alone up to float32 rounding, because XLA may pick
    different kernels for different batch sizes. ``batching="map"`` loops
    over agents inside the same compiled program: every agent is bitwise
    identical to the same configuration and seed run alone (with "map"),
    at some cost in speed.
    """
    p = plan(base, grid, seeds, labels)
    static = base.static
    if chunk_iterations is None:
        chunk_iterations = default_chunk(static.num_iterations)
    if isinstance(chunk_iterations, bool) or not isinstance(chunk_iterations, int) or chunk_iterations < 1:
        raise ConfigError(f"chunk_iterations must be a positive int, got {chunk_iterations!r}")
    chunk_iterations = min(chunk_iterations, static.num_iterations)
    if save_checkpoint and out is None:
        raise ConfigError("save_checkpoint=True needs an output directory (out=...)")
    if batching not in AGENT_BATCHING:
        raise ConfigError(f"unknown batching {batching!r}; choose one of: {', '.join(AGENT_BATCHING)}")
    if progress is None:
        progress = sys.stderr.isatty()

    knob_list = [cfg.knobs for cfg in p.configs for _ in p.seeds]
    agents_table = [{"agent": a, "point": pi, "seed": s, "knobs": p.points[pi],
                     **({"label": p.labels[pi]} if p.labels else {})} for a, pi, s in p.agents()]
    manifest = {
        "format": "pg_diag.run/1",
        "label": label or base.name,
        "status": "compiling",
        "base_config": base.to_dict(),
        "grid_axes": list(p.grid_axes),
        "grid_points": list(p.points),
        "labels": list(p.labels),
        "seeds": list(p.seeds),
        "agents": agents_table,
        "num_agents": p.num_agents,
        "metrics": METRICS,
        "versions": _versions(),
        "git_revision": _git_revision(),
        "device": _device_info(),
        "command": " ".join(sys.argv),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "chunk_iterations": chunk_iterations,
        "batching": batching,
        "physics": _physics_info(static),
    }

    knobs = stack_knobs(knob_list)
    keys = jax.device_put(np.stack([np.asarray(seed_key(s)) for _, _, s in p.agents()]))
    (keys, knobs), n_padded = _pad_and_shard((keys, knobs), p.num_agents)

    t_start = time.perf_counter()
    with CompileCounter() as counter:
        init_c, chunk_c = compiled_programs(static, n_padded, chunk_iterations, batching)
        t_compiled = time.perf_counter()
        state = init_c(keys, knobs)

        done, chunks, bar = 0, [], Progress(static.num_iterations, manifest["label"], progress)
        manifest["status"] = "running"
        status = "interrupted"
        try:
            while done < static.num_iterations:
                n = min(chunk_iterations, static.num_iterations - done)
                if n == chunk_iterations:
                    state, metrics = chunk_c(state, knobs)
                else:  # a shorter final chunk compiles once more
                    state, metrics = compiled_programs(static, n_padded, n, batching)[1](state, knobs)
                chunks.append({k: v.T for k, v in jax.device_get(metrics).items()})  # -> [agents, iterations]
                done += n
                ret = np.nanmean(chunks[-1]["mean_return"][:p.num_agents, -1]) \
                    if np.isfinite(chunks[-1]["mean_return"][:p.num_agents, -1]).any() else float("nan")
                bar.update(done, f" return {ret:9.2f}")
                if out is not None and done < static.num_iterations:
                    _write(out, {**manifest, "iterations_done": done},
                           _metrics_frame(p, chunks, done))
            status = "complete"
        finally:
            bar.close()
            t_end = time.perf_counter()
            diverged = []
            if chunks:
                flag = np.concatenate([c["diverged"] for c in chunks], axis=1)[:p.num_agents]
                diverged = [int(a) for a in np.nonzero(flag.any(axis=1))[0]]
            manifest.update({
                "status": status, "iterations_done": done, "diverged_agents": diverged,
                "timings": {"compile_s": t_compiled - t_start, "run_s": t_end - t_compiled,
                            "total_s": t_end - t_start, "compiles": counter.count,
                            "compile_backend_s": counter.seconds,
                            "env_steps": done * static.batch_size * p.num_agents,
                            "env_steps_per_s": done * static.batch_size * p.num_agents
                            / max(t_end - t_compiled, 1e-9)}})
            frame = _metrics_frame(p, chunks, done)
            if out is not None:
                if save_checkpoint and done > 0:
                    manifest["checkpoint"] = _save_checkpoint(out, state, p.num_agents)
                _write(out, manifest, frame)
    if diverged:
        sys.stderr.write(f"warning: {len(diverged)} of {p.num_agents} agents diverged (non-finite parameters "
                         f"or losses): agents {diverged[:20]}{' ...' if len(diverged) > 20 else ''}\n")
    final = state if n_padded == p.num_agents else jax.tree.map(lambda x: x[:p.num_agents], state)
    return RunResult(manifest=manifest, metrics=frame, path=out, final_state=final)


def train(config: Config, seed: int = 0, out: str | None = None, **kwargs) -> RunResult:
    """Train one agent: a sweep of one configuration and one seed."""
    return sweep(config, None, seeds=[seed], out=out, **kwargs)
