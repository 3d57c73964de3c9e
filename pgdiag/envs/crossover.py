"""``physics="auto"`` by workload: the backend that steps a given batch faster on this host.

Native MuJoCo's batched step grows with the batch (the host's cores integrate
every environment), while MJX's costs nearly the same from a few hundred to a
few thousand environments on an accelerator. So on an accelerator host narrow
batches (the papers' one environment per agent) can step faster on native
MuJoCo and wide ones on MJX; where they cross depends on the task, the
solver setting, the accelerator and the host's cores, so it is measured,
never assumed:

* measurements are rows ``{task, solver, batch, native_ms, mjx_ms[, warp_ms]}`` per host (device kind, cores, thread
  count, library versions and the native step's build: [`host_key`][pgdiag.envs.crossover.host_key]), kept in
  ``$PGDIAG_CACHE/crossover.json`` (default ``~/.cache/pgdiag``). ``benchmarks/bench_crossover.py --record`` fills
  it over a grid of batches;
* a batch is decided by a row at that batch or by the two rows around it
  when they agree ([`decide`][pgdiag.envs.crossover.decide]);
* a batch the rows cannot decide on an accelerator is measured on the spot
  (one batched step of each backend at that batch, [`measure`][pgdiag.envs.crossover.measure]) and
  recorded. A CPU host without rows uses native MuJoCo, measured faster there
  at every batch from 4 to 256 environments with the converged solver
  (1.9-30×) and from 64 with the fast one; where MJX's fast solver wins (a
  few environments, by ≤ 1.5× per step), compiling MJX costs more than the
  run saves (docs/reference/tasks-and-physics.md, `bench_crossover.py`).

On several processes process 0 decides and every process takes its answer, so
all of them compile the same program.
"""

from __future__ import annotations

import json
import os
import time

BACKENDS = ("native", "mjx", "warp")
NAMES = {"native": "native", "mjx": "MJX", "warp": "Warp"}


def cache_path() -> str:
    root = os.environ.get("PGDIAG_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "pgdiag")
    return os.path.join(root, "crossover.json")


def host_key(threads: int) -> str:
    """What a measurement depends on besides the task, solver and batch."""
    from importlib import metadata

    import jax

    from pgdiag.envs import native_ffi

    d = jax.devices()[0]
    return (f"{d.platform}:{d.device_kind} | {os.cpu_count()} cores, {threads} physics threads | "
            f"jax {jax.__version__}, mujoco {metadata.version('mujoco')}, mujoco-mjx {metadata.version('mujoco-mjx')}"
            f" | native step: {native_ffi.stepper_id()}")


def load(key: str, path: str | None = None) -> list[dict]:
    """The rows recorded for ``key`` (none if the file is absent or unreadable)."""
    try:
        with open(path or cache_path()) as f:
            return list(json.load(f).get("hosts", {}).get(key, []))
    except (OSError, ValueError, AttributeError):
        return []


def rows_here(threads: int) -> list[dict]:
    """The rows recorded on this host with ``threads`` physics threads, or a declared host's
    ([`pgdiag.envs.hosts`][pgdiag.envs.hosts]: a plan made for another host reads its profile)."""
    from pgdiag.envs import hosts

    host = hosts.declared()
    return list(host.physics.get(int(threads), [])) if host else load(host_key(threads))


def recorded_here(path: str | None = None) -> dict:
    """Physics threads -> the rows this host recorded with that many (what a host profile carries,
    [`pgdiag.envs.hosts`][pgdiag.envs.hosts])."""
    import re

    try:
        with open(path or cache_path()) as f:
            keys = list(json.load(f).get("hosts", {}))
    except (OSError, ValueError, AttributeError):
        return {}
    threads = {int(m.group(1)) for k in keys if (m := re.search(r", (\d+) physics threads \|", k))}
    return {t: rows for t in sorted(threads) if (rows := load(host_key(t), path))}


def record(key: str, rows: list[dict], path: str | None = None) -> str:
    """Add ``rows`` to ``key``'s (a row replaces an earlier one of the same task, model, solver and batch);
    written whole to a temporary file and moved into place. Returns the path. Nothing is written while a plan is made
    for another host ([`pgdiag.envs.hosts`][pgdiag.envs.hosts]: its measurements are not this host's)."""
    from pgdiag.envs import hosts

    path = path or cache_path()
    if hosts.declared():
        return path
    try:
        with open(path) as f:
            data = json.load(f)
        data.setdefault("hosts", {})
    except (OSError, ValueError, AttributeError):
        data = {"hosts": {}}

    def ident(r):
        return r["task"], r.get("model", "brax"), r["solver"], r["batch"]

    new = {ident(r) for r in rows}
    kept = [r for r in data["hosts"].get(key, []) if ident(r) not in new]
    data["hosts"][key] = sorted(kept + [dict(r) for r in rows], key=ident)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)
    return path


