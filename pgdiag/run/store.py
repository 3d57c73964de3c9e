"""The run directory: manifest, metrics table, checkpoints, and reading them back.

    RUN_DIR/manifest.json        configuration, grid, seeds, agents, versions, device, timings, status
    RUN_DIR/metrics.parquet      one row per (agent, iteration) RUN_DIR/checkpoints/<k>/     every agent's full
    state after iteration k (orbax; [`checkpoints`][pgdiag.run.checkpoints])

Every file is written whole and renamed into place (orbax does the same for
its directories), so a crash never leaves a half-written manifest, table or
checkpoint. The manifest is written last: it is the record of what the
directory holds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from typing import Any

import numpy as np

from pgdiag.config import Config, ConfigError
from pgdiag.run.rosters import Roster
from pgdiag.metrics import METRICS, metrics_of

MANIFEST = "manifest.json"
METRICS_FILE = "metrics.parquet"
CHECKPOINTS = "checkpoints"
FORMAT = "pgdiag.run/2"


class RunDirError(ConfigError):
    """A run directory that cannot be written, is taken, or holds a file that cannot be read: one line
    naming the path, what is wrong and what to do."""


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return (text[0] if text else type(err).__name__)[:200]


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
            raise KeyError(f"unknown metric {metric!r}; metrics: {', '.join(self.manifest.get('metrics', METRICS))}")
        table = self.metrics.pivot(index="agent", columns="iteration", values=metric)
        return table.to_numpy()

    def config(self, agent: int) -> Config:
        """The full configuration of one agent (an index in 0 … num_agents − 1)."""
        agents = self.manifest["agents"]
        if isinstance(agent, bool) or not isinstance(agent, (int, np.integer)) or not 0 <= agent < len(agents):
            raise IndexError(f"agent must be an index in 0 … {len(agents) - 1} (the run's {len(agents)} agents), "
                             f"got {agent!r}")
        row = agents[agent]
        return Config.from_dict(self.manifest["base_config"]).replace(**row["knobs"])

    @property
    def diverged_agents(self) -> list[int]:
        return list(self.manifest.get("diverged_agents", []))

    @property
    def checkpoints(self) -> list[int]:
        """Iterations with a saved checkpoint (the kept ones and the latest)."""
        return saved_iterations(self.path) if self.path else []


def saved_iterations(path: str) -> list[int]:
    """Iterations with a complete checkpoint in the run directory ``path`` (orbax's temporary directories
    excluded)."""
    root = os.path.join(path, CHECKPOINTS)
    if not os.path.isdir(root):
        return []
    return sorted(int(d) for d in os.listdir(root) if d.isdigit() and os.path.isdir(os.path.join(root, d)))


# --- the manifest ------------------------------------------------------------------

def read_manifest(path: str) -> dict:
    manifest_path = os.path.join(path, MANIFEST)
    if not os.path.isfile(manifest_path):
        raise FileNotFoundError(f"{path!r} is not a pgdiag run directory: it has no {MANIFEST}")
    try:
        with open(manifest_path) as f:
            manifest = json.load(f)
    except (ValueError, UnicodeDecodeError, RecursionError) as err:   # RecursionError: nested too deep to parse
        raise RunDirError(f"{manifest_path} cannot be read ({_first_line(err)}): the file is damaged "
                          f"(truncated or edited); restore it from a copy, or train the run again with "
                          f"the command it records") from None
    if not isinstance(manifest, dict):
        raise RunDirError(f"{manifest_path} is not a pgdiag manifest (a JSON {type(manifest).__name__}, "
                          f"not an object)")
    return manifest


def requested_config(manifest: dict) -> dict:
    """The base configuration as it was asked for, as [`Config.to_dict`][pgdiag.config.schema.Config.to_dict]
    writes it today (an earlier manifest's flat record is read through
    [`Config.from_dict`][pgdiag.config.schema.Config.from_dict]): the manifest's ``base_config`` names the physics
    backend the run used, ``physics.requested`` what was asked (``auto``)."""
    base = json.loads(json.dumps(manifest["base_config"]))
    requested = (manifest.get("physics") or {}).get("requested")
    if requested and "static" in base:
        base["static"]["physics"] = requested
    return json.loads(json.dumps(Config.from_dict(base).to_dict()))


def plan_from_manifest(manifest: dict) -> Roster:
    """The [`Roster`][pgdiag.run.rosters.Roster] a run directory was made from."""
    from pgdiag.run.rosters import roster

    base = Config.from_dict(manifest["base_config"])
    return roster(base, manifest["grid_points"] or None, manifest["seeds"], manifest.get("labels") or None)


# --- metrics --------------------------------------------------------------------------

def metrics_frame(plan_: Roster, history: dict):
    """The tidy metrics table from ``history`` ({metric: [agents, iterations]})."""
    import pandas as pd

    done = history["mean_return"].shape[1] if history else 0
    if not done:
        return pd.DataFrame(columns=["agent", "point", "seed", "iteration", "env_steps", *plan_.grid_axes,
                                     *metrics_of(plan_.base.static.algorithm)])
    n_agents = plan_.num_agents
    iters = np.arange(done)
    agent_ids = np.repeat(np.arange(n_agents), done)
    point_of = np.array([p for _, p, _ in plan_.agents()])
    seed_of = np.array([s for _, _, s in plan_.agents()])
    data = {"agent": agent_ids, "point": point_of[agent_ids], "seed": seed_of[agent_ids],
            **({"label": np.array(plan_.labels)[point_of[agent_ids]]} if plan_.labels else {}),
            "iteration": np.tile(iters, n_agents),
            "env_steps": np.tile((iters + 1) * plan_.base.static.batch_size, n_agents)}
    for axis in plan_.grid_axes:
        col = np.array([plan_.points[p].get(axis, getattr(plan_.base, axis)) for p in point_of])
        data[axis] = col[agent_ids]
    for name in history:   # the shared metrics, then the algorithm's own, in the order the run records them
        data[name] = history[name].reshape(-1)
    return pd.DataFrame(data)


def history_from_frame(frame, num_agents: int, iterations: int, names=METRICS) -> dict:
    """The inverse of [`metrics_frame`][pgdiag.run.store.metrics_frame] for the first ``iterations`` iterations
    (``names``: the run's metrics, `pgdiag.metrics.metrics_of`). A
    metric the saved rows lack (the run was interrupted under a version that did not record it, and is resumed under
    this one) is NaN for those iterations: not measured, rather than a resume refused."""
    frame = frame[frame.iteration < iterations].sort_values(["agent", "iteration"])
    blank = np.full(num_agents * iterations, np.nan)
    return {name: (frame[name].to_numpy() if name in frame else blank).reshape(num_agents, iterations)
            for name in names}


def _atomic_write(path: str, write) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        write(tmp)
        os.replace(tmp, path)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise RunDirError(f"cannot write {path}: {err.strerror or _first_line(err)}") from None


def _json_default(x):
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, tuple):
        return list(x)
    raise TypeError(type(x))


def write_metrics(path: str, frame) -> None:
    os.makedirs(path, exist_ok=True)
    _atomic_write(os.path.join(path, METRICS_FILE), lambda tmp: frame.to_parquet(tmp, index=False))


def write_json(path: str, record: dict) -> None:
    """``record`` as JSON at ``path``, written whole and renamed into place."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)

    def write(tmp):
        with open(tmp, "w") as f:
            json.dump(record, f, indent=2, default=_json_default)

    _atomic_write(path, write)


def write_manifest(path: str, manifest: dict) -> None:
    write_json(os.path.join(path, MANIFEST), manifest)


def read_metrics(path: str):
    """The metrics table of the run directory ``path`` as written (None when there is none); a damaged file
    is named with what to do."""
    import pandas as pd

    metrics_path = os.path.join(path, METRICS_FILE)
    if not os.path.exists(metrics_path):
        return None
    try:
        return pd.read_parquet(metrics_path)
    except Exception as err:  # pyarrow's errors have no common base worth naming
        raise RunDirError(f"{metrics_path} cannot be read ({_first_line(err)}): the file is damaged; "
                          f"`pgdiag rerun {path} --out NEW` trains the run again to the same numbers") from None


def covered_iterations(frame, num_agents: int) -> int:
    """How many iterations from the first the table ``frame`` holds for every one of ``num_agents`` agents."""
    if frame is None or not len(frame):
        return 0
    counts = frame.iteration.value_counts()
    done = 0
    while counts.get(done, 0) == num_agents:
        done += 1
    return done


def is_training(manifest: dict) -> bool:
    """Whether ``manifest`` is a training run's (a sweep's or a train's), not a diagnostic study's or another."""
    return isinstance(manifest, dict) and {"base_config", "grid_points", "agents"} <= set(manifest)


def load_run(path: str) -> RunResult:
    """Load a run directory written by [`pgdiag.sweep`][pgdiag.run.execute.sweep].

    Args:
        path: the run directory.

    Returns:
        The run: its manifest, its metrics and its path.
    """
    path = os.fspath(path)
    manifest = read_manifest(path)
    if not is_training(manifest):
        what = f"a {manifest['kind']!r} diagnostic study's" if "kind" in manifest else "not a training run's"
        raise RunDirError(f"{path!r} is not a training run directory: its {MANIFEST} is {what}; give a directory "
                          f"that a sweep or train wrote")
    metrics = read_metrics(path)
    if metrics is not None:
        metrics = metrics[metrics.iteration < manifest.get("iterations_done", len(metrics))].reset_index(drop=True)
    else:
        metrics = metrics_frame(plan_from_manifest(manifest), {})
    return RunResult(manifest=manifest, metrics=metrics, path=path)
