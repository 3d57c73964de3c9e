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
                 physics: str = "native") -> None:
    """Record a study program's measured milliseconds per costed step
    ([`costed_steps`][pgdiag.run.timings.costed_steps]; its run, compiling excluded), replacing an earlier row of
    the same identity and width."""
    _keep({**study_identity(study, task, model, solver, physics), "width": int(width),
           "ms_per_step": float(ms_per_step)})


def _keep(row: dict, replace: bool = True) -> None:
    from pgdiag.envs import hosts

    if hosts.declared():   # measured here, not there
        return
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


def here() -> list[dict]:
    """The rows recorded on this host, or a declared host's ([`pgdiag.envs.hosts`][pgdiag.envs.hosts])."""
    from pgdiag.envs import hosts

    host = hosts.declared()
    return list(host.costs) if host else list(_load()["hosts"].get(host_key(), []))


def _rows(want: dict) -> list[tuple[int, float]]:
    rows = [r for r in here() if all(r.get(k) == v for k, v in want.items())
            and ("study" in r) == ("study" in want)]
    return sorted((int(r["width"]), float(r["ms_per_step"])) for r in rows)


def recorded(static) -> list[tuple[int, float]]:
    """(width, ms per batched step) recorded on this host for programs like ``static``, sorted by width."""
    return _rows(identity(static))


def recorded_study(study: str, task: str, model: str, solver: str, physics: str = "native") -> list[tuple[int, float]]:
    """(width, ms per sequential step) recorded on this host for ``study``'s programs on ``task`` stepping
    ``physics``, by width."""
    return _rows(study_identity(study, task, model, solver, physics))
