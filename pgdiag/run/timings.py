"""What training and measuring cost on this host, learned from its own runs: every sweep records its time per
batched step (compiling excluded), every study program its time per sequential step, and plans read them back.

A plan costed from physics alone multiplies MuJoCo's step by a fixed allowance for the policy, the filters
and the update; on hosts unlike the one that allowance was measured on, that put paper-scale programs at
1.3–6× their real length. A training program's own time per step is the sum the plan needs — physics, the
fixed cost of a step, the update spread over the iteration's steps — so a sweep's finished chunks after its
first (whose time carries the first call's costs) are recorded here, per host (device, cores, versions) and
per what sets the cost: task, model, solver, algorithm, steps per environment and the batch one step moves
(all agents × environments). A study program's rows are keyed by the measurement (``study``), task, model,
solver and width ([`record_study`][pgdiag.run.timings.record_study]).

Recorded costs make plans better, never worse. A row belongs to the code that measured it (a digest of pgdiag's
source, [`code_digest`][pgdiag.run.timings.code_digest]: another version's costs are not read); it keeps the last
[`SAMPLES`][pgdiag.run.timings.SAMPLES] timings of its program and plans read their least (contention only ever
slows a run down); and a run during which other processes kept more than
[`LOADED`][pgdiag.run.timings.LOADED] of the host's cores busy ([`load_meter`][pgdiag.run.timings.load_meter]) is
not recorded at all — for a training, chunk by chunk: a long run records what its chunks with the host to
themselves cost, however busy the host was in its other hours.

Kept in ``$PGDIAG_CACHE/training.json`` (default ``~/.cache/pgdiag``), beside the physics measurements.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time

FILE = "training.json"
#: timings kept per program (identity and width); plans read the least of them
SAMPLES = 5
#: the share of the host's cores other processes may have kept busy during a run whose time is still recorded
LOADED = 0.25


def path() -> str:
    root = os.environ.get("PGDIAG_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "pgdiag")
    return os.path.join(root, FILE)


def host_key() -> str:
    from importlib import metadata

    import jax

    d = jax.devices()[0]
    cpus = f" | {len(jax.devices('cpu'))} CPU devices" if d.platform != "cpu" else ""  # a split run's blocks
    return (f"{d.platform}:{d.device_kind} x {jax.device_count()}{cpus} | {os.cpu_count()} cores | "
            f"jax {jax.__version__}, mujoco {metadata.version('mujoco')}")


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """A digest of pgdiag's source (every ``.py`` and ``.cc`` file under the package, by path and content): a
    recorded cost belongs to the code that ran it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256()
    for folder, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(f for f in files if f.endswith((".py", ".cc"))):
            full = os.path.join(folder, name)
            h.update(os.path.relpath(full, root).encode())
            with open(full, "rb") as f:
                h.update(f.read())
    return h.hexdigest()[:16]