def faster(row: dict) -> str:
    """The fastest backend a row measured (MJX before native at a tie, as before Warp was measured)."""
    timed = [(row[f"{b}_ms"], i) for i, b in enumerate(("mjx", "native", "warp")) if row.get(f"{b}_ms") is not None]
    return ("mjx", "native", "warp")[min(timed)[1]]


def _costs(row: dict) -> str:
    return ", ".join(f"{NAMES[b]} {row[f'{b}_ms']:.3g} ms" for b in BACKENDS if row.get(f"{b}_ms") is not None)


def backends_here() -> tuple:
    """The backends a measurement times on this host: MuJoCo Warp only where it is installed and an
    accelerator runs it (on a CPU its LLVM-compiled kernels are for checking, not speed)."""
    import jax

    from pgdiag.envs.mujoco_physics import warp_unavailable

    warp = not warp_unavailable() and jax.default_backend() != "cpu"
    return BACKENDS if warp else BACKENDS[:2]


def decide(rows: list[dict], task: str, solver: str, batch: int, model: str = "brax") -> tuple[str, str] | None:
    """The backend for ``batch`` from measured rows, with the rows that decided it, or None when they
    cannot: a row at this batch decides, and so do the nearest rows below and above when they agree.
    Nothing is extrapolated past the measured batches: on a CPU, MJX with the fast solver wins at a
    few environments and loses from 64 (docs/reference/tasks-and-physics.md), so neither backend's lead is
    monotone everywhere."""
    mine = sorted((r for r in rows if r["task"] == task and r["solver"] == solver
                   and r.get("model", "brax") == model), key=lambda r: r["batch"])

    def why(r):
        return f"batch {r['batch']:,}: {_costs(r)} per step"

    at = [r for r in mine if r["batch"] == batch]
    if at:
        return faster(at[-1]), f"measured at {why(at[-1])}"
    below = [r for r in mine if r["batch"] < batch][-1:]
    above = [r for r in mine if r["batch"] > batch][:1]
    if below and above and faster(below[0]) == faster(above[0]):
        return faster(below[0]), f"measured around it ({why(below[0])}; {why(above[0])})"
    return None


def fullest_batch(rows: list[dict], task: str, solver: str, backend: str, model: str = "brax",
                  reaching: int = 0) -> int | None:
    """The recorded batch at which ``backend`` steps the most environments per millisecond on this host (None
    without rows of it, or where they stop below ``reaching``): where an accelerator's batched step stops costing
    about the same however wide it is."""
    mine = [r for r in rows if r["task"] == task and r["solver"] == solver and r.get("model", "brax") == model
            and r.get(f"{backend}_ms")]
    if not mine or max(r["batch"] for r in mine) < reaching:
        return None
    return int(max(mine, key=lambda r: (r["batch"] / r[f"{backend}_ms"], -r["batch"]))["batch"])


def step_ms(task: str, backend: str, threads: int, solver: str, batch: int, steps: int = 16,
            repeats: int = 2, model: str = "brax") -> float:
    """Milliseconds per batched step of ``batch`` environments on ``backend`` (a ``physics`` value;
    random actions from reset states, the best of ``repeats`` or more timings of ``steps`` steps, at least
    [`MIN_TIMED_S`][pgdiag.envs.crossover.MIN_TIMED_S] of them, compiling excluded). Native physics is timed in a
    program compiled for the host's CPU, where training steps it
    (on an accelerator host, ``placement='split'``: [`pgdiag.run.split`][pgdiag.run.split])."""
    import contextlib

    import jax

    from pgdiag import envs

    env = envs.make(task, backend, threads, solver, model)
    place = jax.default_device(jax.devices("cpu")[0]) if backend == "native" else contextlib.nullcontext()
    with place:
        return _time_steps(env, batch, steps, repeats)


#: the least time a step measurement spends timing (its repeats continue until both this and ``repeats`` are
#: reached): 2 × 16 steps of one Hopper took 0.6 ms, where a busy host's scheduling moved two dry runs' plans of
#: the same program 4× apart
MIN_TIMED_S = 0.25


