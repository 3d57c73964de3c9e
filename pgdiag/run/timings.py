"""What training costs on this host, learned from its own runs: every sweep records its time per batched step
(compiling excluded) and plans read it back.

A plan costed from physics alone multiplies MuJoCo's step by a fixed allowance for the policy, the filters
and the update; on hosts unlike the one that allowance was measured on, that put paper-scale programs at
1.3–6× their real length. A training program's own time per step is the sum the plan needs — physics, the
fixed cost of a step, the update spread over the iteration's steps — so a sweep's finished chunks after its
first (whose time carries the first call's costs) are recorded here, per host (device, cores, versions) and
per what sets the cost: task, model, solver, algorithm, steps per environment and the batch one step moves
(all agents × environments).

Kept in ``$PGDIAG_CACHE/training.json`` (default ``~/.cache/pgdiag``), beside the physics measurements.
"""

from __future__ import annotations

import json
import os

FILE = "training.json"


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


def record(static, width: int, ms_per_step: float, replace: bool = True) -> None:
    """Record one program's measured time per batched step, replacing an earlier row of the same identity and
    width (with ``replace=False`` only adding one where there is none: a run of one chunk, whose time carries
    the first call's costs, does not replace a later chunk's). An unwritable cache costs the plan its
    estimate, nothing else."""
    row = {**identity(static), "width": int(width), "ms_per_step": float(ms_per_step)}
    data = _load()
    key = host_key()
    same = {k: v for k, v in row.items() if k != "ms_per_step"}
    kept = [r for r in data["hosts"].get(key, []) if {k: r.get(k) for k in same} != same]
    if not replace and len(kept) < len(data["hosts"].get(key, [])):
        return
    data["hosts"][key] = kept + [row]
    target = path()
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = f"{target}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, target)
    except OSError:
        pass


def recorded(static) -> list[tuple[int, float]]:
    """(width, ms per batched step) recorded on this host for programs like ``static``, sorted by width."""
    want = identity(static)
    rows = [r for r in _load()["hosts"].get(host_key(), []) if all(r.get(k) == v for k, v in want.items())]
    return sorted((int(r["width"]), float(r["ms_per_step"])) for r in rows)
