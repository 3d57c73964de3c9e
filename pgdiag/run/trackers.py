"""Live experiment tracking: loggers that send a run's metrics to TensorBoard, MLflow or Weights & Biases as it
trains, once per chunk on the host ([`pgdiag.run.callbacks`][pgdiag.run.callbacks]).

    pgdiag.sweep(config, seeds=5, out="runs/x", loggers=["tensorboard", "mlflow"])
    pgdiag sweep ... --log tensorboard,mlflow

Each agent is one run of the tracker, named by its index, grid point and seed and grouped by the run's label,
with its configuration as parameters; every finite metric of each iteration is logged at step = iteration.

* ``"tensorboard"``: event files under ``RUN_DIR/tensorboard`` (the layout `pgdiag export` writes), appended
  after every chunk; needs nothing installed.
* ``"mlflow"``: the tracking URI MLflow is set to (``MLFLOW_TRACKING_URI``; ``MLflowLogger(tracking_uri=...)``),
  experiment ``pgdiag`` (``pip install 'pgdiag-rl[mlflow]'``).
* ``"wandb"``: project ``pgdiag`` in the mode W&B is set to (``WANDB_MODE``; ``WandbLogger(mode="offline")``),
  its files under the run directory (``pip install 'pgdiag-rl[wandb]'``).
"""

from __future__ import annotations

import os
import time

import numpy as np

from pgdiag.config import ConfigError
from pgdiag.run.callbacks import Callback, Event, Function


def _agent_rows(event: Event):
    """(agent, its name, its rows) of the event's rows, agents in order."""
    from pgdiag.run.tensorboard import _agent_dirname, agent_names

    names = agent_names(event.manifest)
    for agent, part in event.rows.groupby("agent", sort=True):
        yield int(agent), _agent_dirname(part.iloc[0], names), part


def _metrics(event: Event) -> list:
    return [m for m in event.manifest["metrics"] if m in event.rows.columns]


def _params(event: Event, agent: int) -> dict:
    """An agent's configuration, flat: the run's static settings and knobs with its grid point's, and its seed."""
    base = event.manifest["base_config"]
    row = event.manifest["agents"][agent]
    return {**base.get("static", {}), **base.get("knobs", {}), **row.get("knobs", {}), "seed": row["seed"]}


class TensorBoardLogger(Callback):
    """Event files, one per agent, appended after every chunk (``logdir``: default ``RUN_DIR/tensorboard``)."""

    def __init__(self, logdir: str | None = None):
        self.logdir, self.paths = logdir, {}

    def on_start(self, event: Event) -> None:
        self.logdir = self.logdir or os.path.join(event.run_dir, "tensorboard")

    def on_chunk(self, event: Event) -> None:
        from pgdiag.run.tensorboard import agent_names, event_path, record, scalar_records, version_event

        wall, names = time.time(), agent_names(event.manifest)
        for agent, part in event.rows.groupby("agent", sort=True):
            path = self.paths.get(int(agent))
            if path is None:
                path = self.paths[int(agent)] = event_path(self.logdir, part.iloc[0], names, wall)
                with open(path, "wb") as f:
                    f.write(record(version_event(wall)))
            with open(path, "ab") as f:
                f.write(scalar_records(part, _metrics(event), wall))


class MLflowLogger(Callback):
    """One MLflow run per agent in ``experiment``, at ``tracking_uri`` (default: MLflow's own setting)."""

    def __init__(self, tracking_uri: str | None = None, experiment: str = "pgdiag"):
        self.tracking_uri, self.experiment, self.runs = tracking_uri, experiment, {}

    def on_start(self, event: Event) -> None:
        from mlflow.tracking import MlflowClient

        try:
            self.client = MlflowClient(tracking_uri=self.tracking_uri)
            found = self.client.get_experiment_by_name(self.experiment)
            self.experiment_id = found.experiment_id if found else self.client.create_experiment(self.experiment)
        except Exception as err:   # the one line the run prints: what failed and how to fix it
            uri = self.tracking_uri or "MLflow's default store"
            fix = ("install SQLAlchemy and Alembic for MLflow's SQLite store (pip install 'pgdiag-rl[mlflow]')"
                   if "sqlite" in str(err).lower() or isinstance(err, ImportError) else
                   "check the tracking URI (MLFLOW_TRACKING_URI or MLflowLogger(tracking_uri=...))")
            raise RuntimeError(f"cannot open {uri}: {type(err).__name__}; {fix}") from None

    def on_chunk(self, event: Event) -> None:
        from mlflow.entities import Metric, Param

        for agent, name, part in _agent_rows(event):
            if agent not in self.runs:
                run = self.client.create_run(self.experiment_id, run_name=f"{event.label}/{name}",
                                             tags={"pgdiag.run_dir": str(event.run_dir), "pgdiag.label": event.label})
                self.runs[agent] = run.info.run_id
                self.client.log_batch(self.runs[agent], params=[
                    Param(k, str(v)[:500]) for k, v in _params(event, agent).items()])
            now = int(time.time() * 1000)
            metrics = [Metric(m, float(v), now, int(it)) for it, row in zip(part.iteration, part[_metrics(event)].
                       itertuples(index=False)) for m, v in zip(_metrics(event), row) if np.isfinite(v)]
            for i in range(0, len(metrics), 1000):   # MLflow takes at most 1,000 metrics a batch
                self.client.log_batch(self.runs[agent], metrics=metrics[i:i + 1000])

    def on_end(self, event: Event) -> None:
        status = {"complete": "FINISHED", "failed": "FAILED"}.get(event.status, "KILLED")
        for run_id in self.runs.values():
            self.client.set_terminated(run_id, status=status)