def _time_steps(env, batch: int, steps: int, repeats: int, min_s: float = MIN_TIMED_S) -> float:
    """The best of at least ``repeats`` timings of ``steps`` chained steps, repeated until ``min_s`` seconds were
    timed (at most 1,000 calls): the minimum over many short calls is what the host's contention leaves alone."""
    import jax

    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), batch))

    @jax.jit
    def run(s, key):
        def body(s, k):
            a = jax.random.uniform(k, (batch, env.action_size), minval=-1.0, maxval=1.0)
            return jax.vmap(env.step)(s, a), None
        return jax.lax.scan(body, s, jax.random.split(key, steps))[0]

    key = jax.random.PRNGKey(1)
    jax.block_until_ready(run(states, key))
    best, spent, calls = float("inf"), 0.0, 0
    while calls < repeats or (spent < min_s and calls < 1000):
        t = time.perf_counter()
        jax.block_until_ready(run(states, key))
        took = time.perf_counter() - t
        best, spent, calls = min(best, took), spent + took, calls + 1
    return 1e3 * best / steps


def measure(task: str, solver: str, batch: int, threads: int, steps: int = 16, repeats: int = 2,
            model: str = "brax", backends: tuple | None = None) -> dict:
    """[`step_ms`][pgdiag.envs.crossover.step_ms] of each backend at ``batch`` (``backends``, default
    [`backends_here`][pgdiag.envs.crossover.backends_here]): a row for
    [`record`][pgdiag.envs.crossover.record]."""
    row = {"task": task, "solver": solver, "batch": int(batch), "steps": steps}
    if model != "brax":  # rows without a model are Brax's (as recorded before models existed)
        row["model"] = model
    for backend in backends or backends_here():
        row[f"{backend}_ms"] = step_ms(task, backend, threads, solver, batch, steps, repeats, model)
    return row


def choose(task: str, solver: str, batch: int, threads: int, model: str = "brax") -> tuple[str, str]:
    """``auto``'s backend for a MuJoCo task stepping ``batch`` environments per batched step on each
    device, and why (for the manifest)."""
    import jax

    if jax.process_count() == 1:
        return _choose_here(task, solver, batch, threads, model)
    from jax.experimental import multihost_utils

    backend, reason = _choose_here(task, solver, batch, threads, model) if jax.process_index() == 0 else ("native", "")
    pick = int(multihost_utils.broadcast_one_to_all(BACKENDS.index(backend)))
    return BACKENDS[pick], reason or f"chosen by process 0 ({BACKENDS[pick]})"


def recorded_choice(task: str, solver: str, batch: int, threads: int, model: str = "brax") -> tuple[str, str] | None:
    """[`decide`][pgdiag.envs.crossover.decide] from this host's recorded rows (nothing timed): what ``auto`` takes
    before measuring."""
    return decide(rows_here(threads), task, solver, batch, model)


def _choose_here(task, solver, batch, threads, model="brax"):
    from pgdiag.envs import hosts

    decided = recorded_choice(task, solver, batch, threads, model)
    if decided:
        where = hosts.declared().source if hosts.declared() else cache_path()
        return decided[0], f"{decided[1]} on this host ({where})"
    if hosts.declared():   # a plan for another host times nothing here
        return "native", "no measurement at this batch in the declared host's profile: native MuJoCo"
    if hosts.backend() == "cpu":
        return "native", (f"CPU host without physics measurements at {threads} thread(s): native MuJoCo (the "
                          "faster backend on CPUs)")
    return measure_and_record(task, solver, batch, threads, model)


def measure_and_record(task: str, solver: str, batch: int, threads: int, model: str = "brax") -> tuple[str, str]:
    """[`measure`][pgdiag.envs.crossover.measure] at ``batch``, recorded for this host: the faster backend and why.
    Said before it starts: compiling every backend's step takes from seconds to minutes (MJX's RK4 Gym models the
    longest)."""
    print(f"pgdiag: physics=auto times {', '.join(backends_here())} on {task} ({model}'s model, {solver}) at "
          f"{batch:,} environments; recorded for this host in {cache_path()}", flush=True)
    row = measure(task, solver, batch, threads, model=model)
    try:
        record(host_key(threads), [row])
    except OSError as e:  # an unwritable cache costs a measurement next time, nothing else
        print(f"pgdiag: could not record the physics measurement in {cache_path()}: {e}", flush=True)
    return faster(row), f"measured now at batch {batch:,}: {_costs(row)} per step"