def _busy_seconds() -> float | None:
    """Seconds the host's cores have spent busy since boot (Linux's /proc/stat; None elsewhere)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


#: this process's CPU seconds (all its threads), wall seconds and the host's cores, as the load meter reads them
_clocks = {"own": time.process_time, "wall": time.monotonic, "cores": lambda: os.cpu_count() or 1}


def load_meter():
    """Start measuring what other processes take of the host: the returned function gives the share of the host's
    cores they kept busy since (busy time not this process's, over wall time × cores), or None where the host does
    not say (not Linux)."""
    busy0, own0, wall0 = _busy_seconds(), _clocks["own"](), _clocks["wall"]()

    def others() -> float | None:
        busy, wall = _busy_seconds(), _clocks["wall"]() - wall0
        if busy is None or busy0 is None or wall <= 0:
            return None
        theirs = (busy - busy0) - (_clocks["own"]() - own0)
        return max(0.0, theirs) / (wall * _clocks["cores"]())

    return others


def loaded(others: float | None) -> bool:
    """Whether a run others shared this much of the host with (``load_meter``'s reading) ran under load."""
    return others is not None and others > LOADED


def identity(static) -> dict:
    """What a training step's cost depends on besides the batch (the program's static settings)."""
    return {"task": static.task, "model": static.model, "solver": static.solver, "algorithm": static.algorithm,
            "steps_per_env": static.steps_per_env}


def _load() -> dict:
    try:
        with open(path()) as f:
            data = json.load(f)
        return data if isinstance(data, dict) and isinstance(data.get("hosts"), dict) else {"hosts": {}}
    except (OSError, ValueError):
        return {"hosts": {}}


def record(static, width: int, ms_per_step: float, replace: bool = True, others: float | None = None) -> None:
    """Record one program's measured time per batched step among its last timings (with ``replace=False`` only
    where it has none yet: a run of one chunk, whose time carries the first call's costs, does not join a later
    chunk's). ``others``: the share of the host other processes took meanwhile; a run under load is not recorded.
    An unwritable cache costs the plan its estimate, nothing else."""
    if not loaded(others):
        _keep({**identity(static), "width": int(width), "ms_per_step": float(ms_per_step)}, replace)


def study_identity(study: str, task: str, model: str, solver: str, physics: str) -> dict:
    """What a study program's cost per sequential step depends on besides its width (``physics``: the backend it
    stepped, "auto" of a pure-JAX task as it is)."""
    return {"study": study, "task": task, "model": model, "solver": solver, "physics": physics}


def costed_steps(sequential_steps: int, pairs: int, width: int) -> int:
    """The batched steps a study program is costed by: its sequential steps, or as many steps of its width as its
    pairs take where that is more (a baseline study fits V* on lanes wider than its streams, a surrogate landscape
    samples its step batches beside its grid; counted by their sequential steps alone, the mid baselines were
    planned 3.7× short)."""
    return max(int(sequential_steps), -(-int(pairs) // max(int(width), 1)))


def record_study(study: str, task: str, model: str, solver: str, width: int, ms_per_step: float,
                 physics: str = "native", others: float | None = None) -> None:
    """Record a study program's measured milliseconds per costed step
    ([`costed_steps`][pgdiag.run.timings.costed_steps]; its run, compiling excluded) among its program's last
    timings; not a run under load (``others``, as in [`record`][pgdiag.run.timings.record])."""
    if not loaded(others):
        _keep({**study_identity(study, task, model, solver, physics), "width": int(width),
               "ms_per_step": float(ms_per_step)})


def _keep(row: dict, replace: bool = True) -> None:
    from pgdiag.envs import hosts

    if hosts.declared():   # measured here, not there
        return
    data = _load()
    key = host_key()
    same = {k: v for k, v in row.items() if k != "ms_per_step"}
    rows = data["hosts"].get(key, [])
    kept = [r for r in rows if {k: r.get(k) for k in same} != same]
    mine = [r for r in rows if {k: r.get(k) for k in same} == same and r.get("code") == code_digest()]
    if not replace and mine:
        return
    samples = ([float(x) for x in mine[0].get("samples", [mine[0]["ms_per_step"]])] if mine else [])
    samples = (samples + [row["ms_per_step"]])[-SAMPLES:]
    data["hosts"][key] = kept + [{**row, "ms_per_step": min(samples), "samples": samples, "code": code_digest()}]
    target = path()
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = f"{target}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, target)
    except OSError:
        pass


def here() -> list[dict]:
    """The rows recorded on this host, or a declared host's ([`pgdiag.envs.hosts`][pgdiag.envs.hosts])."""
    from pgdiag.envs import hosts

    host = hosts.declared()
    return list(host.costs) if host else list(_load()["hosts"].get(host_key(), []))


def _rows(want: dict) -> list[tuple[int, float]]:
    from pgdiag.envs import hosts

    mine = hosts.declared() is None   # this host's rows: only those of the code running now
    rows = [r for r in here() if all(r.get(k) == v for k, v in want.items())
            and ("study" in r) == ("study" in want) and (not mine or r.get("code") == code_digest())]
    return sorted((int(r["width"]), float(r["ms_per_step"])) for r in rows)


def recorded(static) -> list[tuple[int, float]]:
    """(width, ms per batched step) recorded on this host for programs like ``static``, sorted by width."""
    return _rows(identity(static))


def recorded_study(study: str, task: str, model: str, solver: str, physics: str = "native") -> list[tuple[int, float]]:
    """(width, ms per sequential step) recorded on this host for ``study``'s programs on ``task`` stepping
    ``physics``, by width."""
    return _rows(study_identity(study, task, model, solver, physics))