class WandbLogger(Callback):
    """One W&B run per agent in ``project``, grouped by the run's label; ``mode``: "online", "offline" or None
    (W&B's own setting, ``WANDB_MODE``)."""

    def __init__(self, project: str = "pgdiag", mode: str | None = None, dir: str | None = None):
        self.project, self.mode, self.dir, self.runs = project, mode, dir, {}

    def on_chunk(self, event: Event) -> None:
        import wandb

        where = self.dir or event.run_dir
        if not self.runs:
            _say_fallback(where)
        for agent, name, part in _agent_rows(event):
            if agent not in self.runs:
                self.runs[agent] = wandb.init(project=self.project, group=event.label, name=name,
                                              config=_params(event, agent), mode=self.mode,
                                              dir=where, reinit="create_new")
            for it, row in zip(part.iteration, part[_metrics(event)].to_dict("records")):
                self.runs[agent].log({k: v for k, v in row.items() if np.isfinite(v)}, step=int(it))

    def on_end(self, event: Event) -> None:
        for run in self.runs.values():
            run.finish(exit_code=0 if event.status == "complete" else 1)


def _say_fallback(where: str) -> None:
    """W&B writes into the system's temporary directory, silently, when its ``dir`` cannot be written: said once."""
    import sys
    import tempfile

    probe = where
    while probe and not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.access(probe or ".", os.W_OK):
        sys.stderr.write(f"wandb: {where!r} cannot be written; W&B keeps this run's files under "
                         f"{tempfile.gettempdir()!r} instead (give WandbLogger(dir=...) a writable directory)\n")


#: the loggers by name (``--log NAME,...``, ``loggers=[...]``) and the package each needs
LOGGERS = {"tensorboard": (TensorBoardLogger, None), "mlflow": (MLflowLogger, "mlflow"),
           "wandb": (WandbLogger, "wandb")}


def make(loggers, run_dir: str | None = None) -> list:
    """Logger objects from names (or objects, kept): an unknown name, a missing package, or TensorBoard's files
    with no run directory to hold them, refused in one line before anything compiles."""
    import importlib.util

    if isinstance(loggers, str):
        loggers = [x for x in loggers.split(",") if x]
    out = []
    for item in loggers or ():
        if isinstance(item, Callback):
            out.append(item)
            continue
        if item not in LOGGERS:
            raise ConfigError(f"unknown logger {item!r}; loggers are {', '.join(LOGGERS)}")
        cls, package = LOGGERS[item]
        if package and importlib.util.find_spec(package) is None:
            raise ConfigError(f"the {item} logger needs the {package} package, which is not installed: pip install "
                              f"'pgdiag-rl[{item}]'")
        out.append(cls())
    for logger in out:
        if isinstance(logger, TensorBoardLogger) and logger.logdir is None and run_dir is None:
            raise ConfigError("the tensorboard logger writes under the run directory: give out=... (--out), or "
                              "TensorBoardLogger(logdir=...)")
    return out


def as_callbacks(callbacks=None, loggers=None, run_dir: str | None = None) -> list:
    """Callbacks from ``callbacks`` (Callback objects or functions of an Event, called per chunk) and
    ``loggers`` (names of [`pgdiag.run.trackers.LOGGERS`][pgdiag.run.trackers.LOGGERS] or logger objects),
    checked before anything compiles (``run_dir``: where the run writes, None for none)."""
    out = []
    for c in callbacks or ():
        if isinstance(c, Callback):
            out.append(c)
        elif callable(c):
            out.append(Function(c))
        else:
            raise TypeError(f"callbacks: expected a pgdiag.Callback or a function of an Event, got "
                            f"{type(c).__name__}")
    return out + make(loggers, run_dir)


__all__ = ["LOGGERS", "MLflowLogger", "TensorBoardLogger", "WandbLogger", "as_callbacks", "make"]
